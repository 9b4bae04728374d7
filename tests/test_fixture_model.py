"""The fixture model stays robust, which is what lets other tests assert its exact strings."""

from __future__ import annotations

import json

import pytest

from conftest import ENGLISH, GERMAN, ORT_THREADS
from fixtures.build_model import MIN_MARGIN
from mtkit.runtime import Translator
from mtkit.runtime import bundle_format as bf
from mtkit.runtime.agreement import greedy_margins
from mtkit.runtime.vocab import source_ids

DIRECTIONS = [("en", GERMAN, ENGLISH), ("de", ENGLISH, GERMAN)]


@pytest.fixture(scope="module", params=["fp32", "int8"])
def translator(request, fixture_bundle):
    return Translator(fixture_bundle, variant=request.param, threads=ORT_THREADS)


@pytest.mark.parametrize("to, texts, references", DIRECTIONS, ids=["de-en", "en-de"])
def test_every_greedy_step_leads_by_a_wide_margin(translator, to, texts, references):
    sources = [source_ids(ids, translator.tag_id(to), translator.config.max_positions)
               for ids in translator.tokenizer.encode(texts)]
    fragile = []
    for text, reference, (tokens, margins) in zip(texts, references,
                                                  greedy_margins(translator.backend, sources, translator.config.max_positions)):
        assert translator.tokenizer.decode(tokens) == reference, text
        if margins.min() < MIN_MARGIN:
            fragile.append(f"{text!r}: step {int(margins.argmin())} leads by {margins.min():.2f}")
    assert not fragile, f"margins below {MIN_MARGIN} nat ({translator.variant}): " + "; ".join(fragile)


@pytest.mark.parametrize("to, texts, references", DIRECTIONS, ids=["de-en", "en-de"])
def test_beam_search_gives_the_references_too(translator, to, texts, references):
    assert [t.text for t in translator.translate(texts, to=to, beam_size=4)] == references


def test_committed_bundle_is_the_export_of_the_committed_checkpoint(fixture_bundle, fixture_checkpoint):
    from mtkit.runtime.checksums import file_sha256

    config = json.loads((fixture_bundle / bf.CONFIG_FILE).read_text())
    assert config["provenance"]["checkpoint_sha256"] == file_sha256(fixture_checkpoint), \
        "rebuild with: python tests/fixtures/build_model.py"
