"""Cold start with AVX2 kernels, estimated on a CPU with AVX-512. gdb's own cost (0.3-0.8 s a
process) hides the kernels' effect, so each engine's fresh process runs three ways in alternating
rounds: natively, under `avx2-only --trace-only` (the same gdb work, nothing hidden) and under
`avx2-only`. The estimate is native + (masked - trace-only), medians of each.

    python devtools/avx2_cold_start.py BUNDLE CT2_INT8_DIR [--rounds 30] [-o result.json]

BUNDLE and CT2_INT8_DIR are the ones mt-bench built in its work dir (bundle/, ct2/int8/).
"""

from __future__ import annotations

import argparse
import json
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


def commands(bundle: str, ct2_dir: str, threads: int) -> dict[str, list[str]]:
    """mt-bench's own cold-start commands for ours and CT2 int8 (beam 4, de -> en)."""
    cfg = BenchConfig(checkpoint=Path(bundle), threads=threads)
    artifacts = {"bundle": bundle, "ct2_int8": ct2_dir}
    specs = {spec.name: spec for spec in CPU_ENGINES}
    return {label: cold_start_command(specs[name], artifacts, cfg, TEXT)
            for label, name in (("ours int8", "ort-int8"), ("ct2 int8", "ct2-int8"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle")
    parser.add_argument("ct2_dir")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("-o", "--output", type=Path)
    args = parser.parse_args()
    engines = commands(args.bundle, args.ct2_dir, args.threads)
    for cmd in engines.values():          # prime: file cache, optimized graphs, objdump's cache of cpuid sites
        for launcher in LAUNCHERS.values():
            subprocess.run(launcher + cmd, capture_output=True, check=True)
    runs = {(e, l): [] for e in engines for l in LAUNCHERS}
    for _ in range(args.rounds):
        for engine, cmd in engines.items():
            for launcher, prefix in LAUNCHERS.items():
                start = time.perf_counter()
                subprocess.run(prefix + cmd, capture_output=True, check=True)
                runs[(engine, launcher)].append(time.perf_counter() - start)
    medians = {}
    for engine in engines:
        m = {launcher: statistics.median(runs[(engine, launcher)]) for launcher in LAUNCHERS}
        m["avx2 estimate"] = m["native"] + m["avx2"] - m["trace-only"]
        medians[engine] = m
        print(f"{engine}: " + ", ".join(f"{k} {1000 * v:.1f} ms" for k, v in m.items()))
    ours, theirs = medians["ours int8"], medians["ct2 int8"]
    ratios = {"native": ours["native"] / theirs["native"], "avx2 estimate": ours["avx2 estimate"] / theirs["avx2 estimate"]}
    print("ours / CT2 int8: " + ", ".join(f"{k} {v:.3f}x" for k, v in ratios.items()))
    if args.output:
        args.output.write_text(json.dumps({"rounds": args.rounds, "threads": args.threads, "medians_s": medians,
                                           "ratios": ratios, "runs_s": {f"{e} | {l}": v for (e, l), v in runs.items()}},
                                          indent=1) + "\n")


if __name__ == "__main__":
    main()
