"""Cold start with AVX2 kernels, estimated on a CPU with AVX-512. gdb's own cost (0.3-0.8 s a
process) hides the kernels' effect, so each engine's fresh process runs three ways in alternating
rounds: natively, under `avx2-only --trace-only` (the same gdb work, nothing hidden) and under
`avx2-only`. The estimate is native + (masked - trace-only), medians of each.

    python devtools/avx2_cold_start.py BUNDLE CT2_INT8_DIR [--rounds 30] [-o result.json]
    python devtools/avx2_cold_start.py --pool series1.json series2.json [-o pooled.json]

BUNDLE and CT2_INT8_DIR are the ones mt-bench built in its work dir (bundle/, ct2/int8/). `--pool`
joins the rounds of earlier series instead of measuring. Either way it prints the ratios with a 95%
interval from resampling whole rounds (bootstrap), since the estimate is a difference of noisy medians.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import time
from pathlib import Path

from mtkit.benchmarks.bench import BenchConfig
from mtkit.benchmarks.engines import CPU_ENGINES
from mtkit.benchmarks.runner import cold_start_command

AVX2_ONLY = str(Path(__file__).resolve().parent / "avx2-only")
TEXT = "Ich habe heute keine Zeit."
LAUNCHERS = {"native": [], "trace-only": [AVX2_ONLY, "--trace-only"], "avx2": [AVX2_ONLY]}
ENGINES = ("ours int8", "ct2 int8")     # ours first: ratios are ours / theirs


def commands(bundle: str, ct2_dir: str, threads: int) -> dict[str, list[str]]:
    """mt-bench's own cold-start commands for ours and CT2 int8 (beam 4, de -> en)."""
    cfg = BenchConfig(checkpoint=Path(bundle), threads=threads)
    artifacts = {"bundle": bundle, "ct2_int8": ct2_dir}
    specs = {spec.name: spec for spec in CPU_ENGINES}
    return {label: cold_start_command(specs[name], artifacts, cfg, TEXT)
            for label, name in zip(ENGINES, ("ort-int8", "ct2-int8"))}


def measure(bundle: str, ct2_dir: str, threads: int, rounds: int) -> dict[str, list[float]]:
    """Seconds of every fresh process, by "engine | launcher", in alternating rounds."""
    engines = commands(bundle, ct2_dir, threads)
    for cmd in engines.values():          # prime: file cache, optimized graphs, objdump's cache of cpuid sites
        for launcher in LAUNCHERS.values():
            subprocess.run(launcher + cmd, capture_output=True, check=True)
    runs = {f"{e} | {l}": [] for e in engines for l in LAUNCHERS}
    for _ in range(rounds):
        for engine, cmd in engines.items():
            for launcher, prefix in LAUNCHERS.items():
                start = time.perf_counter()
                subprocess.run(prefix + cmd, capture_output=True, check=True)
                runs[f"{engine} | {launcher}"].append(time.perf_counter() - start)
    return runs


def rounds(runs: dict[str, list[float]]) -> int:
    """Complete rounds: every engine and launcher has that many processes."""
    return min(len(v) for v in runs.values())


def summarise(runs: dict[str, list[float]]) -> tuple[dict, dict]:
    """Each engine's medians with the AVX2 estimate, and ours / CT2 int8 natively and estimated."""
    medians = {}
    for engine in ENGINES:
        m = {launcher: statistics.median(runs[f"{engine} | {launcher}"]) for launcher in LAUNCHERS}
        m["avx2 estimate"] = m["native"] + m["avx2"] - m["trace-only"]
        medians[engine] = m
    ours, theirs = (medians[e] for e in ENGINES)
    return medians, {k: ours[k] / theirs[k] for k in ("native", "avx2 estimate")}


def interval(runs: dict[str, list[float]], resamples: int = 2000, seed: int = 0) -> dict[str, list[float]]:
    """95% bootstrap intervals of the two ratios, resampling whole rounds (a round holds one process
    of each engine and launcher, so what a round shares stays together)."""
    rng = random.Random(seed)
    n = rounds(runs)
    samples: dict[str, list[float]] = {"native": [], "avx2 estimate": []}
    for _ in range(resamples):
        pick = [rng.randrange(n) for _ in range(n)]
        for k, v in summarise({name: [times[i] for i in pick] for name, times in runs.items()})[1].items():
            samples[k].append(v)
    cuts = {k: statistics.quantiles(v, n=40) for k, v in samples.items()}      # 2.5% steps
    return {k: [c[0], c[-1]] for k, c in cuts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", nargs="?")
    parser.add_argument("ct2_dir", nargs="?")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--pool", nargs="+", type=Path, metavar="JSON", help="join earlier series instead of measuring")
    parser.add_argument("-o", "--output", type=Path)
    args = parser.parse_args()
    if args.pool:
        series = [json.loads(path.read_text()) for path in args.pool]
        runs = {name: [t for one in series for t in one["runs_s"][name]] for name in series[0]["runs_s"]}
    elif args.bundle and args.ct2_dir:
        runs = measure(args.bundle, args.ct2_dir, args.threads, args.rounds)
    else:
        parser.error("give BUNDLE and CT2_INT8_DIR, or --pool")
    medians, ratios = summarise(runs)
    bounds = interval(runs)
    for engine, m in medians.items():
        print(f"{engine}: " + ", ".join(f"{k} {1000 * v:.1f} ms" for k, v in m.items()))
    print("ours / CT2 int8: " + ", ".join(f"{k} {v:.3f}x (95%: {bounds[k][0]:.3f}-{bounds[k][1]:.3f})"
                                          for k, v in ratios.items()))
    if args.output:
        args.output.write_text(json.dumps({"rounds": rounds(runs), "threads": args.threads,
                                           "medians_s": medians, "ratios": ratios, "ratios_95": bounds,
                                           "runs_s": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
