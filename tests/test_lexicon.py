"""The word counts that help `--from auto` tell a model's languages apart (runtime/lexicon.py): the
format, the reweighing, the shipped model's counts on held-out Tatoeba test sentences (bounds over
what was measured, so they hold on any CPU), and a bundle whose lexicon is missing or damaged."""

from __future__ import annotations

import gzip
import json
import random
import shutil

import pytest

from conftest import FIXTURES, GERMAN, REPO, invoke
from mtkit.benchmarks.language_id import short_inputs
from mtkit.runtime import Translator, bundle_format as bf, checksums, language_id
from mtkit.runtime.cli import main
from mtkit.runtime.errors import ModelLoadError
from mtkit.runtime.lexicon import Lexicon, words

SHIPPED = REPO / "models" / "de-en"
OTHER = {"de": "en", "en": "de"}


@pytest.fixture(scope="module")
def shipped_lexicon() -> Lexicon:
    return Lexicon.load(SHIPPED / bf.LEXICON_FILE)


def held_out(lang: str) -> list[str]:
    """Tatoeba test sentences: in no training data, so not counted in the lexicon."""
    return [s.strip() for s in (FIXTURES / "tatoeba" / f"test.{lang}").read_text(encoding="utf-8").splitlines()]


def test_counts_round_trip_and_prune(tmp_path):
    texts = [("de", "Der Hund schläft."), ("de", "Der Hund bellt."), ("en", "The dog sleeps."), ("en", "The dog's bed"),
             ("fr", "Le chien dort.")]
    lexicon = Lexicon.count(texts, ["de", "en"], min_count=2)
    assert sorted(lexicon.index) == ["Der", "Hund", "The"]     # fr is not one of its languages; once is pruned
    assert lexicon.totals == (6, 6) and words("The dog's bed, well-known.") == ["The", "dog's", "bed", "well-known"]
    lexicon.save(tmp_path / "a.tsv.gz")
    lexicon.save(tmp_path / "b.tsv.gz")
    assert (tmp_path / "a.tsv.gz").read_bytes() == (tmp_path / "b.tsv.gz").read_bytes()   # reproducible bytes
    back = Lexicon.load(tmp_path / "a.tsv.gz")
    assert (back.languages, back.index, back.totals) == (lexicon.languages, lexicon.index, lexicon.totals)
    assert back.counts.tolist() == [[2, 0], [2, 0], [0, 2]]
    likely = back.log_likelihoods("Der Hund")
    assert likely["de"] > likely["en"]
    for bad in (b"", b"word\tde\n", b"#total\t1\t2\n#word\tde\ten\nHund\t1\n", b"#total\t1\t2\n#word\tde\ten\nHund\tx\t1\n"):
        (tmp_path / "bad.tsv.gz").write_bytes(gzip.compress(bad))
        with pytest.raises(ValueError):
            Lexicon.load(tmp_path / "bad.tsv.gz")
    (tmp_path / "bad.tsv.gz").write_bytes(b"not gzip")
    with pytest.raises(ValueError, match="unreadable"):
        Lexicon.load(tmp_path / "bad.tsv.gz")


def test_reweigh_moves_only_the_models_languages(shipped_lexicon):
    probs = {"en": 0.12, "de": 0.08, "fr": 0.30, "nl": 0.05}
    new = shipped_lexicon.reweigh(probs, "Hund")
    assert new["de"] > new["en"] and new["de"] + new["en"] == pytest.approx(0.20)
    assert (new["fr"], new["nl"]) == (0.30, 0.05)
    assert shipped_lexicon.reweigh(probs, "!! ?") == probs          # no word to go by


@pytest.mark.parametrize("lang", ["de", "en"])
def test_shipped_lexicon_on_held_out_sentences(shipped_lexicon, lang):
    sentences = held_out(lang)

    def wrong(texts, lexicon) -> int:
        """Both wrong decisions: a source text left as it is, a text already in the target language run
        through the model."""
        return (sum(not language_id.choose(s, OTHER[lang], [lang], lexicon).translated for s in texts)
                + sum(language_id.choose(s, lang, [OTHER[lang]], lexicon).translated for s in texts))

    assert wrong(sentences, shipped_lexicon) <= 4                                   # measured 1 / 0 of 400
    for n, bound in [(1, 0.25), (2, 0.08), (3, 0.04)]:     # measured 16% / 6%, 5% / 0.3%, 2% / 0.5%
        pieces = short_inputs(sentences, n, random.Random(0))
        with_counts, alone = wrong(pieces, shipped_lexicon), wrong(pieces, None)
        assert with_counts <= bound * len(pieces), (n, with_counts)
        assert with_counts <= 0.6 * alone, (n, with_counts, alone)                 # measured 48% / 17% at 1 word


