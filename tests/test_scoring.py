"""Scoring given translations (`Translator.score`, runtime/scoring.py): the same log-probs from
PyTorch and ONNX, from one call and from stepping, alone and in a batch, and the search's own scores."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import ENGLISH, GERMAN, ORT_THREADS
from mtkit.runtime import Translator, TranslationError
from mtkit.runtime.batching import decode_all, padded_length
from mtkit.runtime.decode_options import DecodeOptions
from mtkit.runtime.scoring import Score, forced_steps, score_all, target_log_probs
from mtkit.runtime.vocab import EOS_ID, EOS_PIECE, PAD_ID, source_ids

# Pairs the fixture model knows (log-probs near 0), mismatched ones (far below), and an empty one.
PAIRS = [*zip(GERMAN[:6], ENGLISH[:6]), (GERMAN[0], ENGLISH[1]), (GERMAN[2], ENGLISH[0]),
         ("Guten Morgen!", "The weather is nice."), ("", "")]


def encoded(t: Translator, pairs, to: str = "en"):
    sources = [source_ids(t.tokenizer.encode(s), t.tag_id(to), t.config.max_positions) for s, _ in pairs]
    return sources, [t.tokenizer.encode(target) for _, target in pairs]


def test_scores_are_pytorchs_from_the_onnx_graphs(fixture_translator, fixture_checkpoint):
    """The fp32 graphs, which feed each target in one decoder call, give the log-probs that the PyTorch
    checkpoint gives a step at a time."""
    pytest.importorskip("torch", reason="PyTorch is not installed (the runtime's own tests, on Arm)")
    from mtkit.train.reference import checkpoint_translator

    pytorch = checkpoint_translator(fixture_checkpoint, "cpu", 1)
    sources, targets = [p[0] for p in PAIRS], [p[1] for p in PAIRS]
    onnx_scores, torch_scores = fixture_translator.score(sources, targets), pytorch.score(sources, targets)
    for a, b in zip(onnx_scores, torch_scores):
        assert a.tokens == b.tokens and a.tokens[-1] == EOS_PIECE
        np.testing.assert_allclose(a.log_probs, b.log_probs, rtol=0, atol=1e-3)
    assert all(isinstance(s, Score) and s.log_prob == pytest.approx(sum(s.log_probs)) for s in onnx_scores)
    assert len(onnx_scores[-1].log_probs) == 1                  # an empty target: only its end is scored
    assert min(s.log_prob for s in onnx_scores) < -10          # not only near-certain tokens compared


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_one_call_and_stepping_agree(fixture_bundle, variant):
    t = Translator(fixture_bundle, variant=variant, threads=ORT_THREADS)
    sources, targets = encoded(t, PAIRS)
    paths = [[*target, EOS_ID] for target in targets]
    stepped = [[] for _ in targets]
    for i, logp in enumerate(forced_steps(t.backend, sources, targets)):
        for row, path in enumerate(paths):
            if i < len(path):
                stepped[row].append(logp[row, path[i]])
    for got, want in zip(target_log_probs(t.backend, sources, targets), stepped):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_a_pairs_score_does_not_depend_on_its_batch(fixture_bundle, variant):
    """As translations are batch-invariant, so are scores: alone, or among pairs of other lengths in
    length-sorted batches of any size."""
    t = Translator(fixture_bundle, variant=variant, threads=ORT_THREADS)
    sources, targets = encoded(t, PAIRS)
    together = score_all(t.backend, sources, targets, max_tokens=4096, max_sentences=64)
    in_twos = score_all(t.backend, sources, targets, max_tokens=4096, max_sentences=2)
    in_threads = score_all(t.backend, sources, targets, max_tokens=4096, max_sentences=4, parallel_batches=2)
    for i, (s, target) in enumerate(zip(sources, targets)):
        alone = target_log_probs(t.backend, [s], [target])[0]
        np.testing.assert_allclose(together[i], alone, rtol=0, atol=1e-4)
        np.testing.assert_allclose(in_twos[i], alone, rtol=0, atol=1e-4)
        np.testing.assert_allclose(in_threads[i], alone, rtol=0, atol=1e-4)


def test_on_arm_a_batch_holds_one_source_and_one_target_bucket(fixture_bundle):
    """On Arm ONNX Runtime rounds with the padded length (batching.PAD_MULTIPLE), so there a pair is
    scored at the same padded source and target widths alone as in any batch; the scores stay the
    unbucketed ones."""
    t = Translator(fixture_bundle, threads=ORT_THREADS)
    pairs = [(" ".join(GERMAN[i:i + k]), " ".join(ENGLISH[j:j + m])) for i, k, j, m in
             [(0, 1, 0, 1), (1, 3, 1, 1), (2, 1, 2, 3), (3, 4, 3, 4), (4, 2, 4, 3), (5, 3, 5, 1), (6, 4, 6, 2)]]
    sources, targets = encoded(t, pairs)
    most = t.config.max_positions
    calls = []                       # each batch: its padded widths, and its rows' own lengths

    class Recording:
        def start(self, ids, mask):
            calls.append({"sources": (ids.shape[1], mask.sum(1).tolist())})
            return t.backend.start(ids, mask)

        def teacher_force(self, state, fed):
            calls[-1]["targets"] = (fed.shape[1], (fed != PAD_ID).sum(1).tolist())
            return t.backend.teacher_force(state, fed)

    bucketed = score_all(Recording(), sources, targets, 4096, 64, pad_to=16, most=most)
    assert len(calls) > 2, "the pairs should fall into several buckets"
    for call in calls:
        for width, lengths in call.values():
            assert width % 16 == 0 and {padded_length(n, 16, most) for n in lengths} == {width}
    assert sum(len(call["sources"][1]) for call in calls) == len(pairs)
    for got, want in zip(bucketed, score_all(t.backend, sources, targets, 4096, 64)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)


def test_the_search_scores_its_own_output_so(fixture_translator):
    """A greedy output's summed score in the search is the scored log-prob of those tokens."""
    t = fixture_translator
    sources, _ = encoded(t, PAIRS[:6])
    results = decode_all(t.backend, sources, DecodeOptions(beam_size=1, no_repeat_loop=0))
    outputs = [r.hypotheses[0] for r in results]
    assert len({tuple(h.tokens) for h in outputs}) > 1, "the fixture model should say different things"
    for h, log_probs in zip(outputs, score_all(t.backend, sources, [h.tokens for h in outputs], 4096, 64)):
        assert float(log_probs.sum()) == pytest.approx(h.score, abs=1e-3)


