"""`mt-bench`: one checkpoint through PyTorch, ONNX Runtime and CTranslate2, speed side by side.

Needs the `train` and `bench` extras (torch, ctranslate2) and onnxruntime; `--help` and `--version`
work without them. Exit statuses: EPILOG below.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from mtkit.runtime.cli_options import DATA_DIR
from mtkit.runtime.cli_support import CommandError, command, require
from mtkit.runtime.decode_options import DecodeOptions

from .bench import DATASETS, BenchConfig, BenchError, run_benchmark
from .engines import ENGINES, EXTRA_ENGINES

EPILOG = ("Exit status: 0 done, 1 error, an engine failed or none was measured, 2 usage, 130 interrupted, "
          "143 terminated.")
# What each kind of engine imports (all of them need torch: mt-bench exports the checkpoint itself).
MODULES = {"torch": "torch", "ort": "onnxruntime", "ct2": "ctranslate2"}


def _command(value: str) -> list[str]:
    try:
        return shlex.split(value)
    except ValueError as e:      # an unclosed quote
        raise click.BadParameter(f"{value!r}: {e}", param_hint="--launcher") from None


def _names(value: str) -> list[str]:
    """Comma-separated names, each once."""
    return list(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))


@command("mt-bench", epilog=EPILOG)
@click.argument("checkpoint", type=click.Path(path_type=Path))
@click.option("-o", "--out", "out_dir", type=click.Path(path_type=Path), default=None,
              help="Results directory (default: benchmarks/results/<machine>/ in a checkout, where results "
                   "are committed, else ./mt-bench-results/<machine>/).")
@click.option("--work-dir", type=click.Path(path_type=Path), default=None,
              help="Where the bundle, CT2 models, outputs and worker files go (default: bench/<checkpoint-stem>-<hash> "
                   "in mtkit's cache, ~/.cache/mtkit; reused while newer than the checkpoint).")
@DATA_DIR
@click.option("--datasets", default=",".join(DATASETS), show_default=True,
              help=f"Comma-separated test sets ({', '.join(DATASETS)}).")
@click.option("--from", "src_lang", default="de", show_default=True, metavar="LANG",
              help="Source language of the test sets.")
@click.option("--to", "tgt_lang", default="en", show_default=True, metavar="LANG",
              help="Target language of the test sets.")
@click.option("--limit", type=click.IntRange(0), default=200, show_default=True,
              help="Sentences per test set (0 = all).")
@click.option("--threads", type=click.IntRange(1), default=2, show_default=True, help="Threads per engine.")
@click.option("--reps", type=click.IntRange(1), default=3, show_default=True, help="Timed repetitions.")
@click.option("--warmup", type=click.IntRange(0), default=3, show_default=True,
              help="Untimed warm-up translations before timing.")
@click.option("--beam-size", type=click.IntRange(1), default=DecodeOptions.beam_size, show_default=True,
              help="Beam for throughput.")
@click.option("--batch-size", type=click.IntRange(1), default=32, show_default=True,
              help="Sentences per request for throughput.")
@click.option("--cold-reps", type=click.IntRange(1), default=3, show_default=True,
              help="Fresh processes timed for the cold start.")
@click.option("--engines", default=None,
              help=f"Comma-separated engines (default: all but {', '.join(e.name for e in EXTRA_ENGINES)}; GPU ones "
                   f"skip without CUDA): {', '.join(ENGINES)}.")
@click.option("--bundle", type=click.Path(path_type=Path), default=None,
              help="Use this bundle, exported from CHECKPOINT, instead of exporting one.")
@click.option("--ct2-dir", type=click.Path(path_type=Path), default=None,
              help="Use these CT2 conversions (a directory with float32/ and int8/) instead of converting.")
@click.option("--rebuild", is_flag=True,
              help="Export and convert again even if the work dir has fresh ones (not what --bundle or "
                   "--ct2-dir gives).")
@click.option("--timeout", type=click.IntRange(1), default=3600, show_default=True,
              help="Seconds allowed per engine process.")
@click.option("--machine-name", default=None,
              help="The machine's name in the results, and of the default results subdirectory "
                   "(default: from the CPU).")
@click.option("--launcher", default="", metavar="COMMAND",
              help="A command prefix for every engine process (split as a shell would), e.g. 'taskset -c 0,1' "
                   "or devtools/avx2-only; the cold starts include its start-up.")
def main(checkpoint, out_dir, work_dir, data_dir, datasets, src_lang, tgt_lang, limit, threads, reps, warmup,
         beam_size, batch_size, cold_reps, engines, bundle, ct2_dir, rebuild, timeout, machine_name, launcher):
    """Benchmark CHECKPOINT (a .pt from mt-train) on every engine, with the same sentences and settings;
    write results.json, results.md and results.png."""
    names = _names(engines) if engines is not None else None          # [] (--engines ,) is an error
    require("torch", *sorted({MODULES[ENGINES[n].kind] for n in (ENGINES if names is None else names)
                                if n in ENGINES}))
    cfg = BenchConfig(checkpoint=checkpoint, out_dir=out_dir, work_dir=work_dir, data_dir=data_dir,
                      datasets=_names(datasets), src_lang=src_lang, tgt_lang=tgt_lang, limit=limit,
                      threads=threads, reps=reps, warmup=warmup, beam_size=beam_size, batch_size=batch_size,
                      cold_reps=cold_reps, engines=names, bundle=bundle,
                      ct2_dir=ct2_dir, rebuild=rebuild, timeout=timeout, machine_name=machine_name,
                      launcher=_command(launcher))
    try:
        results, out = run_benchmark(cfg, log=lambda message: click.echo(message, err=True))
    except BenchError as e:
        raise CommandError(str(e)) from None
    failed = [n for n, e in results["engines"].items() if e["status"] == "failed"]
    click.echo(f"results: {out}/results.md (.json, .png); outputs: {results['work_dir']}/outputs/")
    if failed:
        raise CommandError(f"engine(s) failed: {', '.join(failed)} (see {out}/results.md)")


if __name__ == "__main__":
    main()
