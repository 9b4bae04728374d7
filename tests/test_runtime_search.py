"""The shared search over the real ONNX backend of the fixture bundle: the decoder's in-graph search
head against numpy over the graph's logits. The search logic itself (greedy, beam, n-best, length
limits and penalty, n-gram ban, sampling, batching) is tested against known log-probs in
test_search_logic.py."""

from __future__ import annotations

import pytest

from mtkit.runtime.batching import pad_batch
from mtkit.runtime.search import DecodeOptions, decode
from mtkit.runtime.vocab import EOS_ID

SENTENCES = ["Ich habe Hunger.", "Wo ist der Bahnhof?", "Tom ist nicht hier.", "Das ist gut.",
             "Ich weiß es nicht.", "Kannst du mir helfen?"]


@pytest.fixture(scope="module")
def translator(fixture_translator):
    return fixture_translator


@pytest.fixture(scope="module")
def batch(translator):
    tag = translator.tag_id("en")
    sources = [[tag, *ids, EOS_ID] for ids in translator.tokenizer.encode(SENTENCES)]
    return sources, *pad_batch(sources)


def run(translator, batch, **kw):
    _, ids, mask = batch
    return decode(translator.backend, ids, mask, DecodeOptions(**{"max_length": translator.config.max_positions, **kw}))


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
