"""The tie-aware comparison rule (runtime/agreement.py) on hand-made log-probabilities."""

from __future__ import annotations

import numpy as np
import pytest

from mtkit.runtime.agreement import divergence, first_difference, margins, mismatch, sequence_score
from mtkit.runtime.vocab import EOS_ID

V = 10
A, B, C = 5, 6, 7


def table(rows: list[dict[int, float]]) -> np.ndarray:
    """Log-probs [len(rows), V]: the named tokens get their value, the rest share what is left."""
    out = np.full((len(rows), V), -20.0)
    for i, row in enumerate(rows):
        for token, lp in row.items():
            out[i, token] = lp
    return out


def along(tables: dict[tuple, np.ndarray]):
    return lambda tokens: tables[tuple(tokens)]


def test_first_difference_counts_eos_as_a_token():
    assert first_difference([A, B], [A, B]) is None
    assert first_difference([A, B], [A, C]) == 1
    assert first_difference([A], [A, B]) == 1            # EOS against B
    assert first_difference([], [A]) == 0


def test_identical_sequences_agree():
    assert mismatch([A, B], [A, B], along({}), 1e-3) is None


def test_a_difference_at_a_near_tie_is_accepted_and_a_wide_one_is_not():
    near = table([{A: -0.6931}, {B: -0.69310, C: -0.69315}, {EOS_ID: -0.01}])
    ref = along({(A, B): near})
    assert mismatch([A, B], [A, C], ref, tolerance=1e-3) is None
    d = mismatch([A, B], [A, C], ref, tolerance=1e-5)
    assert d is not None and (d.step, d.expected, d.got) == (1, B, C) and d.gap == pytest.approx(5e-5)
    wide = along({(A, B): table([{A: -0.1}, {B: -0.1, C: -3.0}, {EOS_ID: -0.01}])})
    d = mismatch([A, B], [A, C], wide, tolerance=1e-3)
    assert d is not None and d.gap == pytest.approx(2.9) and "step 1" in str(d)


def test_beam_counts_a_near_tie_of_whole_scores():
    # The two part at step 0 by a wide local gap, yet their whole scores tie: beam search may pick either.
    ref = table([{A: -0.2, B: -1.2}, {C: -1.0}, {EOS_ID: -0.0}])
    cand = table([{A: -0.2, B: -1.2}, {EOS_ID: -0.0}])
    tables = along({(A, C): ref, (B,): cand})
    assert sequence_score([A, C], ref, 1.0) == pytest.approx(-1.2 / 3)
    assert sequence_score([B], cand, 1.0) == pytest.approx(-1.2 / 2)
    d = divergence([A, C], [B], tables, length_penalty=0.0)
    assert d.score_gap == pytest.approx(0.0) and d.is_tie(1e-3) and not abs(d.gap) < 1e-3
    assert mismatch([A, C], [B], tables, 1e-3) is not None                   # greedy: no whole-score rule
    assert mismatch([A, C], [B], tables, 1e-3, length_penalty=1.0) is not None   # normalised, they differ


def test_margins_are_the_lead_over_the_best_other_token():
    lp = table([{A: -0.1, B: -2.5}, {EOS_ID: -0.2, C: -1.0}])
    np.testing.assert_allclose(margins(lp, [A]), [2.4, 0.8])
    np.testing.assert_allclose(margins(lp, [B]), [-2.4, 0.8])
