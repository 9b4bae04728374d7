"""Where training stands, and the learning-rate schedule that reads it.

`TrainingProgress` is saved in every checkpoint (see checkpoint.py), so `--resume` continues
exactly and `--init-from` continues the schedule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

REWARM_STEPS = 100  # after --init-from: fresh Adam moments must not take full-size steps at once


class BestEpoch(NamedTuple):
    """An epoch checkpoint kept for its dev BLEU."""
    bleu: float
    epoch: int
    path: str          # its file name in the run's checkpoints/ (older runs: a path; only its name counts)


@dataclass
class TrainingProgress:
    step: int = 0
    epoch: int = 0                                  # epochs finished
    batch_in_epoch: int = 0
    best: list[BestEpoch] = field(default_factory=list)    # best dev BLEU first
    epochs_without_gain: int = 0
    epoch_checkpoints: list[str] = field(default_factory=list)   # file names in checkpoints/, as BestEpoch.path
    rewarm_from: int | None = None                  # step at which --init-from restarted the optimizer

    def to_dict(self) -> dict:
        """Plain types only (lists, not BestEpoch), so the checkpoint loads with weights_only."""
        return {"step": self.step, "epoch": self.epoch, "batch_in_epoch": self.batch_in_epoch,
                "best": [list(b) for b in self.best], "epochs_without_gain": self.epochs_without_gain,
                "epoch_checkpoints": list(self.epoch_checkpoints), "rewarm_from": self.rewarm_from}

    @classmethod
    def from_dict(cls, raw: dict) -> TrainingProgress:
        return cls(**{**raw, "best": [BestEpoch(*b) for b in raw.get("best", [])]})


def inverse_sqrt_schedule(warmup: int, rewarm_from=lambda: None):
    """Linear warmup to the peak LR, then decay with 1/sqrt(step) (the Noam shape, peak set directly).
    `rewarm_from()` gives the step where a warm start reset the optimizer; the LR ramps up again there."""
    def factor(step: int) -> float:
        start = rewarm_from()
        ramp = 1.0 if start is None else min(1.0, (step - start + 1) / REWARM_STEPS)
        step = max(step, 1)
        return min(step / warmup, math.sqrt(warmup / step)) * ramp
    return factor
