"""Checkpoint files: written atomically, self-describing, and loadable without unpickling code.

A checkpoint records the run config, the model config, the tokenizer (path and the serialized
SentencePiece model, so export needs nothing else) and, for resuming, the optimizer, scheduler,
RNG states and data position.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

FORMAT = "mtkit-checkpoint"
VERSION = 1


class CheckpointError(Exception):
    """A missing, corrupt or incompatible checkpoint; the message names the file."""


def save_checkpoint(payload: dict, path: Path) -> None:
    """Write to a temporary file in the same directory, then rename: a crash never leaves a half file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save({"format": FORMAT, "version": VERSION, **payload}, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: Path, map_location="cpu") -> dict:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint")
    try:
        ckpt = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:  # torch raises many types for truncated or foreign files
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(e).__name__}: {str(e).splitlines()[0][:200]})") from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not an mtkit checkpoint")
    if ckpt.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint version {ckpt.get('version')!r} is not supported (expected {VERSION})")
    return ckpt


def load_model(path: Path):
    """The checkpoint dict and its model in eval mode. CheckpointError for anything unusable."""
    from .model import ModelConfig, Transformer

    path = Path(path)
    ckpt = load_checkpoint(path)
    missing = [k for k in ("model", "model_config", "tokenizer_model", "language_tags") if k not in ckpt]
    if missing:
        raise CheckpointError(f"{path}: checkpoint lacks {', '.join(missing)}; cannot use it as a model")
    try:
        model = Transformer(ModelConfig(**ckpt["model_config"]))
        model.load_state_dict(ckpt["model"])
    except (TypeError, AssertionError, RuntimeError) as e:
        raise CheckpointError(f"{path}: model does not match its config ({type(e).__name__}: "
                              f"{str(e).splitlines()[0][:200]})") from None
    return ckpt, model.eval()


def average_state_dicts(paths: list[Path]) -> dict:
    """The element-wise mean of the models in `paths` (checkpoint averaging)."""
    total = None
    for p in paths:
        state = load_checkpoint(p)["model"]
        if total is None:
            total = {k: v.clone().double() for k, v in state.items()}
        else:
            for k, v in state.items():
                total[k] += v.double()
    return {k: (v / len(paths)).to(torch.float32) for k, v in total.items()}
