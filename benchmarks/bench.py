"""`mt-bench`'s work: one checkpoint, several engines, the same sentences, figures side by side.

Steps: read the test sets; build what the engines need into a work dir (an ONNX bundle with an
int8 variant via `mtkit.export.export_bundle`, CTranslate2 fp32 and int8 models via
`ct2_convert.py`; reused while newer than the checkpoint); run each engine in a fresh process
(`worker.py`) for latency, throughput, outputs and peak RSS; time a cold start (a fresh process
translating one sentence); score BLEU; compute ratios against the CTranslate2 engine of the same
device and precision; write results.json, results.md and results.png (`report.py`).

Nothing here is part of the runtime: it imports torch (export, conversion) and ctranslate2.
"""

from __future__ import annotations

import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import numpy as np

from mtkit.runtime.decode_options import DecodeOptions

from .engines import CPU_ENGINES, ENGINES, GPU_ENGINES, EngineSpec

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SCHEMA_VERSION = 1

# Test sets: name -> file prefix under the data dir; files are `{prefix}.{lang}.gz` (or plain text).
DATASETS = {"tatoeba-dev": "tatoeba/dev", "newstest2013": "news/newstest2013"}


class BenchError(Exception):
    """A benchmark that cannot run (bad arguments, missing data); the message says what to fix."""


@dataclass
class BenchConfig:
    checkpoint: Path
    out_dir: Path | None = None               # default: benchmarks/results/<machine>/
    work_dir: Path | None = None              # default: <checkpoint-stem>-bench next to the checkpoint
    data_dir: Path | None = None              # default: mtkit.runtime.data_dir.default_data_dir()
    datasets: list[str] = field(default_factory=lambda: list(DATASETS))
    src_lang: str = "de"
    tgt_lang: str = "en"
    limit: int = 200                          # sentences per test set (0 = all)
    threads: int = 2
    reps: int = 3
    warmup: int = 3
    beam_size: int = DecodeOptions.beam_size
    batch_size: int = 32
    cold_reps: int = 3
    engines: list[str] | None = None          # default: the CPU engines, plus the GPU ones with CUDA
    bundle: Path | None = None                # reuse an exported bundle (must have an int8 variant for ort-int8)
    ct2_dir: Path | None = None               # reuse conversions: a dir with float32/ and int8/
    rebuild: bool = False
    timeout: float = 3600.0                   # seconds per engine process
    machine_name: str | None = None


# ----- machine ------------------------------------------------------------------------------------

def _cpuinfo() -> tuple[str, int]:
    """CPU model name and number of physical cores, from /proc/cpuinfo."""
    model, cores = platform.processor() or platform.machine(), set()
    physical = core = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = (part.strip() for part in line.partition(":"))
            if key == "model name":
                model = value
            elif key == "physical id":
                physical = value
            elif key == "core id":
                core = value
                cores.add((physical, core))
    except OSError:
        pass
    return model, len(cores) or (os.cpu_count() or 1)


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict:
    model, physical = _cpuinfo()
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return {
        "cpu": model,
        "physical_cores": physical,
        "logical_cpus": os.cpu_count(),
        "available_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "memory_gib": mem_gib,
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "python": platform.python_version(),
        "versions": {p: _version(p) for p in ("onnxruntime", "onnxruntime-gpu", "ctranslate2", "torch", "numpy",
                                              "sentencepiece", "sacrebleu", "mtkit")},
    }


def machine_slug(info: dict) -> str:
    """A directory name for the machine: its CPU model and CPU count, e.g. intel-xeon-processor-2cpu."""
    name = re.sub(r"\((r|tm)\)|\bcpu\b|@.*$", " ", info["cpu"].lower())
    name = re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "unknown-cpu"
    return f"{name}-{info['logical_cpus']}cpu"


# ----- data ---------------------------------------------------------------------------------------

