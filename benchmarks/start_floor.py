"""Where a fresh process's time and memory go before it can translate: ours (ONNX Runtime) against
CTranslate2, stage by stage, in alternating rounds. It settles whether issue 16's cold-start and
peak-RSS goals are within reach of any runtime built on ONNX Runtime's Python package:

    python -m mtkit.benchmarks.start_floor BUNDLE CT2_INT8_DIR [--rounds 15] [--threads 1] [--out DIR]

BUNDLE is an exported bundle with an int8 variant (models/de-en), CT2_INT8_DIR the CTranslate2 int8
model mt-bench converted from the same checkpoint (its work dir's ct2/int8/). Each round starts six
fresh processes, in turn (`start_stages.py` runs the first two):
- "ours, floor": imports onnxruntime (which imports numpy) and sentencepiece, builds the encoder and
  decoder sessions from the runtime's cached optimized graphs and loads the tokenizer, all three at
  once, runs the encoder once and the decoder for one step, and exits. It imports no mtkit code and
  stops where a translation would only begin: no program on ONNX Runtime's Python package with these
  graphs can translate a sentence sooner.
- "CT2, stages": the same for CTranslate2 (a replica per thread), then translates one sentence (beam 4).
- mt-bench's cold-start commands: `mt-translate`, and `ct2_run` in both of CTranslate2's layouts.
- an empty interpreter (`python -c pass`), the part of every start that is neither engine's.
Stage times and the resident memory after each come from inside the process (VmRSS); the whole
starts are wall times from this one. Writes start_floor.json and start_floor.md to --out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from . import start_stages


def floor_arguments(bundle: Path) -> list[str]:
    """`start_stages.py ours`'s paths and names: the runtime's optimized copies of the bundle's int8
    graphs (made by a first mt-translate start), its tokenizer, and the tag and tensor names."""
    from mtkit.runtime.bundle_format import BundleConfig, variant_graphs
    from mtkit.runtime.onnx_backend import CACHED_GRAPH, SessionSettings, entry_key, optimized_copy
    from mtkit.runtime.vocab import language_tag

    config = BundleConfig.load(bundle)
    found = []
    for name in variant_graphs("int8", config.variants.get("int8")):
        cached = optimized_copy(bundle / name, "cpu", SessionSettings())
        if cached is None or entry_key(cached[0]) != cached[1]:
            raise SystemExit(f"{bundle / name}: no optimized copy in the runtime's cache (MT_ORT_CACHE=0?)")
        found.append(str(cached[0] / CACHED_GRAPH))
    n = config.names
    names = {"tag": language_tag("en"), "src_ids": n.src_ids, "src_mask": n.src_mask, "tgt_ids": n.tgt_ids,
             "past": n.past}
    return [*found, str(bundle / config.tokenizer), json.dumps(names)]


def timed(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, done.stdout


def measure(bundle: Path, ct2_dir: Path, rounds: int, threads: int) -> dict:
    from mtkit.benchmarks.bench import BenchConfig
    from mtkit.benchmarks.engines import CPU_ENGINES
    from mtkit.benchmarks.runner import cold_start_command, compile_bytecode

    cfg = BenchConfig(checkpoint=bundle, threads=threads)
    specs = {spec.name: spec for spec in CPU_ENGINES}
    artifacts = {"bundle": str(bundle), "ct2_int8": str(ct2_dir)}
    whole = {label: cold_start_command(specs[name], artifacts, cfg, start_stages.TEXT)
             for label, name in (("ours, mt-translate", "ort-int8"), ("CT2, ct2_run", "ct2-int8"),
                                 ("CT2, ct2_run, a replica per thread", "ct2-int8-replicas4"))}
    compile_bytecode()
    for cmd in whole.values():       # fills the runtime's graph cache and the page cache
        subprocess.run(cmd, capture_output=True, text=True, check=True)
    # Ours as a plain script, not `-m`: not even the mtkit package is imported there.
    ours = [sys.executable, start_stages.__file__, "ours", str(threads), *floor_arguments(bundle)]
    staged_cmds = {"ours, floor": ours,
                   "CT2, stages": [sys.executable, "-m", "mtkit.benchmarks.start_stages", "ct2", str(threads),
                                   str(ct2_dir)]}
    runs = {label: [] for label in [*staged_cmds, *whole, "python -c pass"]}
    for _ in range(rounds):
        for label, cmd in staged_cmds.items():
            wall, out = timed(cmd)
            runs[label].append({"wall_s": wall, **json.loads(out)})
        for label, cmd in whole.items():
            runs[label].append({"wall_s": timed(cmd)[0]})
        runs["python -c pass"].append({"wall_s": timed([sys.executable, "-c", "pass"])[0]})
    return runs


def summary(runs: dict) -> dict:
    def median(label, key):
        return statistics.median(r[key] for r in runs[label])

    out = {label: {"wall_ms": 1e3 * median(label, "wall_s")} for label in runs}
    for label in ("ours, floor", "CT2, stages"):
        names = [s["stage"] for s in runs[label][0]["stages"]]
        out[label]["stages"] = [{"stage": n, "ms": statistics.median(r["stages"][i]["ms"] for r in runs[label]),
                                 "rss_mb": statistics.median(r["stages"][i]["rss_mb"] for r in runs[label])}
                                for i, n in enumerate(names)]
        out[label]["peak_rss_mb"] = median(label, "peak_rss_mb")
    # Round by round: the floor against CTranslate2's faster whole start in the same round.
    ct2_runs = [r for label, r in runs.items() if label.startswith("CT2, ct2_run")]
    ratios = [mine["wall_s"] / min(t["wall_s"] for t in same_round)
              for mine, *same_round in zip(runs["ours, floor"], *ct2_runs)]
    out["floor_over_ct2"] = {"median": statistics.median(ratios), "rounds": len(ratios),
                             "rounds_floor_slower": sum(r > 1 for r in ratios)}
    return out


def markdown(result: dict) -> str:
    s, m = result["summary"], result["machine"]
    ours, ct2 = s["ours, floor"], s["CT2, stages"]
    lines = [f"# Start-up floor: {m['cpu']} ({m['logical_cpus']} CPUs), {result['threads']} thread(s)", "",
             f"`python -m mtkit.benchmarks.start_floor` ({result['rounds']} rounds, medians; onnxruntime "
             f"{m['versions']['onnxruntime']}, ctranslate2 {m['versions']['ctranslate2']}, numpy "
             f"{m['versions']['numpy']}, commit {m['mtkit_commit']}).", "",
             "| fresh process | wall ms |", "|---|---:|"]
    lines += [f"| {label} | {v['wall_ms']:.0f} |" for label, v in s.items() if "wall_ms" in v]
    lines += ["", "| stage, inside the process | ms | RSS after, MB |", "|---|---:|---:|"]
    for label, v in (("ours, floor", ours), ("CT2, stages", ct2)):
        lines += [f"| {label}: {st['stage']} | {st['ms']:.1f} | {st['rss_mb']:.1f} |" for st in v["stages"]]
        lines.append(f"| {label}: peak (VmHWM) | | {v['peak_rss_mb']:.1f} |")
    floor, cli = ours["wall_ms"], s["ours, mt-translate"]["wall_ms"]
    theirs = min(v["wall_ms"] for label, v in s.items() if label.startswith("CT2, ct2_run"))
    paired = s["floor_over_ct2"]
    lines += ["", f"An ONNX Runtime process that has run its encoder and one decoder step takes {floor:.0f} ms. "
              f"CTranslate2's whole cold start in its faster layout, one translation included, takes {theirs:.0f} ms: "
              f"the floor is {floor / theirs:.2f}× of it ({paired['median']:.2f}× round by round, slower in "
              f"{paired['rounds_floor_slower']} of {paired['rounds']} rounds); mt-translate takes {cli:.0f} ms "
              f"({cli / theirs:.2f}×). Of the floor, {ours['stages'][0]['ms']:.0f} ms is importing numpy, which "
              "onnxruntime's Python package imports and CTranslate2 does not need. Peak RSS: the floor "
              f"{ours['peak_rss_mb']:.0f} MB, CTranslate2 after its translation {ct2['peak_rss_mb']:.0f} MB."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("ct2_dir", type=Path)
    parser.add_argument("--rounds", type=int, default=15, choices=range(1, 1001), metavar="N")
    parser.add_argument("--threads", type=int, default=1, choices=range(1, 257), metavar="N")
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args(argv)
    from mtkit.benchmarks.ct2_run import read_info
    from mtkit.benchmarks.machine import machine_info
    from mtkit.runtime.bundle_format import BundleConfig, BundleError

    try:
        if "int8" not in BundleConfig.load(args.bundle).variants:
            parser.error(f"{args.bundle}: the bundle has no int8 variant")
        read_info(args.ct2_dir)
    except (BundleError, OSError) as e:
        parser.error(str(e))
    try:
        runs = measure(args.bundle.resolve(), args.ct2_dir.resolve(), args.rounds, args.threads)
    except subprocess.CalledProcessError as e:
        last = (e.stderr or "").strip().splitlines()[-1:] or [f"exit status {e.returncode}"]
        raise SystemExit(f"start_floor: {' '.join(map(str, e.cmd[:4]))} ... failed: {last[0]}") from None
    result = {"machine": machine_info(), "rounds": args.rounds, "threads": args.threads,
              "summary": summary(runs), "runs": runs}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "start_floor.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    (args.out / "start_floor.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
