"""`mt-bench`'s work: one checkpoint, several engines, the same sentences, figures side by side.

Steps: check the arguments, the output and work dirs and any given bundle or CT2 models, before
any long work; read the test sets; choose the engines; build what they need into a work dir
(`artifacts.py`: an ONNX bundle with an int8 variant, CTranslate2 fp32 and int8 models; reused
while newer than the checkpoint); run each engine in fresh processes for latency, throughput,
outputs and peak RSS, and time cold starts (`runner.py`); score BLEU and compute ratios against
the CTranslate2 engine of the same device and precision, then write results.json, results.md and
results.png (`report.py`), with the machine's description (`machine.py`).

Nothing here is part of the runtime: it imports torch (export, conversion) and ctranslate2.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from mtkit.runtime.decode_options import DecodeOptions

from .artifacts import ArtifactError, check_given, model_size, prepare
from .engines import CPU_ENGINES, ENGINES, GPU_ENGINES, EngineSpec
from .machine import CHECKOUT, machine_info, machine_slug
from .runner import cold_start_command, cold_starts, prime, run_rounds

# In a checkout, results go next to the committed ones; an installed package writes under the current
# directory instead of into site-packages.
RESULTS_DIR = CHECKOUT / "benchmarks" / "results" if CHECKOUT else Path("mt-bench-results")
SCHEMA_VERSION = 1

# Test sets: name -> file prefix under the data dir; files are `{prefix}.{lang}.gz` (or plain text).
DATASETS = {"tatoeba-dev": "tatoeba/dev", "newstest2013": "news/newstest2013"}


class BenchError(Exception):
    """A benchmark that cannot run (bad arguments, missing data); the message says what to fix."""


@dataclass
class BenchConfig:
    checkpoint: Path
    out_dir: Path | None = None               # default: RESULTS_DIR/<machine>/
    work_dir: Path | None = None              # default: `default_work_dir(checkpoint)`
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
    bundle: Path | None = None                # reuse a bundle exported from `checkpoint`
    ct2_dir: Path | None = None               # reuse conversions: a dir with float32/ and int8/
    rebuild: bool = False
    timeout: float = 3600.0                   # seconds per engine process
    machine_name: str | None = None           # default: `machine_slug`; names the default out_dir
    launcher: list[str] = field(default_factory=list)   # a command prefix for every engine process


# ----- data ---------------------------------------------------------------------------------------

def default_work_dir(checkpoint: Path) -> Path:
    """`bench/<checkpoint-stem>-<hash of its path>` in the user's cache: never beside the checkpoint, whose
    folder may be a model bundle (models/de-en), where unlisted files fail `mt-models verify`."""
    from mtkit.runtime.bundle import cache_root

    key = hashlib.sha256(str(Path(checkpoint).resolve()).encode()).hexdigest()[:12]
    return cache_root() / "bench" / f"{Path(checkpoint).stem}-{key}"


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


# ----- engines ------------------------------------------------------------------------------------

def ct2_cuda_problem() -> str | None:
    """Why CTranslate2's CUDA engines would fail although it sees a GPU: its 4.x wheels load CUDA 12's
    cuBLAS at the first translation, and a machine with CUDA 13 alone has none (the H100 lent on
    2026-11-27: "libcublas.so.12: cannot open shared object file"). Checked on Linux only."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        ctypes.CDLL("libcublas.so.12")
    except OSError:
        return "CTranslate2's CUDA build needs CUDA 12's cuBLAS (libcublas.so.12), which this machine lacks"
    return None


