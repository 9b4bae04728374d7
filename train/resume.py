"""Starting a run from a checkpoint.

`--resume` continues this run exactly from its `last.pt`: weights, optimizer, LR schedule, progress
and every random generator. `--init-from` (a warm start) takes another checkpoint's weights (the
trainer copies its tokenizer too) with a fresh optimizer, and continues the LR schedule from that
checkpoint's step.
"""

from __future__ import annotations

import random
from pathlib import Path

import torch

from .checkpoint import Checkpoint, CheckpointError, load_checkpoint, load_model
from .model import ModelConfig
from .state import TrainingProgress


def rng_state() -> dict:
    """The random generators' states, saved in `last.pt` so that a resumed run draws the same numbers."""
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "python": list(random.getstate()[1]),
        "python_pos": random.getstate()[2],
    }


def set_rng_state(rng: dict) -> None:
    torch.set_rng_state(rng["torch"].cpu())
    if rng["cuda"]:
        torch.cuda.set_rng_state_all([s.cpu() for s in rng["cuda"]])
    random.setstate((3, tuple(rng["python"]), rng["python_pos"]))


def restore(path: Path, model, optimizer, scheduler, device) -> TrainingProgress:
    """Load `last.pt` into the model, optimizer, scheduler and random generators; return its progress."""
    ckpt = load_checkpoint(path, map_location=device)
    if ckpt.resume is None:
        raise CheckpointError(f"{path}: has no optimizer state to resume from")
    model.load_state_dict(ckpt.model)
    optimizer.load_state_dict(ckpt.resume.optimizer)
    scheduler.load_state_dict(ckpt.resume.scheduler)
    set_rng_state(ckpt.resume.rng)
    return ckpt.progress


def load_warm_start(path: Path, model_config: ModelConfig) -> Checkpoint:
    """The checkpoint to start from; CheckpointError unless it is a usable model of `model_config`'s shape."""
    ckpt, _ = load_model(path)
    ours = {k: v for k, v in model_config.to_dict().items() if k != "vocab_size"}
    theirs = {k: ckpt.model_config.to_dict().get(k) for k in ours}
    if ours != theirs:
        diff = ", ".join(f"{k}: {theirs[k]!r} there, {ours[k]!r} here" for k in ours if ours[k] != theirs[k])
        raise CheckpointError(f"{path}: its model differs from this config ({diff})")
    return ckpt


def warm_start(ckpt: Checkpoint, model, optimizer, scheduler, progress: TrainingProgress) -> None:
    """Take `ckpt`'s weights and move the schedule to its step; the optimizer stays fresh, so the LR
    ramps up again from there (`state.REWARM_STEPS`)."""
    model.load_state_dict(ckpt.model)  # copies into our fp32 parameters, whatever it was stored in
    progress.step = progress.rewarm_from = ckpt.progress.step
    progress.epoch = ckpt.progress.epoch
    scheduler.last_epoch = progress.step
    for group, base in zip(optimizer.param_groups, scheduler.base_lrs):
        group["lr"] = base * scheduler.lr_lambdas[0](progress.step)
