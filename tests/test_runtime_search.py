"""The shared search (greedy, beam, sampling) over the real ONNX backend of the tiny bundle."""

from __future__ import annotations

import numpy as np
import pytest

from mtkit.runtime import search
from mtkit.runtime.batching import decode_all, length_batches, pad_batch
from mtkit.runtime.search import DecodeOptions, decode
from mtkit.runtime.vocab import EOS_ID

SENTENCES = ["Ich habe Hunger.", "Wo ist der Bahnhof?", "Tom ist nicht hier.", "Das ist gut.",
             "Ich weiß es nicht.", "Kannst du mir helfen?"]


@pytest.fixture(scope="module")
def translator(tiny_translator):
    return tiny_translator


@pytest.fixture(scope="module")
def batch(translator):
    tag = translator.tag_id("en")
    sources = [[tag, *ids, EOS_ID] for ids in translator.tokenizer.encode(SENTENCES)]
    return sources, *pad_batch(sources)


def run(translator, batch, **kw):
    _, ids, mask = batch
    return decode(translator.backend, ids, mask, DecodeOptions(**{"max_length": translator.config.max_positions, **kw}))


def test_beam_of_one_is_greedy(translator, batch):
    _, ids, mask = batch
    opts = DecodeOptions(beam_size=1, length_penalty=0.0, max_length=translator.config.max_positions)
    greedy = search._greedy(translator.backend, ids, mask, opts)
    beam = search._beam(translator.backend, ids, mask, opts)
    for g, b in zip(greedy, beam):
        assert g.hypotheses[0].tokens == b.hypotheses[0].tokens
        # length_penalty 0: the beam score is the plain log-probability, as greedy's
        assert g.hypotheses[0].score == pytest.approx(b.hypotheses[0].score, abs=1e-4)


@pytest.mark.parametrize("kw", [dict(beam_size=1), dict(beam_size=4, num_hypotheses=4),
                                dict(beam_size=3, max_length_ratio=0.5, max_length_extra=1)])   # out of length
def test_search_head_gives_the_numpy_search_results(translator, batch, kw):
    """The graph's LogSoftmax + TopK (its search head) and numpy over the logits pick the same hypotheses."""
    head_k = translator.backend.search_head_k
    assert head_k >= 2 * kw["beam_size"]
    in_graph = run(translator, batch, **kw)
    translator.backend.search_head_k = 0
    try:
        in_numpy = run(translator, batch, **kw)
    finally:
        translator.backend.search_head_k = head_k
    for a, b in zip(in_graph, in_numpy):
        assert [h.tokens for h in a.hypotheses] == [h.tokens for h in b.hypotheses]
        assert [h.score for h in a.hypotheses] == pytest.approx([h.score for h in b.hypotheses], abs=1e-4)


def test_greedy_score_is_the_log_probability_of_its_output(translator, batch):
    """Re-score each greedy output (teacher-forced, step by step) and compare."""
    _, ids, mask = batch
    results = run(translator, batch, beam_size=1)
    for row, result in enumerate(results):
        hyp = result.hypotheses[0]
        state = translator.backend.start(ids[row:row + 1], mask[row:row + 1])
        total, token = 0.0, search.BOS_ID
        for target in hyp.tokens + [EOS_ID]:
            logits, _ = translator.backend.step(state, np.array([token]))
            total += float(search.log_softmax(logits)[0, target])
            token = target
        assert hyp.score == pytest.approx(total, abs=1e-3)


def test_nbest_is_sorted_distinct_and_led_by_the_best(translator, batch):
    results = run(translator, batch, beam_size=5, num_hypotheses=5)
    for r in results:
        scores = [h.score for h in r.hypotheses]
        assert len(r.hypotheses) == 5
        assert scores == sorted(scores, reverse=True)
        assert len({tuple(h.tokens) for h in r.hypotheses}) == 5
    best = run(translator, batch, beam_size=5, num_hypotheses=1)
    assert [r.hypotheses[0].tokens for r in best] == [r.hypotheses[0].tokens for r in results]