def load_dataset(data_dir: Path | None, name: str, src: str, tgt: str, limit: int) -> dict:
    from mtkit.runtime.data_dir import corpus_file
    from mtkit.train.data import DataError, read_parallel

    if name not in DATASETS:
        raise BenchError(f"unknown test set {name!r} (known: {', '.join(DATASETS)})")
    try:
        paths = [corpus_file(data_dir, DATASETS[name], lang) for lang in (src, tgt)]
    except FileNotFoundError as e:
        raise BenchError(f"test set {name!r}: {e}") from None
    prefix = Path(data_dir) / DATASETS[name]
    try:
        pairs = [(s, t) for s, t in read_parallel(*paths) if s.strip() and t.strip()]
    except DataError as e:
        raise BenchError(str(e)) from None
    if limit:
        pairs = pairs[:limit]
    if not pairs:
        raise BenchError(f"{paths[0]}: no sentence pairs")
    return {"name": name, "path": str(prefix), "src_lang": src, "tgt_lang": tgt,
            "sources": [s for s, _ in pairs], "refs": [t for _, t in pairs]}


# ----- artifacts ----------------------------------------------------------------------------------

def _fresh(path: Path, checkpoint: Path) -> bool:
    return path.exists() and path.stat().st_mtime >= checkpoint.stat().st_mtime


def gpu_reasons() -> dict[str, str | None]:
    """Why each GPU engine cannot run here (None = it can)."""
    try:
        import ctranslate2
        ct2_gpus = ctranslate2.get_cuda_device_count()
    except Exception:  # a CPU-only build may raise instead of returning 0
        ct2_gpus = 0
    import onnxruntime as ort
    import torch

    reasons = {}
    for spec in GPU_ENGINES:
        if spec.kind == "torch":
            reasons[spec.name] = None if torch.cuda.is_available() else "torch sees no CUDA device"
        elif spec.kind == "ct2":
            reasons[spec.name] = None if ct2_gpus else "CTranslate2 sees no CUDA device"
        else:
            reasons[spec.name] = None if "CUDAExecutionProvider" in ort.get_available_providers() else \
                "this onnxruntime has no CUDAExecutionProvider (the gpu extra installs onnxruntime-gpu)"
    return reasons


def prepare(cfg: BenchConfig, engines: list[EngineSpec], work: Path, log) -> tuple[dict, dict[str, str]]:
    """Build or reuse the bundle and CT2 models that `engines` need. Returns the artifact paths and,
    for engines that cannot run, why."""
    artifacts: dict = {"checkpoint": str(cfg.checkpoint)}
    skip: dict[str, str] = {}
    kinds = {e.kind for e in engines}

    if "ort" in kinds:
        want_fp16 = any(e.kind == "ort" and e.precision == "fp16" for e in engines)
        try:
            artifacts["bundle"] = str(_bundle(cfg, work / "bundle", want_fp16, log))
        except Exception as e:  # export is another package: any failure skips the ORT engines, with why
            for spec in engines:
                if spec.kind == "ort":
                    skip[spec.name] = f"no bundle: {type(e).__name__}: {e}"
        else:
            from mtkit.runtime.bundle_format import BundleConfig

            variants = BundleConfig.load(Path(artifacts["bundle"])).variants
            for spec in engines:
                if spec.kind == "ort" and spec.precision not in variants:
                    skip[spec.name] = f"the bundle has no {spec.precision} variant"

    if "ct2" in kinds:
        from .ct2_convert import convert_checkpoint

        root = Path(cfg.ct2_dir) if cfg.ct2_dir else work / "ct2"
        for key, quantization in (("ct2_fp32", "float32"), ("ct2_int8", "int8")):
            path = root / quantization
            if cfg.ct2_dir:
                if not (path / "model.bin").is_file():
                    raise BenchError(f"{path}: no CTranslate2 model (--ct2-dir wants float32/ and int8/ "
                                     "as written by mt-bench or python -m mtkit.benchmarks.ct2_convert)")
            elif cfg.rebuild or not _fresh(path / "model.bin", cfg.checkpoint):
                log(f"converting to CTranslate2 {quantization}")
                convert_checkpoint(cfg.checkpoint, path, quantization)
            artifacts[key] = str(path)
    return artifacts, skip


def _bundle(cfg: BenchConfig, path: Path, want_fp16: bool, log) -> Path:
    from mtkit.runtime.bundle_format import BundleConfig

    if cfg.bundle:
        BundleConfig.load(Path(cfg.bundle))     # a clear BundleError if it is not one
        return Path(cfg.bundle)
    if not cfg.rebuild and _fresh(path / "config.json", cfg.checkpoint):
        variants = BundleConfig.load(path).variants
        if "int8" in variants and ("fp16" in variants or not want_fp16):
            return path
    from mtkit.export.api import export_bundle

    log("exporting the ONNX bundle (fp32 + int8" + (" + fp16)" if want_fp16 else ")"))
    export_bundle(cfg.checkpoint, path, quantize="int8", fp16=want_fp16, force=True)
    return path


