"""`mt-train CONFIG [--resume | --init-from CHECKPOINT]`.

Exit status: 0 trained, 1 error (config, data, checkpoint, output), 2 usage, 3 training diverged
(a NaN or infinite loss), 130 interrupted (a resumable checkpoint is saved first). torch is
imported only once a run starts, so `--help` and `--version` work without the `train` extra.
"""

from __future__ import annotations

import sys

import click

from mtkit.runtime.cli_support import CommandError, command

EPILOG = "Exit status: 0 trained, 1 error, 2 usage, 3 training diverged, 130 interrupted."


@command("mt-train", epilog=EPILOG)
@click.argument("config", type=click.Path(dir_okay=False))
@click.option("--resume", is_flag=True, help="Continue the run in the config's output_dir from checkpoints/last.pt.")
@click.option("--init-from", type=click.Path(dir_okay=False), default=None,
              help="Start from this checkpoint's weights and tokenizer (same architecture) with a fresh optimizer; "
                   "the LR schedule continues from its step. For fine-tuning, or when a run's last.pt is lost.")
@click.option("--output-dir", default=None, help="Override the config's output_dir.")
@click.option("--max-steps", type=int, default=None, help="Override optim.max_steps.")
@click.option("--epochs", type=int, default=None, help="Override optim.epochs.")
@click.option("--set", "overrides", multiple=True, metavar="SECTION.KEY=VALUE",
              help="Override any config value, written as in TOML (repeatable), e.g. --set optim.max_tokens=16384.")
def main(config, resume, init_from, output_dir, max_steps, epochs, overrides):
    """Train a translation model described by a TOML CONFIG."""
    if resume and init_from:
        raise click.UsageError("--resume and --init-from exclude each other")
    from rich.console import Console
    from rich.markup import escape

    from .checkpoint import CheckpointError
    from .config import RunConfig
    from .data import DataError
    from .loop import Interrupted, TrainingDiverged
    from .trainer import Trainer

    console = Console(stderr=True)
    try:
        run = RunConfig.load(config, overrides)
        if output_dir:
            run.output_dir = output_dir
        if max_steps is not None:
            run.optim.max_steps = max_steps
        if epochs is not None:
            run.optim.epochs = epochs
        trainer = Trainer(run, console)
        trainer.prepare(resume, init_from)
        summary = trainer.train()
    except (DataError, CheckpointError, FileExistsError) as e:
        raise CommandError(str(e)) from None
    except TrainingDiverged as e:
        console.print(f"[red]training diverged:[/] {escape(str(e))}", soft_wrap=True)
        sys.exit(3)
    except Interrupted as e:
        console.print(f"[yellow]interrupted:[/] {escape(str(e))}", soft_wrap=True)
        sys.exit(130)
    if summary.get("final_checkpoint"):
        console.print(f"done: {summary['final_checkpoint']} (dev BLEU {summary['final_dev_bleu']:.2f})")


if __name__ == "__main__":
    main()