def gpu_reasons() -> dict[str, str | None]:
    """Why each GPU engine cannot run here (None = it can)."""
    try:
        import ctranslate2
    except ImportError:
        ct2_reason = "ctranslate2 is not installed (the bench extra)"
    else:
        try:
            ct2_gpus = ctranslate2.get_cuda_device_count()
        except Exception:  # a CPU-only build may raise instead of returning 0
            ct2_gpus = 0
        ct2_reason = ct2_cuda_problem() if ct2_gpus else "CTranslate2 sees no CUDA device"
    import onnxruntime as ort
    import torch

    reasons = {}
    for spec in GPU_ENGINES:
        if spec.kind == "torch":
            reasons[spec.name] = None if torch.cuda.is_available() else "torch sees no CUDA device"
        elif spec.kind == "ct2":
            reasons[spec.name] = ct2_reason
        else:
            reasons[spec.name] = None if "CUDAExecutionProvider" in ort.get_available_providers() else \
                "this onnxruntime has no CUDAExecutionProvider (the gpu extra installs onnxruntime-gpu)"
    return reasons


def select_engines(cfg: BenchConfig) -> tuple[list[EngineSpec], dict[str, str], dict]:
    """The engines to run, the ones skipped with why, and the GPU section's status."""
    reasons = gpu_reasons()
    usable_gpu = [n for n, why in reasons.items() if why is None]
    chosen = [ENGINES[n] for n in cfg.engines] if cfg.engines else CPU_ENGINES + GPU_ENGINES
    gpu = {"available": bool(usable_gpu),
           "note": "no GPU engine asked for (--engines)" if not any(e.device == "cuda" for e in chosen) else
           "CUDA found: GPU engines run" if usable_gpu else
           "no CUDA device on this machine: GPU section skipped (" + "; ".join(sorted(set(reasons.values()))) + ")"}
    skip = {e.name: reasons[e.name] for e in chosen if e.device == "cuda" and reasons[e.name]}
    skip |= {e.name: why for e in chosen if e.kind == "ct2" and e.device == "cpu" and (why := ct2_cpu_problem(e))}
    return chosen, skip, gpu


def ct2_cpu_problem(spec: EngineSpec) -> str | None:
    """Why CTranslate2 cannot run this engine's compute type on this CPU (int16 needs Intel MKL, which
    it uses on Intel CPUs only), or None."""
    try:
        import ctranslate2
    except ImportError:
        return None       # the engine fails with the missing package, as the other CT2 engines do
    supported = ctranslate2.get_supported_compute_types("cpu")
    if spec.ct2_compute_type in supported:
        return None
    return (f"CTranslate2 offers no {spec.ct2_compute_type} on this CPU (it offers {', '.join(sorted(supported))}; "
            "int16 needs Intel MKL, which it uses on Intel CPUs)")


def check_config(cfg: BenchConfig) -> None:
    """BenchError for no or unknown engines, no test sets, counts below one, a launcher that is not a
    command, or a model that does not translate from the source into the target language."""
    from mtkit.train.checkpoint import CheckpointError, load_checkpoint

    if cfg.engines is not None and not cfg.engines:
        raise BenchError(f"no engine given (known: {', '.join(ENGINES)})")
    unknown = [n for n in cfg.engines or [] if n not in ENGINES]
    if unknown:
        raise BenchError(f"unknown engine(s) {', '.join(unknown)} (known: {', '.join(ENGINES)})")
    if not cfg.datasets:
        raise BenchError(f"no test set given (known: {', '.join(DATASETS)})")
    for name, value in (("threads", cfg.threads), ("reps", cfg.reps), ("beam_size", cfg.beam_size),
                        ("batch_size", cfg.batch_size)):
        if value < 1:
            raise BenchError(f"{name} must be at least 1, not {value}")
    if cfg.launcher and not shutil.which(cfg.launcher[0]):
        raise BenchError(f"--launcher: no such command: {cfg.launcher[0]}")
    try:
        ckpt = load_checkpoint(cfg.checkpoint)
    except CheckpointError as e:
        raise BenchError(str(e)) from None
    tags = ckpt.language_tags
    if cfg.tgt_lang not in tags:
        raise BenchError(f"{cfg.checkpoint}: the model cannot translate into {cfg.tgt_lang!r} "
                         f"(its target languages: {', '.join(tags)})")
    # As the runtime's Translator: the trained directions, or else any two different languages.
    directions = [tuple(d) for d in ckpt.directions] or [(a, b) for a in tags for b in tags if a != b]
    if (cfg.src_lang, cfg.tgt_lang) not in directions:
        raise BenchError(f"{cfg.checkpoint}: the model does not translate {cfg.src_lang} -> {cfg.tgt_lang} "
                         f"(its directions: {', '.join(f'{a} -> {b}' for a, b in directions)})")


