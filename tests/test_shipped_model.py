"""The model that ships in models/: end-to-end parity (PyTorch vs ONNX) and loose regression pins."""

from pathlib import Path

import pytest

from conftest import FIXTURES
from mtkit.export.api import export_bundle
from mtkit.export.ship import SHIPPED_CHECKPOINT
from mtkit.runtime import Translator
from mtkit.runtime.bundle import default_model


@pytest.fixture(scope="module")
def shipped() -> Path:
    return default_model()


@pytest.fixture(scope="module")
def translator(shipped) -> Translator:
    return Translator(shipped, threads=2)


def test_parity_of_the_shipped_model(shipped, tmp_path):
    """Rebuild fp32 graphs from the shipped half-precision checkpoint; the export itself fails
    unless logits, greedy and beam-4 outputs match PyTorch on these 30 real sentences."""
    report = export_bundle(shipped / SHIPPED_CHECKPOINT, tmp_path / "fp32",
                           parity_data=FIXTURES / "multi30k" / "val30.de-en.tsv", target_lang="en")
    fp32 = report.parity["variants"]["fp32"]
    assert report.parity["sentences"] == 30
    assert fp32["max_abs_logit_diff"] <= 1e-4
    assert fp32["greedy_match_rate"] == 1.0 and fp32["beam_match_rate"] == 1.0


def test_shipped_bundle_is_small_and_int8(shipped, translator):
    size = sum(p.stat().st_size for p in shipped.iterdir())
    assert size <= 60 * 1024 * 1024
    assert translator.variant == "int8"


@pytest.mark.parametrize("source, any_of", [
    ("Ein Hund rennt über eine Wiese.", [["dog"], ["running", "runs", "run"]]),
    ("Zwei Männer spielen Fußball.", [["men"], ["soccer", "football"]]),
    ("Eine Frau fährt Fahrrad auf der Straße.", [["woman"], ["bike", "bicycle"], ["street", "road"]]),
    ("Ein kleines Mädchen sitzt auf einer Bank.", [["girl"], ["sitting", "sits"], ["bench"]]),
    ("Ein Mann mit einem roten Hut kocht in der Küche.", [["man"], ["red"], ["hat"], ["kitchen"]]),
])
def test_translations_keep_the_key_words(translator, source, any_of):
    text = translator.translate(source, to="en")[0].text.lower()
    for alternatives in any_of:
        assert any(word in text for word in alternatives), (source, text, alternatives)


def test_only_trained_directions_are_offered(translator):
    """The tokenizer has a <2de> tag, but this model never learned en->de: refuse it."""
    from mtkit.runtime import TranslationError

    assert translator.languages == ["en"]
    with pytest.raises(TranslationError, match="cannot translate into 'de'"):
        translator.translate("A dog runs.", to="de")
