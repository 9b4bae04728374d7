"""`mt-train CONFIG [--resume | --init-from CHECKPOINT]`.

Exit status: 0 trained, 1 error (config, data, checkpoint, output, nothing to train), 2 usage, 3
training diverged (a NaN or infinite loss), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM); a
resumable checkpoint is saved before either, and the command that continues the run printed. torch is
imported only once a run starts, so `--help` and `--version` work without the `train` extra.
"""

from __future__ import annotations

import shlex
import signal
import sys

import click

from mtkit.runtime.cli_support import CommandError, command

EPILOG = "Exit status: 0 trained, 1 error, 2 usage, 3 training diverged, 130 interrupted, 143 terminated."


def resume_command(config, output_dir, overrides, epochs, max_steps) -> str:
    """The command that continues this run: its config and the options it was started with (--resume
    checks that they match), then --resume."""
    args = ["mt-train", config] + (["--output-dir", output_dir] if output_dir else [])
    args += [a for o in overrides for a in ("--set", o)]
    args += ["--epochs", str(epochs)] if epochs is not None else []
    args += ["--max-steps", str(max_steps)] if max_steps is not None else []
    return shlex.join(args + ["--resume"])


@command("mt-train", epilog=EPILOG)
@click.argument("config", type=click.Path(dir_okay=False))
@click.option("--resume", is_flag=True,
              help="Continue the run in the config's output_dir from checkpoints/last.pt, with the same --set "
                   "options (data, batching, model and learning rate must match; epochs and max steps may change).")
@click.option("--init-from", type=click.Path(dir_okay=False), default=None,
              help="Start from this checkpoint's weights and tokenizer (same architecture) with a fresh optimizer; "
                   "the LR schedule, steps and epochs continue from its own. For fine-tuning, a new learning "
                   "rate, or when a run's last.pt is lost.")
@click.option("--output-dir", default=None, help="Override the config's output_dir.")
@click.option("--max-steps", type=click.IntRange(min=1), default=None,
              help="Override optim.max_steps: the step to stop at, counted from the run's start (with --resume or "
                   "--init-from, including the checkpoint's steps).")
@click.option("--epochs", type=click.IntRange(min=1), default=None,
              help="Override optim.epochs: the epoch to end with, counted like --max-steps.")
@click.option("--set", "overrides", multiple=True, metavar="SECTION.KEY=VALUE",
              help="Override any config value, written as in TOML (repeatable), e.g. --set optim.max_tokens=16384.")
def main(config, resume, init_from, output_dir, max_steps, epochs, overrides):
    """Train a translation model described by a TOML CONFIG."""
    if resume and init_from:
        raise click.UsageError("--resume and --init-from exclude each other")
    from rich.console import Console
    from rich.markup import escape

    from mtkit.runtime.text_io import InputError

    from .checkpoint import CheckpointError
    from .config import RunConfig
    from .data import DataError
    from .loop import Interrupted, TrainingDiverged
    from .trainer import DeviceError, NothingToTrain, RunLocked, Trainer

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
        trainer.resume_command = resume_command(config, output_dir, overrides, epochs, max_steps)
        trainer.prepare(resume, init_from)
        summary = trainer.train()
    except (DataError, CheckpointError, DeviceError, FileExistsError, InputError, NothingToTrain, RunLocked) as e:
        raise CommandError(str(e)) from None
    except TrainingDiverged as e:
        console.print(f"[red]training diverged:[/] {escape(str(e))}", soft_wrap=True)
        sys.exit(3)
    except Interrupted as e:
        terminated = e.signum == signal.SIGTERM
        console.print(f"[yellow]{'terminated' if terminated else 'interrupted'}:[/] {escape(str(e))}", soft_wrap=True)
        sys.exit(143 if terminated else 130)
    if run.optim.max_steps and trainer.state.step >= run.optim.max_steps:
        # Without --max-steps, the continued run goes on to its epochs (or the config's max_steps).
        again = resume_command(config, output_dir, overrides, epochs, None)
        console.print(f"stopped at --max-steps {run.optim.max_steps} (step {trainer.state.step}): "
                      f"{escape(str(trainer.checkpoint_dir / 'last.pt'))}; continue with: {escape(again)}",
                      soft_wrap=True)
    if summary.get("final_checkpoint"):
        console.print(f"done: {escape(summary['final_checkpoint'])} (dev BLEU {summary['final_dev_bleu']:.2f})",
                      soft_wrap=True)


if __name__ == "__main__":
    main()
