"""The end of each epoch and of the run: keep the best `keep_best` epoch checkpoints by dev BLEU
and the last `average_last`, average those last ones, and make the better model `final.pt`."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from .state import BestEpoch, TrainingProgress


class Candidate(NamedTuple):
    """A model that may become final.pt."""
    name: str          # "best epoch" or "average of last N"
    bleu: float        # dev BLEU
    path: Path


def record_epoch(progress: TrainingProgress, bleu: float, path: Path) -> None:
    """Note an epoch's checkpoint and dev BLEU (`progress.epoch` already counts it)."""
    improved = not progress.best or bleu > progress.best[0].bleu
    progress.epochs_without_gain = 0 if improved else progress.epochs_without_gain + 1
    progress.best = sorted(progress.best + [BestEpoch(bleu, progress.epoch, str(path))], key=lambda b: -b.bleu)
    progress.epoch_checkpoints.append(str(path))


def prune_epoch_checkpoints(progress: TrainingProgress, keep_best: int, average_last: int) -> None:
    """Keep the best `keep_best` by BLEU and the last `average_last`; delete the rest."""
    keep = {b.path for b in progress.best[:keep_best]} | set(progress.epoch_checkpoints[-max(average_last, 1):])
    for p in progress.epoch_checkpoints:
        if p not in keep and Path(p).exists():
            Path(p).unlink()
    progress.best = [b for b in progress.best if b.path in keep]


def checkpoints_to_average(progress: TrainingProgress, average_last: int) -> list[Path]:
    """The last `average_last` epoch checkpoints still on disk; none unless there are two to average."""
    if average_last <= 1:
        return []
    last = [Path(p) for p in progress.epoch_checkpoints[-average_last:] if Path(p).exists()]
    return last if len(last) > 1 else []
