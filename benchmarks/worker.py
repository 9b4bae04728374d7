"""One engine, measured in a process of its own: `python -m mtkit.benchmarks.worker JOB.json RESULT.json`.

A fresh process per engine makes peak RSS (VmHWM, see `peak_rss_kb`) that engine's alone and keeps one engine's
thread pools and allocator state away from the next. The job file says which engine, which
artifacts, the sentences and the settings; the result file gets the timings, the outputs and the
peak RSS. `runner.py` writes the job and reads the result.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path


def chunks(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def measure_latency(engine, sources: list[str], src: str, to: str, reps: int,
                    warmup: int) -> tuple[list[float], list[str], list[float]]:
    """Batch 1, greedy: seconds per sentence over all repetitions, the outputs, and (ORT engines) the
    seconds of each sentence spent inside the graphs."""
    for text in sources[:warmup]:
        engine.translate([text], src, to, 1)
    timed_graphs = hasattr(engine, "graph_seconds")
    seconds, outputs, in_graphs = [], [], []
    for _ in range(reps):
        outputs = []
        for text in sources:
            if timed_graphs:
                engine.graph_seconds = 0.0
            start = time.perf_counter()
            (out, _), = engine.translate([text], src, to, 1)
            seconds.append(time.perf_counter() - start)
            outputs.append(out)
            if timed_graphs:
                in_graphs.append(engine.graph_seconds)
    return seconds, outputs, in_graphs


def measure_throughput(engine, sources: list[str], src: str, to: str, reps: int, warmup: int, beam_size: int,
                       batch_size: int) -> tuple[list[dict], list[str]]:
    """Beam search over the whole set in requests of `batch_size`: one record per repetition."""
    batches = chunks(sources, batch_size)
    if warmup and batches:
        engine.translate(batches[0], src, to, beam_size)     # one request: thread pools, allocator, caches
    runs, outputs = [], []
    for _ in range(reps):
        outputs, tokens = [], 0
        if hasattr(engine, "graph_seconds"):
            engine.graph_seconds = 0.0
        start = time.perf_counter()
        for batch in batches:
            for text, n in engine.translate(batch, src, to, beam_size):
                outputs.append(text)
                tokens += n
        seconds = time.perf_counter() - start
        runs.append({"seconds": seconds, "target_tokens": tokens, "sentences": len(sources),
                     "tokens_per_s": tokens / seconds if seconds > 0 else 0.0})
        if hasattr(engine, "graph_seconds"):
            runs[-1]["graph_seconds"] = engine.graph_seconds
    return runs, outputs


def memory_kb() -> dict[str, int]:
    """This process's memory figures (VmRSS, VmHWM, RssAnon, ...) from one read of /proc/self/status, in
    KiB; empty where /proc is missing."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return {}
    return {name: int(value.split()[0]) for name, _, value in (line.partition(":") for line in lines)
            if value.strip().endswith(" kB")}


def peak_rss_kb(memory: dict[str, int]) -> int:
    """This process's peak resident set size in KiB, from `memory_kb()`.

    Linux keeps ru_maxrss across execve: a worker started from a parent holding torch inherits
    the parent's peak. VmHWM belongs to the process's own address space (new at exec), so it is
    the engine's alone; ru_maxrss is the fallback where /proc is missing."""
    peak = memory.get("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss   # KiB on Linux


def run(job: dict) -> dict:
    from . import engines

    os.environ.setdefault("OMP_NUM_THREADS", str(job["threads"]))
    start = time.perf_counter()
    engines.import_libraries(job["engine"])
    imported = memory_kb().get("VmRSS")        # the engine's libraries, before any model
    engine = engines.load(job["engine"], job["artifacts"], job["threads"])
    # Resident memory once loaded, before any translation: the imports, the runtime and the weights.
    result = {"engine": job["engine"], "load_s": time.perf_counter() - start, "imported_rss_kb": imported,
              "loaded_rss_kb": memory_kb().get("VmRSS"),
              "impl": getattr(engine, "impl", ""), "datasets": {}}
    for ds in job["datasets"]:
        sources, src, to = ds["sources"], ds["src_lang"], ds["tgt_lang"]
        latency, greedy, latency_in_graphs = measure_latency(engine, sources, src, to, job["reps"], job["warmup"])
        runs, beam = measure_throughput(engine, sources, src, to, job["reps"], job["warmup"], job["beam_size"],
                                        job["batch_size"])
        result["datasets"][ds["name"]] = {"latency_s": latency, "latency_graph_s": latency_in_graphs,
                                          "throughput_runs": runs,
                                          "greedy_outputs": greedy, "beam_outputs": beam}
    # The peak, and the resident memory at the end split into anonymous (the engine's own allocations)
    # and file-backed (library code, mapped weights: shared, and grows with the page cache's folio
    # sizes). One read, so that a page allocated in between cannot put the split above the peak.
    memory = memory_kb()
    result["peak_rss_kb"] = peak_rss_kb(memory)
    result["end_rss_anon_kb"], result["end_rss_file_kb"] = memory.get("RssAnon"), memory.get("RssFile")
    result["ru_maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result["imported_torch"] = "torch" in sys.modules
    return result


def main() -> None:
    job_path, result_path = map(Path, sys.argv[1:3])
    job = json.loads(job_path.read_text(encoding="utf-8"))
    result = run(job)
    tmp = result_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")
    tmp.replace(result_path)


if __name__ == "__main__":
    main()
