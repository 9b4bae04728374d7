"""`python -m mtkit.train.average OUT CHECKPOINT[:WEIGHT]...`: one checkpoint from the weighted mean of
several of the same model (shape and tokenizer).

Equal weights average the checkpoints of one run, as `average_last` does at the end of training. Two
runs that start from the same weights can be interpolated too: a model fine-tuned on new data, mixed
with the model it started from, keeps much of what the fine-tuning forgot (Wortsman et al., 2022,
"Robust fine-tuning of zero-shot models"); the shipped de-en model is made this way (its card).
"""

from __future__ import annotations

import math
from pathlib import Path

import click

from mtkit.runtime.cli_support import CommandError, command


def parse_weighted(spec: str) -> tuple[Path, float]:
    """'path.pt:0.5' -> (path.pt, 0.5); a bare path weighs 1."""
    path, sep, weight = spec.rpartition(":")
    if not sep or not path:
        return Path(spec), 1.0
    try:
        value = float(weight)
    except ValueError:
        return Path(spec), 1.0          # a ':' inside the path itself
    if not math.isfinite(value) or value <= 0:  # nan passes `<= 0` and would make every weight nan
        raise CommandError(f"{spec}: a weight must be a finite number > 0")
    return Path(path), value


def average_checkpoints(inputs: list[tuple[Path, float]], out: Path) -> None:
    """Write the weighted mean of `inputs` to `out`, with the first input's metadata and no optimizer
    state. CheckpointError if the inputs differ in shape or tokenizer."""
    from .checkpoint import CheckpointError, average_state_dicts, load_checkpoint, shape_differences

    first = load_checkpoint(inputs[0][0])
    for path, _ in inputs[1:]:
        other = load_checkpoint(path)
        if diff := shape_differences(first.model_config, other.model_config):   # dropout may differ
            raise CheckpointError(f"{path}: another model shape than {inputs[0][0]} ({diff}); "
                                  "only the same model averages")
        if other.tokenizer_model != first.tokenizer_model:
            raise CheckpointError(f"{path}: another tokenizer than {inputs[0][0]}; only the same model averages")
    paths, weights = [p for p, _ in inputs], [w for _, w in inputs]
    first.model = average_state_dicts(paths, weights)
    first.resume, first.ema_updates = None, None
    first.averaged_from = [f"{p} x {w / sum(weights):g}" for p, w in inputs]
    first.save(out)


@command("mt-average")
@click.argument("out", type=click.Path(dir_okay=False))
@click.argument("checkpoints", nargs=-1, required=True, metavar="CHECKPOINT[:WEIGHT]...")
@click.option("--force", is_flag=True, help="Replace an existing OUT.")
def main(out, checkpoints, force):
    """Write OUT, the weighted mean of CHECKPOINTS (same shape and tokenizer; weights default to 1 and
    are normalised), e.g. `shipped.pt:0.5 finetuned.pt:0.5`."""
    from mtkit.runtime.text_io import cannot_write

    from .checkpoint import CheckpointError, not_replaceable

    if why := not_replaceable(Path(out)):       # a device or a directory: not even with --force
        raise CommandError(why)
    if Path(out).exists() and not force:
        raise CommandError(f"{out} exists (use --force to replace it)")
    if why := cannot_write(Path(out)):          # before reading the checkpoints
        raise CommandError(why)
    inputs = [parse_weighted(spec) for spec in checkpoints]
    if len(inputs) < 2:
        raise CommandError("give at least two checkpoints to average")
    if not math.isfinite(sum(w for _, w in inputs)):   # each is finite, but 1e308 + 1e308 is not
        raise CommandError("the weights must add up to a finite number; scale them down")
    try:
        average_checkpoints(inputs, Path(out))
    except CheckpointError as e:
        raise CommandError(str(e)) from None
    click.echo(f"wrote {out}: " + ", ".join(f"{p} x {w / sum(w for _, w in inputs):g}" for p, w in inputs))


if __name__ == "__main__":
    main()