def model_size(spec: EngineSpec, artifacts: dict) -> tuple[int, str]:
    """Bytes of the weights each engine loads, and what was counted (tokenizer excluded everywhere)."""
    if spec.kind == "torch":
        import torch

        state = torch.load(artifacts["checkpoint"], map_location="cpu", weights_only=True)["model"]
        storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in state.values()}
        dtypes = "/".join(sorted({str(t.dtype).removeprefix("torch.") for t in state.values() if t.is_floating_point()}))
        return sum(storages.values()), f"{dtypes} state dict of the checkpoint (tied weights once; run in float32)"
    if spec.kind == "ort":
        from mtkit.runtime import bundle_format as bf

        directory = Path(artifacts["bundle"])
        entry = bf.BundleConfig.load(directory).variants[spec.precision]
        counted = [directory / name for name in (*bf.variant_graphs(spec.precision, entry), *bf.variant_data(entry))]
        return sum(p.stat().st_size for p in counted), " + ".join(sorted(p.name for p in counted))
    path = Path(artifacts["ct2_int8" if spec.precision == "int8" else "ct2_fp32"]) / "model.bin"
    return path.stat().st_size, f"{path.parent.name}/model.bin"


# ----- running ------------------------------------------------------------------------------------

def _env(threads: int) -> dict:
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
    cmd = [sys.executable, "-m", "mtkit.benchmarks.worker", str(job_path), str(result_path)]
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
    highest peak RSS, the last round's outputs."""
    last = rounds[-1]
    pooled = lambda name, key: [x for r in rounds for x in r["datasets"][name][key]]   # noqa: E731
    return {**last, "load_s": statistics.median(r["load_s"] for r in rounds),
            "peak_rss_kb": max(r["peak_rss_kb"] for r in rounds),
            "ru_maxrss_kb": max(r["ru_maxrss_kb"] for r in rounds),
            "datasets": {name: {**ds, "latency_s": pooled(name, "latency_s"),
                                "throughput_runs": pooled(name, "throughput_runs")}
                         for name, ds in last["datasets"].items()}}


def cold_start_command(spec: EngineSpec, artifacts: dict, cfg: BenchConfig, text: str) -> list[str] | None:
    """A fresh process that loads the model and translates `text` (beam 4, as the CLIs do by default)."""
    if spec.kind == "ort":
        exe = Path(sys.executable).parent / "mt-translate"
        prefix = [str(exe)] if exe.is_file() else [sys.executable, "-m", "mtkit.runtime.cli"]
        return prefix + ["-m", artifacts["bundle"], "--to", cfg.tgt_lang, "--variant", spec.precision,
                         "--provider", spec.device, "--threads", str(cfg.threads), "--beam-size",
                         str(cfg.beam_size), "-q", text]
    if spec.kind == "ct2":
        compute = {"fp32": "float32", "int8": "int8", "fp16": "float16"}[spec.precision]
        model = artifacts["ct2_int8" if spec.precision == "int8" else "ct2_fp32"]
        return [sys.executable, "-m", "mtkit.benchmarks.ct2_run", model, "--to", cfg.tgt_lang,
                "--compute-type", compute, "--device", spec.device, "--threads", str(cfg.threads),
                "--beam-size", str(cfg.beam_size), text]
    return None      # the PyTorch engines are the training-side reference: no product to start


def cold_starts(commands: dict[str, list[str]], cfg: BenchConfig) -> dict[str, dict]:
    """Time each engine's fresh process `cfg.cold_reps` times, in rounds that run every engine once
    (so a slow minute of a shared machine hits all engines alike). An untimed first round fills the
    file cache and the runtime's cache of optimized graphs, as any earlier use would have."""
    results = {name: {"runs": []} for name in commands}
    for round_ in range(max(cfg.cold_reps, 1) + 1):
        for name, cmd in commands.items():
            if "error" in results[name]:
                continue
            start = time.perf_counter()
            try:
                proc = subprocess.run(cmd, env=_env(cfg.threads), capture_output=True, text=True, timeout=600)
            except subprocess.TimeoutExpired:
                results[name] = {"error": "took over 600 s"}
                continue
            seconds = time.perf_counter() - start
            if proc.returncode != 0:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-2:]
                results[name] = {"error": f"exit status {proc.returncode}: {' | '.join(tail)}", "command": cmd}
            elif round_:
                results[name]["runs"].append(seconds)
                results[name]["output"] = proc.stdout.strip()[:200]
    for result in results.values():
        if "error" not in result:
            result["seconds"] = statistics.median(result["runs"])
    return results