def test_max_length_closes_hypotheses_without_duplicates(translator, batch):
    """With a tight length limit every beam is closed at the limit, once each."""
    results = run(translator, batch, beam_size=4, num_hypotheses=4, max_length_ratio=0.1, max_length_extra=2)
    for r, src in zip(results, batch[0]):
        limit = int(np.ceil(0.1 * len(src))) + 2
        assert all(len(h.tokens) <= limit - 1 for h in r.hypotheses)
        assert len({tuple(h.tokens) for h in r.hypotheses}) == len(r.hypotheses)
    for r, src in zip(run(translator, batch, beam_size=1, max_length_ratio=0.1, max_length_extra=2), batch[0]):
        assert len(r.hypotheses[0].tokens) <= int(np.ceil(0.1 * len(src))) + 2 - 1


def test_sampling_is_reproducible_with_a_seed(translator, batch):
    a = run(translator, batch, sampling=True, seed=7, temperature=1.5)
    b = run(translator, batch, sampling=True, seed=7, temperature=1.5)
    c = run(translator, batch, sampling=True, seed=8, temperature=1.5)
    tokens = lambda rs: [r.hypotheses[0].tokens for r in rs]  # noqa: E731
    assert tokens(a) == tokens(b)
    assert tokens(a) != tokens(c)


def test_top_k_one_is_greedy_and_n_samples(translator, batch):
    greedy = run(translator, batch, beam_size=1)
    sampled = run(translator, batch, sampling=True, top_k=1, seed=1)
    assert [r.hypotheses[0].tokens for r in greedy] == [r.hypotheses[0].tokens for r in sampled]
    tiny_p = run(translator, batch, sampling=True, top_p=1e-6, seed=1)    # the nucleus is the top token
    assert [r.hypotheses[0].tokens for r in greedy] == [r.hypotheses[0].tokens for r in tiny_p]
    several = run(translator, batch, sampling=True, num_hypotheses=3, seed=1, temperature=2.0)
    for r in several:
        assert len(r.hypotheses) == 3
        assert [h.score for h in r.hypotheses] == sorted((h.score for h in r.hypotheses), reverse=True)


@pytest.mark.parametrize("beam_size", [1, 3])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_no_repeat_ngram_prevents_repeats(translator, beam_size, n):
    # Repetitive sources, so that even a good model has repeats to remove (the tiny one repeats anyway).
    def repeats(tokens):
        grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
        return len(grams) - len(set(grams))

    texts = SENTENCES + ["Hund " * 10, "ja ja ja ja ja ja ja ja ja", "Das Haus, das Haus, das Haus, das Haus."]
    tag = translator.tag_id("en")
    batch = (None, *pad_batch([[tag, *ids, EOS_ID] for ids in translator.tokenizer.encode(texts)]))
    plain = run(translator, batch, beam_size=beam_size)
    banned = run(translator, batch, beam_size=beam_size, no_repeat_ngram_size=n)
    assert sum(repeats(r.hypotheses[0].tokens) for r in plain) > 0
    assert all(repeats(r.hypotheses[0].tokens) == 0 for r in banned)


def test_ban_repeated_ngrams_unit():
    logp = np.zeros((1, 10), dtype=np.float32)
    search.ban_repeated_ngrams(logp, [[5, 6, 7, 5]], 2)     # "5 6" was seen: 6 may not follow 5 again
    assert np.isneginf(logp[0, 6]) and np.isfinite(logp[0, [5, 7]]).all()


def test_decode_all_keeps_input_order(translator, batch):
    sources = batch[0] * 3
    opts = DecodeOptions(beam_size=2, max_length=translator.config.max_positions)
    together = decode_all(translator.backend, sources, opts, max_tokens=64, max_sentences=4)
    alone = [decode_all(translator.backend, [s], opts)[0] for s in sources]
    assert [r.hypotheses[0].tokens for r in together] == [r.hypotheses[0].tokens for r in alone]


def test_length_batches_cover_every_index_once():
    lengths = [5, 1, 9, 3, 3, 7, 2, 8]
    batches = list(length_batches(lengths, max_tokens=16, max_sentences=3))
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(len(b) <= 3 and max(lengths[i] for i in b) * len(b) <= 16 or len(b) == 1 for b in batches)
