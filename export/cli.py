"""mt-export: turn a training checkpoint into a model bundle for the torch-free runtime.

Exit status: 0 written, 1 error (checkpoint, output, arguments, invalid graph, a full disk), 2 usage,
3 parity failed, 130 interrupted, 143 terminated (SIGTERM); in every failure nothing is left at the
output path. torch and rich are imported once an export starts, so `--help` and `--version` work
without the `train` extra.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mtkit.runtime.cli_support import CommandError, command

# ReduceMax takes its axes as an input from opset 18 (search_head.py, int8.py); 17 fails the graph check.
MIN_OPSET = 18
EPILOG = "Exit status: 0 written, 1 error, 2 usage, 3 parity failed, 130 interrupted, 143 terminated."


@command("mt-export", epilog=EPILOG)
@click.argument("checkpoint", type=click.Path(path_type=Path))
@click.option("-o", "--out", type=click.Path(path_type=Path), default=None,
              help="Bundle directory to write (default: <checkpoint-stem>-bundle next to the checkpoint).")
@click.option("--quantize", type=click.Choice(["int8"]), default=None, help="Also write dynamic int8 graphs.")
@click.option("--fp16", is_flag=True, help="Also write fp16 graphs (for the CUDA provider).")
@click.option("--opset", type=click.IntRange(MIN_OPSET, 23), default=None,
              help=f"ONNX opset to export with ({MIN_OPSET}+: the int8 graphs and the search head give ReduceMax its "
                   "axes as an input; default: the one the exporter is tested with).")
@click.option("--parity-data", type=click.Path(path_type=Path), default=None,
              help="Sentences for the parity check: one source per line, or TSV source<TAB>reference "
                   "(default: the checkpoint's dev set).")
@click.option("--to", "target_lang", default=None,
              help="Target language of the parity sentences (default: that of the run's dev set).")
@click.option("--max-sentences", type=click.IntRange(1), default=100, show_default=True,
              help="Parity sentences used at most.")
@click.option("--lexicon-data", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Run config whose training data's word counts go into the bundle, for --from auto "
                   "(default: the checkpoint's own run, when its data is readable).")
@click.option("--force", is_flag=True, help="Replace an existing output.")
@click.option("--archive", is_flag=True, help="Write a .tar.gz of the bundle instead of a directory.")
@click.option("--ship", is_flag=True,
              help="Write the edge bundle for models/: int8 graphs plus the checkpoint in half precision "
                   "(fp32 graphs dropped; rebuild them from that checkpoint).")
def main(checkpoint, out, quantize, fp16, opset, parity_data, target_lang, max_sentences, lexicon_data, force, archive,
         ship):
    """Export CHECKPOINT (a .pt written by mt-train) to ONNX graphs, tokenizer, config.json and a
    parity report, checked against the PyTorch model before anything is written."""
    if ship and (archive or fp16):
        raise click.UsageError("--ship writes a directory with int8 graphs; drop --archive / --fp16")
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from mtkit.train.checkpoint import CheckpointError, checkpoint_hint

    from .api import export_bundle, target_path
    from .bundle import ExportError
    from .parity import ParityError
    from .ship import ship_bundle

    if checkpoint.is_dir():  # now: the default output is named after it, which fails for `.`
        raise CommandError(f"{checkpoint}: is a directory; {checkpoint_hint(checkpoint)}")
    console = Console(stderr=True)
    target = target_path(checkpoint, out, archive)
    # The steps are plain text that quotes paths and errors: never markup.
    progress = Progress(SpinnerColumn(finished_text="[green]✓"), TextColumn("{task.description}", markup=False),
                        TimeElapsedColumn(), console=console)
    tasks = []

    def step(message: str) -> None:
        """A new step begins: the previous one is done."""
        if tasks:
            progress.update(tasks[-1], completed=1, total=1)
        tasks.append(progress.add_task(message, total=None))

    try:
        with progress:
            options = dict(parity_data=parity_data, force=force, target_lang=target_lang, max_sentences=max_sentences,
                           lexicon_data=lexicon_data, progress=step, **({"opset": opset} if opset else {}))
            if ship:
                report = ship_bundle(checkpoint, target, **options)
            else:
                report = export_bundle(checkpoint, out, quantize=quantize, fp16=fp16, archive=archive, **options)
            progress.update(tasks[-1], completed=1, total=1)
    except (CheckpointError, ExportError) as e:
        raise CommandError(str(e)) from None
    except ParityError as e:
        if e.report:
            console.print(parity_table(e.report))
        console.print(f"[red]parity check failed:[/] {escape(str(e))}\nnothing was written to {escape(str(target))}",
                      highlight=False, soft_wrap=True)
        sys.exit(3)
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted[/]: nothing was written to {escape(str(target))}", soft_wrap=True)
        sys.exit(130)

    console.print(files_table(report))
    console.print(parity_table(report.parity))
    console.print(f"[green]bundle written:[/] {escape(str(report.path))}", highlight=False, soft_wrap=True)


def files_table(report):
    from rich.table import Table

    table = Table(title="bundle files")
    table.add_column("file")
    table.add_column("size", justify="right")
    for name, size in report.files.items():
        table.add_row(name, human_size(size))
    table.add_row("[bold]total", f"[bold]{human_size(sum(report.files.values()))}")
    return table


def parity_table(parity: dict):
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"parity on {parity['sentences']} sentences ({escape(str(parity['source']))}, into {parity['target_lang']}); "
                        f"PyTorch BLEU {fmt(parity['pytorch_bleu'])}",
                  caption="same: outputs equal to PyTorch's, token for token; (N real): N differ beyond a near-tie. "
                          "fp32 must have none; int8 and fp16 are measured, not required.", caption_justify="left")
    # "same": share of sentences whose output equals PyTorch's token for token, with the number that
    # differ beyond a near-tie in brackets (see runtime/agreement.py); Δ BLEU is vs fp32.
    for column in ("variant", "max |Δ logit|", "greedy same", f"beam-{parity['beam_size']} same", "BLEU", "Δ BLEU"):
        table.add_column(column, justify="left" if column == "variant" else "right")
    for variant, r in parity["variants"].items():
        if not r.get("run"):
            table.add_row(variant, "[dim]not run", "", "", "", "", end_section=False)
            continue
        diff = r["max_abs_logit_diff"]
        same = [f"{r[f'{s}_match_rate']:.0%}" + (f" ({len(r[f'{s}_differences'])} real)" if r.get(f"{s}_differences") else "")
                for s in ("greedy", "beam")]
        table.add_row(variant, f"{diff:.2e}", *same, fmt(r["bleu"]), fmt(r.get("bleu_delta_vs_fp32"), signed=True))
    return table


def fmt(value, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def human_size(n: int) -> str:
    for unit in ("B", "KB", "MB"):
        if n < 1024 or unit == "MB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} MB"


if __name__ == "__main__":
    main()