# ----- figures ------------------------------------------------------------------------------------

def summarize_dataset(raw: dict, refs: list[str]) -> dict:
    import sacrebleu

    latency_ms = np.asarray(raw["latency_s"]) * 1000.0
    runs = raw["throughput_runs"]
    graph = [r["graph_seconds"] / r["seconds"] for r in runs if "graph_seconds" in r]
    return {
        # Share of beam time inside the ONNX graphs (ORT engines): the rest is the Python search loop.
        "graph_time_share": statistics.median(graph) if graph else None,
        "latency_ms": {"p50": float(np.percentile(latency_ms, 50)), "p95": float(np.percentile(latency_ms, 95)),
                       "mean": float(latency_ms.mean()), "samples": int(latency_ms.size)},
        "throughput_tokens_per_s": statistics.median(r["tokens_per_s"] for r in runs),
        "throughput_sentences_per_s": statistics.median(r["sentences"] / r["seconds"] for r in runs),
        "throughput_runs": runs,
        "bleu_greedy": sacrebleu.corpus_bleu(raw["greedy_outputs"], [refs]).score,
        "bleu_beam": sacrebleu.corpus_bleu(raw["beam_outputs"], [refs]).score,
    }


def add_ratios(engines: dict, outputs: dict) -> None:
    """Ratios against the CT2 engine of the same device and precision, from this same run."""
    for name, entry in engines.items():
        ref_name = ENGINES[name].reference
        ref = engines.get(ref_name)
        if entry["status"] != "ok" or not ref or ref["status"] != "ok":
            continue
        entry["ratios"] = {"reference": ref_name}
        for ds, figures in entry["datasets"].items():
            theirs = ref["datasets"][ds]
            same = [a == b for a, b in zip(outputs[name][ds]["greedy"], outputs[ref_name][ds]["greedy"])]
            entry["ratios"][ds] = {
                "latency_p50": figures["latency_ms"]["p50"] / theirs["latency_ms"]["p50"],
                "throughput": figures["throughput_tokens_per_s"] / theirs["throughput_tokens_per_s"],
                "same_greedy_output": sum(same) / len(same),
            }


def select_engines(cfg: BenchConfig) -> tuple[list[EngineSpec], dict[str, str], dict]:
    """The engines to run, the ones skipped with why, and the GPU section's status."""
    reasons = gpu_reasons()
    usable_gpu = [n for n, why in reasons.items() if why is None]
    gpu = {"available": bool(usable_gpu),
           "note": "CUDA found: GPU engines run" if usable_gpu else
           "no CUDA device on this machine: GPU section skipped (" + "; ".join(sorted(set(reasons.values()))) + ")"}
    chosen = [ENGINES[n] for n in cfg.engines] if cfg.engines else CPU_ENGINES + GPU_ENGINES
    skip = {e.name: reasons[e.name] for e in chosen if e.device == "cuda" and reasons[e.name]}
    return chosen, skip, gpu


