"""`mt-grow SOURCE OUT [--encoder-layers N] [--decoder-layers N] [--ffn-dim N]`: a bigger
model that starts out computing exactly what SOURCE computes, to train on with `mt-train --init-from`.

Growing keeps what a trained model knows and adds room to learn more (Chen et al., 2016, "Net2Net"):
- a new layer is a pre-norm residual block whose output projections are zero, so it adds nothing
  until training moves them; new layers are spread evenly between the old ones;
- wider FFNs get new hidden units whose output weights are zero.
The new units' other weights start as a fresh model's do, so their gradients are not zero. Only
pre-norm models grow this way: in a post-norm block the layer norm follows the residual sum.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from mtkit.runtime.cli_support import CommandError, command
from mtkit.runtime.text_io import blocking_file

# The projections that end each residual branch: zero, the branch adds nothing.
BRANCH_OUTPUTS = {"encoder_layers": ("self_attn.out", "ffn.fc2"),
                  "decoder_layers": ("self_attn.out", "cross_attn.out", "ffn.fc2")}


def spread(old: int, new: int) -> list[int | None]:
    """Where each of the `new` layers comes from: an old layer's index, or None for an added one,
    the added ones spread evenly (old 6, new 8: 0 1 2 None 3 4 5 None)."""
    added = new - old
    slots: list[int | None] = []
    for i in range(old):
        slots.append(i)
        # after old layer i, as many added layers as bring the count to round((i + 1) * added / old)
        while sum(s is None for s in slots) < round((i + 1) * added / old):
            slots.append(None)
    return slots


def grow_state(source: dict, old_cfg, new_cfg, fresh: dict) -> dict:
    """The grown model's state dict: `source` where it has the weights, `fresh` (a new model of the
    grown shape, fp32) elsewhere, with the branch outputs of added layers and units zeroed; fp32
    throughout (source values are cast as they are copied in)."""
    grown = {k: v.clone() for k, v in fresh.items()}
    for stack in ("encoder_layers", "decoder_layers"):
        for new_index, old_index in enumerate(spread(getattr(old_cfg, stack), getattr(new_cfg, stack))):
            prefix = f"{stack}.{new_index}."
            if old_index is None:
                for name in BRANCH_OUTPUTS[stack]:
                    grown[f"{prefix}{name}.weight"].zero_()
                    grown[f"{prefix}{name}.bias"].zero_()
                continue
            for key, value in source.items():
                if key.startswith(f"{stack}.{old_index}."):
                    target = grown[prefix + key.removeprefix(f"{stack}.{old_index}.")]
                    if key.endswith("ffn.fc2.weight"):        # [d_model, ffn]: the new units' columns stay zero
                        target.zero_()
                        target[:, :value.shape[1]] = value
                    else:                                     # fc1 rows and bias: the old units first
                        target[tuple(slice(0, n) for n in value.shape)] = value
    for key, value in source.items():
        if not key.startswith(("encoder_layers.", "decoder_layers.")):
            grown[key] = value.to(grown[key].dtype).clone()
    return grown


def grow_checkpoint(source_path: Path, out: Path, encoder_layers: int | None = None, decoder_layers: int | None = None,
                    ffn_dim: int | None = None, seed: int = 0) -> object:
    """Write the grown checkpoint to `out` (no optimizer state; progress kept) and return its config.
    ValueError for a shape that would shrink, or a post-norm model."""
    import torch

    from .checkpoint import load_checkpoint
    from .model import Transformer

    ckpt = load_checkpoint(source_path)
    old = ckpt.model_config
    new = replace(old, encoder_layers=encoder_layers or old.encoder_layers,
                  decoder_layers=decoder_layers or old.decoder_layers, ffn_dim=ffn_dim or old.ffn_dim)
    if not old.pre_norm:
        raise ValueError(f"{source_path}: a post-norm model cannot grow without changing what it computes")
    for field in ("encoder_layers", "decoder_layers", "ffn_dim"):
        if getattr(new, field) < getattr(old, field):
            raise ValueError(f"{field} {getattr(new, field)} is smaller than the model's {getattr(old, field)}; "
                             "growing only adds")
    if new == old:
        raise ValueError("nothing to grow: give a larger --encoder-layers, --decoder-layers or --ffn-dim")
    torch.manual_seed(seed)
    fresh = Transformer(new).state_dict()
    ckpt.model = grow_state(ckpt.model, old, new, fresh)
    ckpt.model_config = new
    ckpt.resume = ckpt.ema_updates = None
    ckpt.averaged_from = None
    ckpt.save(out)
    return new


@command("mt-grow")
@click.argument("source", type=click.Path(dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--encoder-layers", type=click.IntRange(min=1), help="Encoder layers of the grown model.")
@click.option("--decoder-layers", type=click.IntRange(min=1), help="Decoder layers of the grown model.")
@click.option("--ffn-dim", type=click.IntRange(min=1), help="FFN width of every layer of the grown model.")
@click.option("--force", is_flag=True, help="Replace an existing OUT.")
def main(source, out, encoder_layers, decoder_layers, ffn_dim, force):
    """Write OUT, SOURCE grown to a bigger shape that computes the same translations, e.g.
    `--encoder-layers 10 --ffn-dim 2048`; then train it with `mt-train CONFIG --init-from OUT
    --set model.encoder_layers=10 --set model.ffn_dim=2048`."""
    from .checkpoint import CheckpointError, not_replaceable

    if why := not_replaceable(Path(out)):       # a device or a directory: not even with --force
        raise CommandError(why)
    if Path(out).exists() and not force:
        raise CommandError(f"{out} exists (use --force to replace it)")
    if (blocker := blocking_file(out)) is not None:
        raise CommandError(f"{blocker}: not a directory")
    try:
        cfg = grow_checkpoint(Path(source), Path(out), encoder_layers, decoder_layers, ffn_dim)
    except (CheckpointError, ValueError) as e:
        raise CommandError(str(e)) from None
    grown = {"encoder_layers": encoder_layers, "decoder_layers": decoder_layers, "ffn_dim": ffn_dim}
    sets = " ".join(f"--set model.{k}={v}" for k, v in grown.items() if v is not None)
    click.echo(f"wrote {out}: {cfg.encoder_layers} encoder and {cfg.decoder_layers} decoder layers, FFN {cfg.ffn_dim}; "
               f"train it with mt-train CONFIG --init-from {out} {sets}")


if __name__ == "__main__":
    main()
