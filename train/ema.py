"""An exponential moving average of the weights, kept as the run trains (Marian's
--exponential-smoothing, fairseq's --ema): a mean over roughly the last 1 / (1 - decay) steps, which
does what averaging checkpoints saved along the way does, without keeping those checkpoints. The
trainer saves it beside last.pt as `ema.pt`, an ordinary checkpoint for mt-export, mt-eval and
mt-average, and `--resume` continues it from there.
"""

from __future__ import annotations

import torch

EMA_FILE = "ema.pt"      # in the run's checkpoints/ directory


class WeightAverage:
    """The average of a model's weights, in fp32 on the model's device."""

    def __init__(self, weights: dict[str, torch.Tensor], decay: float, updates: int = 0):
        copies = {}         # tied weights (embeddings, output layer) stay one tensor, averaged once
        self.weights = {name: copies.setdefault(value.data_ptr(), value.detach().clone().float()
                                                if value.is_floating_point() else value.detach().clone())
                        for name, value in weights.items()}
        self.names = list({id(value): name for name, value in reversed(self.weights.items())}.values())
        self.decay = decay
        self.updates = updates          # optimizer steps averaged in so far

    def update(self, model: torch.nn.Module) -> None:
        """Move the average toward `model`'s weights after an optimizer step. Until it has seen
        1 / (1 - decay) steps it is their plain mean (with the weights it started from), so that a
        new average neither clings to those nor forgets them within a few steps."""
        self.updates += 1
        keep = min(self.decay, self.updates / (self.updates + 1))
        weights = model.state_dict()
        with torch.no_grad():
            for name in self.names:             # each tensor once, tied ones included
                mine = self.weights[name]
                if mine.is_floating_point():
                    mine.lerp_(weights[name].float(), 1 - keep)
                else:
                    mine.copy_(weights[name])
