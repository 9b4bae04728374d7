"""Running engines in fresh processes: `worker.py` per engine and round (latency, throughput,
outputs, peak RSS), merged over rounds; and cold starts (a fresh process translating one sentence)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .engines import EngineSpec

if TYPE_CHECKING:
    from .bench import BenchConfig


def _env(threads: int) -> dict:
    """The workers' environment: every library's thread pool capped at the engine's threads. The
    cold-start commands run in the caller's own environment instead: each CLI is given its threads
    on its command line, as a user runs it, and keeps its own defaults (mt-translate keeps numpy's
    unused OpenBLAS pool to one thread, which a cap of two here would override: 8-14 ms of its start
    on the 2-core Zen 5)."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    return env


def run_worker(spec: EngineSpec, artifacts: dict, datasets: list[dict], cfg: BenchConfig, work: Path,
               reps: int) -> dict:
    jobs = work / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    job_path, result_path = jobs / f"{spec.name}.job.json", jobs / f"{spec.name}.result.json"
    result_path.unlink(missing_ok=True)
    job = {"engine": spec.name, "artifacts": artifacts, "threads": cfg.threads, "reps": reps,
           "warmup": cfg.warmup, "beam_size": cfg.beam_size, "batch_size": cfg.batch_size,
           "datasets": [{k: d[k] for k in ("name", "sources", "src_lang", "tgt_lang")} for d in datasets]}
    job_path.write_text(json.dumps(job, ensure_ascii=False), encoding="utf-8")
    cmd = [*cfg.launcher, sys.executable, "-m", "mtkit.benchmarks.worker", str(job_path), str(result_path)]
    try:
        proc = subprocess.run(cmd, env=_env(cfg.threads), capture_output=True, text=True, timeout=cfg.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish within {cfg.timeout:.0f} s (--timeout)"}
    if proc.returncode != 0 or not result_path.is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": f"worker exited with status {proc.returncode}: {' | '.join(tail)}"}
    return json.loads(result_path.read_text(encoding="utf-8"))


def run_rounds(specs: list[EngineSpec], artifacts: dict, datasets: list[dict], cfg: BenchConfig, work: Path,
               log: Callable[[str], None]) -> dict[str, dict]:
    """Every engine's worker once per round, `cfg.reps` rounds, each a fresh process with its
    warm-up and one timed repetition; the rounds' figures are merged per engine. Engines take turns,
    so a slow minute of a shared machine costs one repetition of one engine (the median drops it)
    instead of every repetition of whichever engine was running."""
    rounds: dict[str, list[dict]] = {spec.name: [] for spec in specs}
    for round_ in range(1, cfg.reps + 1):
        for spec in specs:
            done = rounds[spec.name]
            if done and "error" in done[-1]:
                continue
            log(f"[round {round_}/{cfg.reps}] {spec.name}")
            done.append(run_worker(spec, artifacts, datasets, cfg, work, reps=1))
            if "error" in done[-1]:
                log(f"    failed: {done[-1]['error']}")
    return {name: done[-1] if "error" in done[-1] else merge_rounds(done) for name, done in rounds.items()}


def merge_rounds(rounds: list[dict]) -> dict:
    """One engine's worker results of several rounds: timings pooled, the median load time, the
    highest RSS at each stage (imports, loading, peak), the anonymous / file split of the round with that
    peak, the last round's outputs."""
    last, top = rounds[-1], max(rounds, key=lambda r: r["peak_rss_kb"])
    pooled = lambda name, key: [x for r in rounds for x in r["datasets"][name].get(key, [])]   # noqa: E731
    return {**last, "load_s": statistics.median(r["load_s"] for r in rounds),
            "peak_rss_kb": max(r["peak_rss_kb"] for r in rounds),
            **{key: max((r[key] for r in rounds if r.get(key)), default=None)
               for key in ("imported_rss_kb", "loaded_rss_kb")},
            "ru_maxrss_kb": max(r["ru_maxrss_kb"] for r in rounds),
            **{key: top.get(key) for key in ("end_rss_anon_kb", "end_rss_file_kb")},
            "datasets": {name: {**ds, **{key: pooled(name, key)
                                         for key in ("latency_s", "latency_graph_s", "throughput_runs")}}
                         for name, ds in last["datasets"].items()}}


def cold_start_command(spec: EngineSpec, artifacts: dict, cfg: BenchConfig, text: str) -> list[str] | None:
    """A fresh process that loads the model and translates `text` (beam 4, as the CLIs do by default).
    The source language is given, as CT2's runner is told it: no language detection is timed."""
    if spec.kind == "ort":
        exe = Path(sys.executable).parent / "mt-translate"
        prefix = [str(exe)] if exe.is_file() else [sys.executable, "-m", "mtkit.runtime.cli"]
        return [*cfg.launcher, *prefix, "-m", artifacts["bundle"], "--from", cfg.src_lang, "--to", cfg.tgt_lang,
                "--variant", spec.precision, "--provider", spec.device, "--threads", str(cfg.threads),
                "--beam-size", str(cfg.beam_size), "-q", text]
    if spec.kind == "ct2":
        inter, intra = spec.ct2_threads(cfg.threads)
        return [*cfg.launcher, sys.executable, "-m", "mtkit.benchmarks.ct2_run", artifacts[spec.ct2_model],
                "--to", cfg.tgt_lang, "--compute-type", spec.ct2_compute_type, "--device", spec.device,
                "--threads", str(intra), "--replicas", str(inter), "--beam-size", str(cfg.beam_size), text]
    return None      # the PyTorch engines are the training-side reference: no product to start


def prime(commands: dict[str, list[str]], cfg: BenchConfig) -> None:
    """Run each engine's cold-start process once, untimed, before the rounds. The first load after an
    export builds the runtime's optimized-graph cache (about 12 MB more peak RSS in that process, on
    the Zen 5): a one-off per machine that neither the rounds, which report the highest peak of any
    round, nor the cold starts should count. It also fills the file cache for every engine alike.
    Failures show in the rounds.

    It first compiles mtkit's modules to bytecode, as installing a wheel does: in a checkout whose
    `.pyc` files are missing or older than the sources (a fresh clone, PYTHONDONTWRITEBYTECODE) every
    start would compile them again (about 8 ms of ours, less of CT2's runner)."""
    compile_bytecode()
    for cmd in commands.values():
        try:
            subprocess.run(cmd, capture_output=True, timeout=cfg.timeout)
        except subprocess.TimeoutExpired:
            pass


def compile_bytecode() -> None:
    """Bytecode for the mtkit packages the cold-start commands import (the runtime, and the
    benchmarks package that holds CT2's runner)."""
    import compileall
    import importlib.util

    for package in ("mtkit", "mtkit.runtime", "mtkit.benchmarks"):
        for folder in importlib.util.find_spec(package).submodule_search_locations:
            compileall.compile_dir(folder, maxlevels=0, quiet=2)


def cold_starts(commands: dict[str, list[str]], cfg: BenchConfig) -> dict[str, dict]:
    """Time each engine's fresh process `cfg.cold_reps` times, in rounds that run every engine once
    (so a slow minute of a shared machine hits all engines alike). Run after `prime` and the rounds,
    so the file cache and the runtime's cache of optimized graphs are warm, as after any earlier use."""
    results = {name: {"runs": []} for name in commands}
    for _ in range(max(cfg.cold_reps, 1)):
        for name, cmd in commands.items():
            if "error" in results[name]:
                continue
            start = time.perf_counter()
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=cfg.timeout)
            except subprocess.TimeoutExpired:
                results[name] = {"error": f"took over {cfg.timeout:.0f} s (--timeout)"}
                continue
            seconds = time.perf_counter() - start
            if proc.returncode != 0:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-2:]
                results[name] = {"error": f"exit status {proc.returncode}: {' | '.join(tail)}", "command": cmd}
            else:
                results[name]["runs"].append(seconds)
                results[name]["output"] = proc.stdout.strip()[:200]
    for result in results.values():
        if "error" not in result:
            result["seconds"] = statistics.median(result["runs"])
    return results
