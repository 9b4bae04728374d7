"""Tie-aware comparison of two decodes that may differ by rounding (PyTorch vs ONNX, fp32 vs int8,
alone vs in a batch, numpy vs in-graph ranking).

Two token sequences agree when they are equal, or when they part where the reference itself had
a near-tie: at the first step where they differ, the reference's log-probabilities of the two
tokens lie within `tolerance` of each other. For beam search, where the final pick is made on
whole scores, a near-tie of the two sequences' length-normalised scores under the reference
counts too. Anything else is a real difference, reported with the step and the gap.

One rule for the export's parity gate and for the tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .scoring import forced_steps
from .search import beam_score
from .vocab import EOS_ID

LogprobsAlong = Callable[[Sequence[int]], np.ndarray]   # tokens -> [len(tokens) + 1, V] log-probs


@dataclass(frozen=True)
class Divergence:
    step: int              # first position where the sequences differ (EOS counts as a token)
    expected: int          # the reference's token there
    got: int               # the candidate's token there
    gap: float             # reference log-prob of `expected` minus that of `got`, at that step
    score_gap: float | None  # |reference score of the reference - of the candidate| (beam), else None

    def is_tie(self, tolerance: float) -> bool:
        return abs(self.gap) < tolerance or (self.score_gap is not None and self.score_gap < tolerance)

    def __str__(self) -> str:
        whole = "" if self.score_gap is None else f", whole-score gap {self.score_gap:.3g}"
        return (f"differs at step {self.step}: expected token {self.expected}, got {self.got} "
                f"(reference log-prob gap {self.gap:.3g}{whole})")


def first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The first position where a+[EOS] and b+[EOS] differ, or None when a == b."""
    a, b = [*a, EOS_ID], [*b, EOS_ID]
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)


def divergence(reference: Sequence[int], candidate: Sequence[int], logprobs_along: LogprobsAlong,
               length_penalty: float | None = None) -> Divergence | None:
    """Where and by how much `candidate` departs from `reference` (None when they are equal).
    `length_penalty` (beam search) adds the whole-score comparison."""
    step = first_difference(reference, candidate)
    if step is None:
        return None
    ref_lp = logprobs_along(reference)
    expected, got = [*reference, EOS_ID][step], [*candidate, EOS_ID][step]
    gap = float(ref_lp[step, expected] - ref_lp[step, got])
    score_gap = None
    if length_penalty is not None:
        cand_lp = logprobs_along(candidate)
        score_gap = abs(sequence_score(reference, ref_lp, length_penalty) -
                        sequence_score(candidate, cand_lp, length_penalty))
    return Divergence(step, int(expected), int(got), gap, score_gap)


def mismatch(reference: Sequence[int], candidate: Sequence[int], logprobs_along: LogprobsAlong,
             tolerance: float, length_penalty: float | None = None) -> Divergence | None:
    """The divergence that is not explained by a near-tie, or None when the two agree."""
    d = divergence(reference, candidate, logprobs_along, length_penalty)
    return None if d is None or d.is_tie(tolerance) else d


def sequence_score(tokens: Sequence[int], logprobs: np.ndarray, length_penalty: float) -> float:
    """The search's score of tokens+[EOS]: summed log-prob / length ** length_penalty."""
    path = [*tokens, EOS_ID]
    total = float(sum(logprobs[i, t] for i, t in enumerate(path)))
    return beam_score(total, len(path), length_penalty)


def forced_logprobs(backend, sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """Teacher-forced log-probs along each target: one [len(target) + 1, V] array per sentence
    (row i is the distribution after BOS + target[:i]), computed in one batch with `backend`."""
    rows: list[list[np.ndarray]] = [[] for _ in targets]
    for i, logp in enumerate(forced_steps(backend, sources, targets)):
        for r, t in enumerate(targets):
            if i <= len(t):
                rows[r].append(logp[r])
    return [np.stack(r) for r in rows]


def margins(logprobs: np.ndarray, tokens: Sequence[int]) -> np.ndarray:
    """Per step, how far the chosen token (tokens+[EOS]) leads the best other token (negative
    when another token is better)."""
    path = np.array([*tokens, EOS_ID])
    chosen = logprobs[np.arange(len(path)), path]
    others = logprobs.copy()
    others[np.arange(len(path)), path] = -np.inf
    return chosen - others.max(axis=1)


def logprobs_along(backend, source: Sequence[int]) -> LogprobsAlong:
    """A `LogprobsAlong` for one source sentence, computed with `backend`."""
    return lambda tokens: forced_logprobs(backend, [source], [tokens])[0]


def greedy_margins(backend, sources: Sequence[Sequence[int]], max_length: int) -> list[tuple[list[int], np.ndarray]]:
    """Each source's greedy output and, per step, how far its token led the runner-up, with the
    margins measured both in one batch of all sources and for each source alone (the smaller
    of the two is kept, since batch shape is one of the things rounding depends on)."""
    from .batching import decode_all
    from .decode_options import DecodeOptions

    opts = DecodeOptions(beam_size=1, max_length=max_length, no_repeat_loop=0)   # plain argmax: no bans
    outputs = [r.hypotheses[0].tokens for r in decode_all(backend, [list(s) for s in sources], opts)]
    batched = forced_logprobs(backend, sources, outputs)
    result = []
    for source, output, lp in zip(sources, outputs, batched):
        alone = forced_logprobs(backend, [source], [output])[0]
        result.append((output, np.minimum(margins(lp, output), margins(alone, output))))
    return result