def with_lexicon(tmp_path, fixture_bundle, lexicon: Lexicon | None = None, damage: bytes | None = None):
    """A copy of the fixture bundle with word counts (the shipped model's by default), recorded in
    config.json, then damaged if asked."""
    bundle = tmp_path / "bundle"
    shutil.copytree(fixture_bundle, bundle)
    (lexicon or Lexicon.load(SHIPPED / bf.LEXICON_FILE)).save(bundle / bf.LEXICON_FILE)
    config = bf.BundleConfig.load(bundle)
    config.lexicon = bf.LEXICON_FILE
    config.files = checksums.manifest(bundle)
    config.save(bundle)
    if damage is not None:
        (bundle / bf.LEXICON_FILE).write_bytes(damage)
    return bundle


def test_a_bundle_with_counts_keeps_a_word_already_in_the_target_language(tmp_path, fixture_bundle):
    # fastText alone finds "Hund" English (0.12 against 0.08): into German it was run through the model.
    [alone] = Translator(fixture_bundle, variant="fp32", threads=1).translate("Hund", to="de", beam_size=1)
    assert alone.translated
    translator = Translator(with_lexicon(tmp_path, fixture_bundle), variant="fp32", threads=1)
    [kept] = translator.translate("Hund", to="de", beam_size=1)
    assert (kept.text, kept.translated, kept.language, kept.languages[0].detected) == ("Hund", False, "de", "de")
    assert translator.translate(GERMAN[0], to="en", beam_size=1)[0].translated


def test_a_damaged_lexicon_is_a_one_line_error(tmp_path, fixture_bundle, capsys, monkeypatch):
    # Another size than recorded: found when the bundle loads.
    short = with_lexicon(tmp_path / "short", fixture_bundle, damage=b"\x1f\x8b")
    with pytest.raises(ModelLoadError, match="lexicon.tsv.gz"):
        Translator(short, variant="fp32", threads=1)
    # Same size, not a lexicon: found when detection first needs it; a given language never reads it.
    bundle = with_lexicon(tmp_path / "same", fixture_bundle)
    size = (bundle / bf.LEXICON_FILE).stat().st_size
    (bundle / bf.LEXICON_FILE).write_bytes(b"x" * size)
    translator = Translator(bundle, variant="fp32", threads=1)
    assert translator.translate(GERMAN[0], to="en", from_lang="de", beam_size=1)[0].translated
    with pytest.raises(ModelLoadError, match=r"lexicon.tsv.gz: not a lexicon"):
        translator.translate(GERMAN[0], to="en", beam_size=1)
    monkeypatch.setenv("MT_MODEL", str(bundle))
    code, out, err = invoke(main, ["--threads", "1", "--variant", "fp32", GERMAN[0]], capsys)
    assert code == 1 and out == "" and "not a lexicon" in err and err.count("\n") == 1 and "Traceback" not in err
    # Listed but gone.
    (bundle / bf.LEXICON_FILE).unlink()
    with pytest.raises(ModelLoadError, match="missing .listed as the lexicon"):
        Translator(bundle, variant="fp32", threads=1)


def test_a_lexicon_gone_after_loading_is_said_to_be_unreadable(tmp_path, fixture_bundle):
    """The bundle deleted after loading: the first detection said 'lexicon.tsv.gz: not a lexicon (unreadable
    ([Errno 2] No such file or directory: ...))', as if the file were damaged."""
    bundle = with_lexicon(tmp_path, fixture_bundle)
    translator = Translator(bundle, variant="fp32", threads=1)
    shutil.rmtree(bundle)
    with pytest.raises(ModelLoadError) as error:
        translator.translate(GERMAN[0], to="en", beam_size=1)
    assert str(error.value) == (f"{bundle / bf.LEXICON_FILE}: cannot read the bundle's lexicon "
                                f"(No such file or directory)")


def test_a_lexicon_of_a_language_the_model_lacks_is_refused(tmp_path, fixture_bundle):
    foreign = Lexicon.count([("de", "Hund " * 5), ("xx", "Hund " * 5)], ["de", "xx"])
    translator = Translator(with_lexicon(tmp_path, fixture_bundle, foreign), variant="fp32", threads=1)
    with pytest.raises(ModelLoadError, match="counts for xx, which this model has no tag for"):
        translator.translate("Hund", to="en", beam_size=1)


def test_shipped_config_names_its_lexicon():
    assert json.loads((SHIPPED / bf.CONFIG_FILE).read_text())["lexicon"] == bf.LEXICON_FILE


def test_mt_models_verify_needs_a_listed_lexicon(tmp_path, fixture_bundle):
    bundle = with_lexicon(tmp_path, fixture_bundle)
    assert checksums.verify(bundle).ok
    (bundle / bf.LEXICON_FILE).unlink()
    assert checksums.verify(bundle).problems == [f"{bf.LEXICON_FILE}: missing"]
