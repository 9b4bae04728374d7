"""A benchmark's report: the figures of each engine (latency, throughput, BLEU, ratios against the
CTranslate2 engine of the same device and precision), written as results.json (everything),
results.md (tables) and results.png (bars)."""

from __future__ import annotations

import json
import shlex
import statistics
from pathlib import Path

import numpy as np

from .engines import ENGINES

JSON_FILE, MARKDOWN_FILE, PNG_FILE = "results.json", "results.md", "results.png"


def summarize_dataset(raw: dict, refs: list[str]) -> dict:
    import sacrebleu

    latency_ms = np.asarray(raw["latency_s"]) * 1000.0
    runs = raw["throughput_runs"]
    graph = [r["graph_seconds"] / r["seconds"] for r in runs if "graph_seconds" in r]
    latency_in_graphs = raw.get("latency_graph_s") or []
    return {
        # Share of beam time inside the ONNX graphs (ORT engines): the rest is the Python search loop.
        "graph_time_share": statistics.median(graph) if graph else None,
        # Batch-1 greedy: the median time per sentence inside the graphs (ORT engines).
        "latency_graph_ms_p50": 1000.0 * statistics.median(latency_in_graphs) if latency_in_graphs else None,
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


def best_against_best(engines: dict, cold_starts: bool = True) -> dict | None:
    """Our best CPU engine against CTranslate2's best, measure by measure, as issue 16 judges them:
    beam throughput (higher is better) and greedy p50 per test set and the cold start (lower is
    better), each side's best in this run, whichever engine gave it; peak RSS and weights of the
    int8 engines (CTranslate2's lowest over its int8 layouts). Our engines with a decode budget other
    than the runtime's default are left out: they are comparisons of ours, not what a user gets.
    `cold_starts=False` leaves the cold start out (engines run under a launcher whose own start-up it
    would include)."""
    ok = {n: e for n, e in engines.items() if e["status"] == "ok" and e["device"] == "cpu"}
    ours = {n: e for n, e in ok.items() if e["kind"] == "ort" and ENGINES[n].budget is None}
    theirs = {n: e for n, e in ok.items() if e["kind"] == "ct2"}
    if not ours or not theirs:
        return None

    def compare(value, higher_is_better: bool) -> dict | None:
        pick = max if higher_is_better else min
        ours_best = pick(((value(e), n) for n, e in ours.items() if value(e) is not None), default=None)
        theirs_best = pick(((value(e), n) for n, e in theirs.items() if value(e) is not None), default=None)
        if ours_best is None or theirs_best is None:
            return None
        ratio = ours_best[0] / theirs_best[0]
        return {"ours": ours_best[1], "ours_value": ours_best[0], "ct2": theirs_best[1], "ct2_value": theirs_best[0],
                "ratio": ratio, "ours_better_or_equal": ratio >= 1.0 if higher_is_better else ratio <= 1.0}

    def per_set(ds: str) -> dict:
        return {"beam_tokens_per_s": compare(lambda e: e["datasets"][ds]["throughput_tokens_per_s"], True),
                "greedy_p50_ms": compare(lambda e: e["datasets"][ds]["latency_ms"]["p50"], False)}

    best = {"datasets": {ds: per_set(ds) for ds in next(iter(ours.values()))["datasets"]},
            "cold_start_s": compare(lambda e: e.get("cold_start", {}).get("seconds"), False) if cold_starts else None}
    theirs_int8 = {n: e for n, e in theirs.items() if ENGINES[n].precision == "int8"}
    if "ort-int8" in ours and theirs_int8:
        for key in ("peak_rss_mb", "model_size_mb"):     # CTranslate2's lowest of its int8 layouts
            value, name = min((e[key], n) for n, e in theirs_int8.items())
            ratio = ours["ort-int8"][key] / value
            best[f"int8_{key}"] = {"ours": "ort-int8", "ours_value": ours["ort-int8"][key], "ct2": name,
                                   "ct2_value": value, "ratio": ratio, "ours_better_or_equal": ratio <= 1.0}
    return best


BEST_LABELS = {"beam_tokens_per_s": ("beam tok/s", 0), "greedy_p50_ms": ("greedy p50 ms", 1),
               "cold_start_s": ("cold start s", 3), "int8_peak_rss_mb": ("peak RSS MB, int8", 1),
               "int8_model_size_mb": ("weights MB, int8", 2)}


def _best_table(best: dict | None) -> list[str]:
    if not best:
        return []
    measures = [(f"{BEST_LABELS[m][0]}, {ds}", BEST_LABELS[m][1], c)
                for ds, per_set in best["datasets"].items() for m, c in per_set.items()]
    measures += [(BEST_LABELS[m][0], BEST_LABELS[m][1], c) for m, c in best.items() if m != "datasets"]
    rows = [f"| {label} | {_f(c['ours_value'], digits)} (`{c['ours']}`) | {_f(c['ct2_value'], digits)} (`{c['ct2']}`) "
            f"| {_f(c['ratio'], 2, '×')} | {'yes' if c['ours_better_or_equal'] else '**no**'} |"
            for label, digits, c in measures if c]
    return ["## Our best against CTranslate2's best", "",
            "Each side's best CPU engine in this run, measure by measure (issue 16's comparison; our engines with "
            "a non-default decode budget left out; CTranslate2's include its replica layouts); peak RSS and "
            "weights compare our int8 engine with CTranslate2's lowest int8 one. "
            "Ratios are ours / CTranslate2's." + (" The cold start is left out: the engines ran under a launcher."
                                                  if "cold_start_s" in best and best["cold_start_s"] is None else ""), "",
            "| measure | ours | CTranslate2 | ratio | ours as good or better |",
            "|---|---:|---:|---:|---|", *rows, ""]


def write_all(results: dict, out_dir: Path) -> dict[str, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / JSON_FILE, "markdown": out_dir / MARKDOWN_FILE, "png": out_dir / PNG_FILE}
    _write(paths["json"], json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    _write(paths["markdown"], markdown(results))
    plot(results, paths["png"])
    return paths


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _f(value, digits: int = 1, suffix: str = "") -> str:
    return "–" if value is None else f"{value:,.{digits}f}{suffix}"


def _n(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _cpu_detail(m: dict) -> str:
    """What tells CPU generations apart where the model name does not, e.g. " (zen5, family 26, model 2,
    avx512-vnni)"; empty for results written before these fields existed."""
    parts = [m["microarchitecture"]] if m.get("microarchitecture") else []
    parts += [f"family {m['cpu_family']}, model {m['cpu_model']}"] if m.get("cpu_family") else []
    parts += [m["vector_isa"]] if m.get("vector_isa") else []
    return f" ({', '.join(parts)})" if parts else ""


def markdown(results: dict) -> str:
    m, s = results["machine"], results["settings"]
    versions = ", ".join(f"{k} {v}" + (f" (git {m['mtkit_commit']})" if k == "mtkit" and m.get("mtkit_commit") else "")
                         for k, v in m["versions"].items() if v)
    # The worker warms up on the first sentences of each test set: never more than the set has.
    warm = [min(s["warmup"], d["sentences"]) for d in results["datasets"].values()]
    warmups = " / ".join(dict.fromkeys(map(str, warm)))
    warmups += " warm-up translation" if max(warm) == 1 else " warm-up translations"
    lines = [
        f"# mt-bench: `{Path(results['checkpoint']).name}`",
        "",
        f"- **Machine:** `{m.get('name', '?')}`: {m['cpu']}{_cpu_detail(m)}, {m['physical_cores']} physical cores / {m['logical_cpus']} "
        f"logical CPUs ({m['available_cpus']} available), {m['memory_gib']} GiB RAM; {m['platform']}; "
        f"Python {m['python']}",
        f"- **Versions:** {versions}",
        f"- **Settings:** threads per engine: {s['threads']}; {s['src_lang']}→{s['tgt_lang']}; latency = greedy, "
        f"batch 1, per sentence; throughput = beam {s['beam_size']}, requests of {s['batch_size']} sentences, "
        f"target tokens/s; medians of {_n(s['reps'], 'round', 'rounds')}, each engine a fresh process per round "
        f"(engines take turns, after one untimed fresh process each), {warmups} each; "
        f"cold start = median of {_n(s['cold_reps'], 'fresh process', 'fresh processes')} translating one sentence "
        f"(beam {s['beam_size']}), run in rounds across engines after the rounds above (warm file cache and "
        "optimized-graph cache)",
        *([f"- **Launcher:** every engine process ran under `{shlex.join(s['launcher'])}` (cold starts include "
            "its start-up)"] if s.get("launcher") else []),
        f"- **Date:** {results['created']}",
        f"- **Outputs:** each engine's greedy and beam translations, in `{Path(results['work_dir']) / 'outputs'}/`",
        "",
        "Ratios are against the CTranslate2 engine of the same device and precision in its one-translator "
        "layout (`ct2-int8`, `ct2-fp32`), measured in the same run: latency ×CT2 below 1 and throughput ×CT2 "
        "above 1 mean faster than it. Where its replica layouts ran, they can be faster: \"Our best against "
        "CTranslate2's best\" compares with every layout. "
        "Peak RSS is the high-water mark (VmHWM) of the engine's own process; ru_maxrss is not used because "
        "Linux carries the parent's peak across exec. RSS after imports and after loading are the same process's "
        "resident memory once the engine's libraries are imported, and once its model is loaded too, before its "
        "first sentence. At the end, the resident memory is split into anonymous (the engine's own allocations) "
        "and file-backed (library code and mapped weights: shared between processes, and larger when the page "
        "cache holds those files in large folios). "
        "Model size counts the weight files only (no tokenizer).",
        "",
    ]
    engines = {n: e for n, e in results["engines"].items() if e["device"] == "cpu"}
    gpu_engines = {n: e for n, e in results["engines"].items() if e["device"] == "cuda"}
    lines += _best_table(results.get("best"))
    lines += _section_tables(results, engines)
    lines += ["## GPU", "", results["gpu"]["note"] + ".", ""]
    if any(e["status"] == "ok" for e in gpu_engines.values()):
        lines += _section_tables(results, gpu_engines, level="###")
    notes = [f"- `{n}`: {e['status']}: {e['note']}" for n, e in results["engines"].items() if e.get("note")]
    notes += [f"- `{n}`: {e['impl']}" for n, e in results["engines"].items() if e.get("impl")]
    notes += [f"- `{n}` cold start failed: {e['cold_start']['error']}" for n, e in results["engines"].items()
              if "error" in e.get("cold_start", {})]
    if notes:
        lines += ["## Notes", "", *notes, ""]
    return "\n".join(lines)


def _section_tables(results: dict, engines: dict, level: str = "##") -> list[str]:
    lines = []
    for ds, info in results["datasets"].items():
        lines += [f"{level} {ds} ({info['sentences']} sentences)", "",
                  "| engine | latency p50 ms | p95 ms | latency ×CT2 | beam tok/s | throughput ×CT2 "
                  "| BLEU greedy | BLEU beam | greedy = CT2 |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for name, e in engines.items():
            if e["status"] != "ok":
                lines.append(f"| {e['label']} (`{name}`) | {e['status']} | | | | | | | |")
                continue
            d, r = e["datasets"][ds], e.get("ratios", {}).get(ds, {})
            lines.append(
                f"| {e['label']} (`{name}`) | {_f(d['latency_ms']['p50'])} | {_f(d['latency_ms']['p95'])} "
                f"| {_f(r.get('latency_p50'), 2, '×')} | {_f(d['throughput_tokens_per_s'], 0)} "
                f"| {_f(r.get('throughput'), 2, '×')} | {_f(d['bleu_greedy'])} | {_f(d['bleu_beam'])} "
                f"| {_f(100 * r['same_greedy_output'] if r else None, 0, '%')} |")
        lines.append("")
    lines += _graph_share_table(results, engines, level)
    lines += [f"{level} Per engine", "",
              "| engine | peak RSS MB | RSS after loading MB | RSS after imports MB | at the end: anonymous / file MB "
              "| model size MB | load s | cold start s | ×CT2 |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, e in engines.items():
        if e["status"] != "ok":
            lines.append(f"| {e['label']} (`{name}`) | {e['status']} | | | | | | | |")
            continue
        cold = e.get("cold_start", {}).get("seconds")
        ref = results["engines"].get(e["reference"], {})
        ref_cold = ref.get("cold_start", {}).get("seconds") if ref.get("status") == "ok" else None
        lines.append(f"| {e['label']} (`{name}`) | {_f(e['peak_rss_mb'], 0)} | {_f(e.get('loaded_rss_mb'), 0)} "
                     f"| {_f(e.get('imported_rss_mb'), 0)} "
                     f"| {_f(e.get('end_anon_rss_mb'), 0)} / {_f(e.get('end_file_rss_mb'), 0)} "
                     f"| {_f(e['model_size_mb'], 2)} "
                     f"| {_f(e['load_s'], 2)} | {_f(cold, 2)} | {_f(cold / ref_cold if cold and ref_cold else None, 2, '×')} |")
    lines.append("")
    return lines


def _graph_share_table(results: dict, engines: dict, level: str) -> list[str]:
    """How much of our time is ONNX Runtime's kernels, and what they alone would allow: beam throughput
    and batch-1 greedy latency, against CTranslate2's best in this run (its reference engine on a GPU)."""
    rows = []
    for name, e in engines.items():
        ref = results["engines"].get(e["reference"], {})
        for ds, d in e.get("datasets", {}).items():
            share = d.get("graph_time_share")
            if e["status"] != "ok" or not share or ref.get("status") != "ok":
                continue
            best = (results.get("best") or {}).get("datasets", {}).get(ds, {}) if e["device"] == "cpu" else {}
            beam, greedy = best.get("beam_tokens_per_s"), best.get("greedy_p50_ms")
            theirs_tps, tps_engine = (beam["ct2_value"], beam["ct2"]) if beam else \
                (ref["datasets"][ds]["throughput_tokens_per_s"], e["reference"])
            theirs_ms, ms_engine = (greedy["ct2_value"], greedy["ct2"]) if greedy else \
                (ref["datasets"][ds]["latency_ms"]["p50"], e["reference"])
            bound, graphs_ms = d["throughput_tokens_per_s"] / share, d.get("latency_graph_ms_p50")
            graphs_ratio = graphs_ms / theirs_ms if graphs_ms else None
            rows.append(f"| `{name}` | {ds} | {_f(100 * share, 0, '%')} | {_f(100 * (1 - share), 0, '%')} "
                        f"| {_f(bound, 0)} | {_f(bound / theirs_tps, 2, '×')} `{tps_engine}` "
                        f"| {_f(graphs_ms)} | {_f(graphs_ratio, 2, '×')} `{ms_engine}` |")
    if not rows:
        return []
    return [f"{level} Where our time goes", "",
            "Wall time with an encoder or decoder graph running (ONNX Runtime's kernels; with batches decoded "
            "in parallel, time when at least one runs) against the rest (the Python search loop: top-k, cache "
            "reordering, with no graph running). *Graphs only* is what that loop costing nothing would give: "
            "the most that work outside the graphs could ever reach. For beam search, the throughput; for "
            "batch-1 greedy, the median time per sentence inside the graphs. Each against CTranslate2's best "
            "engine in this run for that measure.", "",
            "| engine | test set | beam: in graphs | search loop | graphs only tok/s | ×CT2's best "
            "| greedy batch 1: graphs only p50 ms | ×CT2's best |",
            "|---|---|---:|---:|---:|---:|---:|---:|", *rows, ""]


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = {n: e for n, e in results["engines"].items() if e["status"] == "ok"}
    names = list(ok)
    cold = [n for n in names if ok[n].get("cold_start", {}).get("seconds")]
    datasets = list(results["datasets"])
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    panels = [
        (axes[0, 0], "greedy latency p50, batch 1 (ms, lower is better)", names,
         {ds: [ok[n]["datasets"][ds]["latency_ms"]["p50"] for n in names] for ds in datasets}),
        (axes[0, 1], f"beam {results['settings']['beam_size']} throughput (target tokens/s, higher is better)", names,
         {ds: [ok[n]["datasets"][ds]["throughput_tokens_per_s"] for n in names] for ds in datasets}),
        (axes[1, 0], "peak RSS (MB)", names, {"": [ok[n]["peak_rss_mb"] for n in names]}),
        (axes[1, 1], "cold start: one sentence from a fresh process (s)", cold,
         {"": [ok[n]["cold_start"]["seconds"] for n in cold]}),
    ]
    for ax, title, labels, series in panels:
        width = 0.8 / max(len(series), 1)
        for k, (label, values) in enumerate(series.items()):
            xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(labels))]
            bars = ax.bar(xs, values, width, label=label or None)
            ax.bar_label(bars, fmt=lambda v: f"{v:,.0f}" if v >= 100 else f"{v:.3g}", fontsize=7)
        ax.set_title(title, fontsize=10)
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
        if any(series):                      # name the test sets
            ax.legend(fontsize=8)
    m = results["machine"]
    fig.suptitle(f"mt-bench — {Path(results['checkpoint']).name} — {m['cpu']}, "
                 f"threads: {results['settings']['threads']}", fontsize=11)
    fig.tight_layout()
    tmp = path.with_name(path.name + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