def check_directory(path: Path, option: str) -> None:
    """BenchError now, not after the run, unless `path` is or can be made a directory to write in."""
    from mtkit.runtime.text_io import blocking_file

    if path.exists() and not path.is_dir():
        raise BenchError(f"{option} {path}: not a directory")
    if (blocker := blocking_file(path)) is not None:
        raise BenchError(f"{option} {path}: {blocker} is not a directory")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise BenchError(f"{option} {path}: {existing} is not writable")


def run_benchmark(cfg: BenchConfig, log=print) -> tuple[dict, Path]:
    """Run everything; write results.json/.md/.png; return the results and the output directory."""
    from mtkit.runtime.checksums import file_sha256
    from mtkit.runtime.data_dir import default_data_dir

    from . import report

    cfg.checkpoint = Path(cfg.checkpoint)
    check_config(cfg)
    machine = machine_info()
    machine["name"] = cfg.machine_name or machine_slug(machine)
    out_dir = Path(cfg.out_dir) if cfg.out_dir else RESULTS_DIR / machine["name"]
    work = Path(cfg.work_dir) if cfg.work_dir else default_work_dir(cfg.checkpoint)
    check_directory(out_dir, "-o")
    check_directory(work, "--work-dir")
    chosen, skip, gpu = select_engines(cfg)
    checkpoint_sha256 = file_sha256(cfg.checkpoint)
    try:
        check_given(cfg, [e for e in chosen if e.name not in skip], checkpoint_sha256)
    except ArtifactError as e:
        raise BenchError(str(e)) from None
    if cfg.rebuild and (given := [o for o, v in (("--bundle", cfg.bundle), ("--ct2-dir", cfg.ct2_dir)) if v]):
        log(f"note: --rebuild does not rebuild what {' and '.join(given)} gives: it is used as it is")
    if len(skip) == len(chosen):
        raise BenchError("nothing to measure: " + "; ".join(f"{n}: {why}" for n, why in skip.items()))
    data_dir = Path(cfg.data_dir) if cfg.data_dir else default_data_dir()       # None: load_dataset says what to do
    datasets = [load_dataset(data_dir, name, cfg.src_lang, cfg.tgt_lang, cfg.limit) for name in cfg.datasets]
    work.mkdir(parents=True, exist_ok=True)

    artifacts, more_skips, failed = prepare(cfg, [e for e in chosen if e.name not in skip], datasets, work, log)
    skip.update(more_skips)
    for spec in chosen:
        if spec.name in skip:
            log(f"{spec.name}: skipped ({skip[spec.name]})")
        elif spec.name in failed:
            log(f"{spec.name}: failed ({failed[spec.name]['error']})")
    runnable = [s for s in chosen if s.name not in skip and s.name not in failed]
    text = datasets[0]["sources"][0]
    cold_commands = {s.name: cmd for s in runnable if (cmd := cold_start_command(s, artifacts, cfg, text))}
    prime(cold_commands, cfg)
    measured = run_rounds(runnable, artifacts, datasets, cfg, work, log) | failed
    engines, outputs = {}, {}
    for spec in chosen:
        engines[spec.name] = engine_entry(spec, skip.get(spec.name), measured.get(spec.name), artifacts, datasets)
        if engines[spec.name]["status"] == "ok":
            outputs[spec.name] = save_outputs(spec, measured[spec.name], datasets, work / "outputs")
    if not outputs:      # empty tables would only overwrite earlier results
        raise BenchError("no engine was measured, so no results were written: " +
                         "; ".join(f"{n}: {e['status']} ({e['note']})" for n, e in engines.items()))
    measure_cold_starts(chosen, engines, cold_commands, cfg, log)
    report.add_ratios(engines, outputs)

    results = {
        "schema_version": SCHEMA_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "checkpoint": str(cfg.checkpoint),             # as given; the hash says which weights
        "checkpoint_sha256": checkpoint_sha256,
        "artifacts": {k: v for k, v in artifacts.items() if k != "checkpoint"},
        "work_dir": str(work),
        "machine": machine,
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()
                     if k in ("threads", "reps", "warmup", "beam_size", "batch_size", "cold_reps", "limit",
                              "src_lang", "tgt_lang", "launcher")},
        "datasets": {d["name"]: {"path": d["path"], "sentences": len(d["sources"])} for d in datasets},
        "gpu": gpu,
        "engines": engines,
        "best": report.best_against_best(engines, cold_starts=not cfg.launcher),
    }
    report.write_all(results, out_dir)
    return results, out_dir


