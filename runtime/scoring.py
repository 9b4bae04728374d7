"""Scoring translations given in advance: the model's log-probability of each target piece after its
source and the pieces before it (teacher forcing), as CTranslate2's `score_batch` and marian-scorer
give them. For filtering parallel data, ranking candidate translations, or a confidence for a
translation made elsewhere (`Translator.score`, `mt-score`).

The same teacher forcing, a step at a time on any backend, gives agreement.py the distributions it
compares two decodes with.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .batching import in_batches, pad_batch, padded_length
from .search import log_softmax
from .vocab import BOS_ID, EOS_ID, PAD_ID


@dataclass
class Score:
    source: str
    target: str
    tokens: list[str]            # the target's pieces, then "</s>"
    log_probs: list[float]       # one per token: log p(token | source, the tokens before it)

    @property
    def log_prob(self) -> float:
        """The whole target's log-probability, its end (</s>) included."""
        return float(sum(self.log_probs))

    @property
    def mean_log_prob(self) -> float:
        """log_prob per token, which compares targets of different lengths (its exp is the geometric
        mean of the tokens' probabilities)."""
        return self.log_prob / len(self.log_probs)


def forced_steps(backend, sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]]) -> Iterator[np.ndarray]:
    """Teacher forcing a step at a time: for i = 0 .. the longest target's length, the log-probs [N,V]
    after BOS + target[:i]. A row past its target's end is fed PAD; what follows there is noise."""
    src_ids, src_mask = pad_batch([list(s) for s in sources])
    state = backend.start(src_ids, src_mask)
    tokens = np.full(len(targets), BOS_ID, dtype=np.int64)
    for i in range(max(len(t) for t in targets) + 1):
        yield log_softmax(backend.step(state, tokens)[0])
        tokens = np.array([t[i] if i < len(t) else PAD_ID for t in targets], dtype=np.int64)


def target_log_probs(backend, sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], pad_to: int = 1,
                     most: int | None = None) -> list[np.ndarray]:
    """Each target's log-probs in one batch: one per piece, then one for EOS. A backend that feeds a
    whole sequence in one call (ONNX: `teacher_force`) does so, sources and targets padded to multiples
    of `pad_to` (up to `most` positions); the others step."""
    paths = [np.array([*t, EOS_ID]) for t in targets]
    if hasattr(backend, "teacher_force"):
        src_ids, src_mask = pad_batch([list(s) for s in sources], pad_to, most)
        fed = np.full((len(targets), padded_length(max(map(len, paths)), pad_to, most)), PAD_ID, dtype=np.int64)
        for row, t in enumerate(targets):
            fed[row, : len(t) + 1] = [BOS_ID, *t]
        logits = backend.teacher_force(backend.start(src_ids, src_mask), fed)[0]
        return [log_softmax(logits[row, : len(p)])[np.arange(len(p)), p] for row, p in enumerate(paths)]
    chosen = [np.empty(len(p), dtype=np.float32) for p in paths]
    for i, logp in enumerate(forced_steps(backend, sources, targets)):
        for row, p in enumerate(paths):
            if i < len(p):
                chosen[row][i] = logp[row, p[i]]
    return chosen


def score_all(backend, sources: list[list[int]], targets: list[list[int]], max_tokens: int,
              max_sentences: int, parallel_batches: int = 1, pad_to: int = 1, most: int | None = None) -> list[np.ndarray]:
    """`target_log_probs` of every pair, batched as decoding is (`batching.in_batches`): a pair's
    length is its source's or its target's positions, whichever is longer; results in input order.
    With `pad_to` > 1 (batching.PAD_MULTIPLE: on Arm) a batch holds pairs of one source bucket and one
    target bucket only, each padded to its bucket, so that a pair's score does not depend on its batch."""
    def run(batch: list[int]) -> list[np.ndarray]:
        return target_log_probs(backend, [sources[i] for i in batch], [targets[i] for i in batch], pad_to, most)

    widths = [(padded_length(len(s), pad_to, most), padded_length(len(t) + 1, pad_to, most))
              for s, t in zip(sources, targets)]
    return in_batches(run, [max(w) for w in widths], max_tokens, max_sentences, parallel_batches,
                      widths if pad_to > 1 else None)