def test_bad_pairs_are_refused_with_their_number(fixture_translator):
    t = fixture_translator
    with pytest.raises(TranslationError, match="2 sources for 1 targets"):
        t.score(["Hallo.", "Ja."], ["Hello."])
    with pytest.raises(TranslationError, match="target 2 is a bytes"):
        t.score(["Hallo.", "Ja."], ["Hello.", b"Yes."])
    too_long = " ".join(["Haus"] * (t.config.max_positions + 5))
    with pytest.raises(TranslationError, match=r"source 2 is \d+ tokens; this model reads at most \d+"):
        t.score(["Hallo.", too_long], ["Hello.", "House."])
    with pytest.raises(TranslationError, match=r"target 1 is \d+ tokens"):
        t.score("Haus", too_long)
    with pytest.raises(TranslationError, match="xx"):
        t.score("Hallo.", "Hello.", to="xx")
    assert t.score([], []) == []
    one = t.score("Hallo.", "Hello.")                 # a str is a list of one
    assert len(one) == 1 and one[0].source == "Hallo." and one[0].mean_log_prob < 0


def test_score_iter_streams_in_order_and_counts_on(fixture_translator):
    t = fixture_translator
    sources, targets = [p[0] for p in PAIRS], [p[1] for p in PAIRS]
    streamed = list(t.score_iter(iter(sources), (x for x in targets), batch_size=3))
    for got, want in zip(streamed, t.score(sources, targets), strict=True):
        assert got.tokens == want.tokens and got.log_probs == pytest.approx(want.log_probs, abs=1e-5)
    with pytest.raises(TranslationError, match="the targets end after 3"):
        list(t.score_iter(sources[:5], targets[:3], batch_size=2))
    too_long = " ".join(["Haus"] * (t.config.max_positions + 5))
    with pytest.raises(TranslationError, match="source 5 is"):       # numbered across batches
        list(t.score_iter([*sources[:4], too_long], targets[:5], batch_size=2))
