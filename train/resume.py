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

from .checkpoint import Checkpoint, CheckpointError, load_checkpoint, load_model, shape_differences
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


# What a resumed run must share with the run it continues. The saved data position (epoch, batch)
# indexes batches made from the data and batching settings, and the optimizer and scheduler states
# carry the learning rate (a new one would be silently overwritten), so a change is refused rather
# than warned about: it would skip or repeat data, or be ignored. `--init-from` is the way to change
# them (a fresh optimizer). Label smoothing, clipping and precision change what every step computes, so a
# resumed run would silently become another run. Epochs, max steps, evaluation and logging may change.
SAME_ON_RESUME = ("languages", "data", "tokenizer", "model", "optim.max_tokens", "optim.accum_steps", "optim.seed",
                  "optim.lr", "optim.warmup_steps", "optim.betas", "optim.weight_decay", "optim.label_smoothing",
                  "optim.clip_norm", "optim.precision")
FREE_ON_RESUME = ("data.data_dir", "model.vocab_size")  # the corpora may move; the vocabulary comes from last.pt


def _flat(raw: dict, prefix: str = "") -> dict:
    """{"optim.lr": 0.001, ...}; lists and tuples compare as lists."""
    flat = {}
    for key, value in raw.items():
        if isinstance(value, dict):
            flat |= _flat(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = list(value) if isinstance(value, (list, tuple)) else value
    return flat


def check_same_run(path: Path, saved: dict, ours: dict) -> None:
    """CheckpointError naming the `SAME_ON_RESUME` settings in which config `ours` differs from the run
    config `saved` in `path` (nothing to compare for a checkpoint that has none)."""
    saved, ours = _flat(saved), _flat(ours)
    keys = [k for k in ours if k in saved and k not in FREE_ON_RESUME
            and any(k == s or k.startswith(s + ".") for s in SAME_ON_RESUME)]
    diff = [f"{k} ({saved[k]!r} there, {ours[k]!r} here)" for k in keys if saved[k] != ours[k]]
    if diff:
        raise CheckpointError(f"{path}: --resume needs the run's own settings, these differ: {'; '.join(diff)}; "
                              f"pass the --set options the run was started with, or start a new run from it "
                              f"with --init-from (a fresh optimizer)")


def load_resume(path: Path, run_config: dict, device) -> Checkpoint:
    """The `last.pt` to resume; CheckpointError unless it exists, has the optimizer state and was
    trained with `run_config`'s settings (`check_same_run`)."""
    if not Path(path).is_file():
        raise CheckpointError(f"{path}: no such checkpoint, so nothing to resume; start the run without --resume")
    ckpt = load_checkpoint(path, map_location=device)
    if ckpt.resume is None:
        raise CheckpointError(f"{path}: has no optimizer state to resume from")
    check_same_run(path, ckpt.run_config, run_config)
    return ckpt


def check_same_data(path: Path, ckpt: Checkpoint, fingerprint: str) -> None:
    """CheckpointError if the run in `path` trained on other data than `fingerprint` describes (the
    batches would differ from the ones its data position counts); older checkpoints have no record."""
    saved = ckpt.resume.data
    if saved is not None and saved != fingerprint:
        raise CheckpointError(f"{path}: the training data changed since this run was saved ({saved} there, "
                              f"{fingerprint} here), so --resume would not continue it; start a new run from "
                              f"its weights with --init-from {path} --output-dir NEW_DIR")


def restore(ckpt: Checkpoint, model, optimizer, scheduler) -> TrainingProgress:
    """Load `last.pt` (from `load_resume`) into the model, optimizer, scheduler and random generators;
    return its progress."""
    model.load_state_dict(ckpt.model)
    optimizer.load_state_dict(ckpt.resume.optimizer)
    scheduler.load_state_dict(ckpt.resume.scheduler)
    set_rng_state(ckpt.resume.rng)
    progress = ckpt.progress
    # Older runs stored the epoch checkpoints as paths from the working directory of the time: keep their
    # file names only, which name them in this run's checkpoint directory wherever it is now.
    progress.epoch_checkpoints = [Path(p).name for p in progress.epoch_checkpoints]
    progress.best = [b._replace(path=Path(b.path).name) for b in progress.best]
    return progress


def load_warm_start(path: Path, model_config: ModelConfig) -> Checkpoint:
    """The checkpoint to start from; CheckpointError unless it is a usable model of `model_config`'s shape."""
    ckpt, _ = load_model(path)
    diff = shape_differences(model_config, ckpt.model_config, ignore=("vocab_size",))    # dropout may change
    if diff:
        # mt-grow adds layers and FFN width, nothing else: it is the way only when that is all that differs.
        grown = ("encoder_layers", "decoder_layers", "ffn_dim")
        grows = (not shape_differences(model_config, ckpt.model_config, ignore=("vocab_size", *grown))
                 and all(getattr(model_config, f) >= getattr(ckpt.model_config, f) for f in grown))
        hint = "; to train it at a bigger depth or FFN width, grow it first (mt-grow)" if grows else ""
        raise CheckpointError(f"{path}: its model differs from this config ({diff}){hint}")
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