def engine_entry(spec: EngineSpec, skipped: str | None, raw: dict | None, artifacts: dict,
                 datasets: list[dict]) -> dict:
    """An engine's section of results.json: skipped or failed with why, or its figures."""
    from . import report

    entry = {"label": spec.label, "kind": spec.kind, "device": spec.device, "precision": spec.precision,
             "reference": spec.reference}
    if skipped:
        return entry | {"status": "skipped", "note": skipped}
    if "error" in raw:
        return entry | {"status": "failed", "note": raw["error"]}
    size, counted = model_size(spec, artifacts)
    return entry | dict(status="ok", impl=raw.get("impl", ""), load_s=raw["load_s"],
                        peak_rss_mb=raw["peak_rss_kb"] / 1024, ru_maxrss_mb=raw["ru_maxrss_kb"] / 1024,
                        imported_rss_mb=raw["imported_rss_kb"] / 1024 if raw.get("imported_rss_kb") else None,
                        loaded_rss_mb=raw["loaded_rss_kb"] / 1024 if raw.get("loaded_rss_kb") else None,
                        end_anon_rss_mb=raw["end_rss_anon_kb"] / 1024 if raw.get("end_rss_anon_kb") else None,
                        end_file_rss_mb=raw["end_rss_file_kb"] / 1024 if raw.get("end_rss_file_kb") else None,
                        imported_torch=raw["imported_torch"], model_size_mb=size / 2**20, model_size_counted=counted,
                        datasets={d["name"]: report.summarize_dataset(raw["datasets"][d["name"]], d["refs"])
                                  for d in datasets})


def save_outputs(spec: EngineSpec, raw: dict, datasets: list[dict], out_txt: Path) -> dict:
    """An engine's greedy and beam outputs per test set, also written as text files."""
    out_txt.mkdir(exist_ok=True)
    outputs = {}
    for d in datasets:
        r = raw["datasets"][d["name"]]
        outputs[d["name"]] = {"greedy": r["greedy_outputs"], "beam": r["beam_outputs"]}
        for mode in ("greedy", "beam"):
            (out_txt / f"{spec.name}.{d['name']}.{mode}.txt").write_text(
                "\n".join(r[f"{mode}_outputs"]) + "\n", encoding="utf-8")
    return outputs


def measure_cold_starts(chosen: list[EngineSpec], engines: dict, cold_commands: dict[str, list[str]],
                        cfg: BenchConfig, log) -> None:
    """Each measured engine's cold start, into its entry (the PyTorch reference has none)."""
    commands = {}
    for spec in chosen:
        if engines[spec.name]["status"] != "ok":
            continue
        if spec.name in cold_commands:
            commands[spec.name] = cold_commands[spec.name]
        else:
            engines[spec.name]["cold_start"] = {"note": "not measured for the PyTorch reference"}
    if commands:
        log(f"cold starts: {len(commands)} engine{'s' * (len(commands) != 1)} x {cfg.cold_reps} fresh "
            f"process{'es' * (cfg.cold_reps != 1)}, in rounds")
        for name, result in cold_starts(commands, cfg).items():
            engines[name]["cold_start"] = result