def run_benchmark(cfg: BenchConfig, log=print) -> tuple[dict, Path]:
    """Run everything; write results.json/.md/.png; return the results and the output directory."""
    from mtkit.runtime.data_dir import default_data_dir
    from mtkit.train.checkpoint import CheckpointError, load_checkpoint

    from . import report

    cfg.checkpoint = Path(cfg.checkpoint)
    unknown = [n for n in cfg.engines or [] if n not in ENGINES]
    if unknown:
        raise BenchError(f"unknown engine(s) {', '.join(unknown)} (known: {', '.join(ENGINES)})")
    for name, value in (("threads", cfg.threads), ("reps", cfg.reps), ("beam_size", cfg.beam_size),
                        ("batch_size", cfg.batch_size)):
        if value < 1:
            raise BenchError(f"{name} must be at least 1, not {value}")
    try:
        ckpt = load_checkpoint(cfg.checkpoint)
    except CheckpointError as e:
        raise BenchError(str(e)) from None
    tags = ckpt.get("language_tags", {})
    if cfg.tgt_lang not in tags:
        raise BenchError(f"{cfg.checkpoint}: the model cannot translate into {cfg.tgt_lang!r} "
                         f"(its target languages: {', '.join(tags)})")
    del ckpt
    data_dir = Path(cfg.data_dir) if cfg.data_dir else default_data_dir()       # None: load_dataset says what to do
    datasets = [load_dataset(data_dir, name, cfg.src_lang, cfg.tgt_lang, cfg.limit) for name in cfg.datasets]

    machine = machine_info()
    out_dir = Path(cfg.out_dir) if cfg.out_dir else RESULTS_DIR / (cfg.machine_name or machine_slug(machine))
    work = Path(cfg.work_dir) if cfg.work_dir else cfg.checkpoint.with_name(f"{cfg.checkpoint.stem}-bench")
    work.mkdir(parents=True, exist_ok=True)

    chosen, skip, gpu = select_engines(cfg)
    runnable = [e for e in chosen if e.name not in skip]
    artifacts, more_skips = prepare(cfg, runnable, work, log)
    skip.update(more_skips)

    engines: dict[str, dict] = {}
    outputs: dict[str, dict] = {}
    cold_text = datasets[0]["sources"][0]
    cold_commands: dict[str, list[str]] = {}
    for spec in chosen:
        if spec.name in skip:
            log(f"{spec.name}: skipped ({skip[spec.name]})")
    measured = run_rounds([s for s in chosen if s.name not in skip], artifacts, datasets, cfg, work, log)
    for spec in chosen:
        entry = {"label": spec.label, "kind": spec.kind, "device": spec.device, "precision": spec.precision,
                 "reference": spec.reference}
        engines[spec.name] = entry
        if spec.name in skip:
            entry.update(status="skipped", note=skip[spec.name])
            continue
        raw = measured[spec.name]
        if "error" in raw:
            entry.update(status="failed", note=raw["error"])
            continue
        size, counted = model_size(spec, artifacts)
        entry.update(status="ok", impl=raw.get("impl", ""), load_s=raw["load_s"],
                     peak_rss_mb=raw["peak_rss_kb"] / 1024, ru_maxrss_mb=raw["ru_maxrss_kb"] / 1024,
                     imported_torch=raw["imported_torch"],
                     model_size_mb=size / 2**20, model_size_counted=counted,
                     datasets={d["name"]: summarize_dataset(raw["datasets"][d["name"]], d["refs"]) for d in datasets})
        outputs[spec.name] = {}
        for d in datasets:
            r = raw["datasets"][d["name"]]
            outputs[spec.name][d["name"]] = {"greedy": r["greedy_outputs"], "beam": r["beam_outputs"]}
            out_txt = work / "outputs"
            out_txt.mkdir(exist_ok=True)
            for mode in ("greedy", "beam"):
                (out_txt / f"{spec.name}.{d['name']}.{mode}.txt").write_text(
                    "\n".join(r[f"{mode}_outputs"]) + "\n", encoding="utf-8")
        cmd = cold_start_command(spec, artifacts, cfg, cold_text)
        if cmd:
            cold_commands[spec.name] = cmd
        else:
            entry["cold_start"] = {"note": "not measured for the PyTorch reference"}
    if cold_commands:
        log(f"cold starts: {len(cold_commands)} engines x {cfg.cold_reps} fresh processes, in rounds")
        for name, result in cold_starts(cold_commands, cfg).items():
            engines[name]["cold_start"] = result
    add_ratios(engines, outputs)

    results = {
        "schema_version": SCHEMA_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "checkpoint": str(cfg.checkpoint),
        "work_dir": str(work),
        "machine": machine,
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()
                     if k in ("threads", "reps", "warmup", "beam_size", "batch_size", "cold_reps", "limit",
                              "src_lang", "tgt_lang")},
        "datasets": {d["name"]: {"path": d["path"], "sentences": len(d["sources"])} for d in datasets},
        "gpu": gpu,
        "engines": engines,
    }
    report.write_all(results, out_dir)
    return results, out_dir
