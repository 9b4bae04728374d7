"""Target prefixes through the Translator and mt-translate (runtime/prefix.py): a translation starts with
what the user wrote, and the model continues it. The search itself is tested exactly in
test_search_logic.py; here only what holds for any model is asserted: the output's start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sentencepiece as spm

from conftest import GERMAN, ORT_THREADS
from mtkit.runtime import Translator, TranslationError
from mtkit.runtime import bundle_format as bf
from mtkit.runtime.prefix import Prefix
from mtkit.runtime.repetition import WORD_START

BIN = Path(sys.executable).parent / "mt-translate"
# Whole words, an unfinished word, a trailing space, a number, a word with a character the vocabulary
# spells in bytes, full-width letters (SentencePiece normalises them), two sentences.
PREFIXES = ["The", "The wom", "A man ", "It was 1987 ", "Snow☃ is", "Ｔhe", "I am. You ar"]


@pytest.fixture(scope="module")
def t(fixture_bundle):
    return Translator(fixture_bundle, threads=ORT_THREADS)


@pytest.fixture(scope="module")
def sp(fixture_bundle):
    return spm.SentencePieceProcessor(model_file=str(fixture_bundle / bf.TOKENIZER_FILE))


@pytest.mark.parametrize("options", [dict(), dict(beam_size=1), dict(num_hypotheses=3),
                                     dict(sampling=True, seed=3, num_hypotheses=2)])
@pytest.mark.parametrize("prefix", PREFIXES)
def test_every_hypothesis_starts_with_the_prefix_as_written(t, prefix, options):
    [tr] = t.translate(GERMAN[2], from_lang="de", prefix=prefix, **options)
    assert tr.hypotheses and all(h.text.startswith(prefix.rstrip()) for h in tr.hypotheses), tr.hypotheses
    assert tr.num_parts == 1 and tr.translated


def test_an_unfinished_word_is_spelled_by_any_pieces_that_start_with_it(t, sp):
    """After "The", the pieces spell "▁wom" and may go on ("▁woman"): they are not forced to be the
    pieces SentencePiece gives "wom" alone."""
    for options in (dict(beam_size=1), dict(num_hypotheses=4)):
        [tr] = t.translate(GERMAN[2], from_lang="de", prefix="The wom", **options)
        for h in tr.hypotheses:
            assert h.tokens[:len(sp.encode("The"))] == sp.encode("The", out_type=str)
            assert "".join(h.tokens[len(sp.encode("The")):]).startswith(WORD_START + "wom")


def test_one_prefix_per_text_and_none_translates_as_without(t):
    texts = [GERMAN[0], GERMAN[1], GERMAN[3]]
    with_prefixes = t.translate(texts, from_lang="de", prefix=["I", None, ""])
    plain = t.translate(texts, from_lang="de")
    assert with_prefixes[0].text.startswith("I")
    assert [tr.text for tr in with_prefixes[1:]] == [tr.text for tr in plain[1:]]


def test_a_text_with_a_prefix_is_one_sentence_and_always_translated(t):
    two = f"{GERMAN[0]} {GERMAN[1]}"
    assert t.translate(two, from_lang="de")[0].num_parts == 2
    assert t.translate(two, from_lang="de", prefix="The")[0].num_parts == 1
    # Already in English, so left as it is, unless the user began its translation.
    english = "The woman is reading a book."
    assert t.translate(english, to="en")[0].text == english
    [tr] = t.translate(english, to="en", prefix="A")
    assert tr.translated and tr.text.startswith("A")


def test_control_characters_in_a_prefix_become_spaces(t):
    [tr] = t.translate(GERMAN[2], from_lang="de", prefix="The\nwoman\x00 is", beam_size=1)
    assert tr.text.startswith("The woman  is") and "\n" not in tr.text and "\x00" not in tr.text


def test_translate_iter_takes_one_prefix_for_every_text_or_one_each(t):
    out = list(t.translate_iter([GERMAN[0], GERMAN[1]], from_lang="de", prefix="It", batch_size=1))
    assert all(tr.text.startswith("It") for tr in out)
    out = list(t.translate_iter(iter([GERMAN[0], GERMAN[1], GERMAN[2]]), from_lang="de", prefix=iter(["It", None, "A"]),
                                batch_size=2))
    assert out[0].text.startswith("It") and out[2].text.startswith("A")
    assert out[1].text == t.translate(GERMAN[1], from_lang="de")[0].text
    for prefix, message in [(["It"], r"fewer prefixes than texts \(only 1\)"), (["It", "A", None], r"more prefixes "
                            r"than texts \(2\)"), (3, "prefix must be a str, one per text, or None, not int")]:
        with pytest.raises(TranslationError, match=message):
            list(t.translate_iter([GERMAN[0], GERMAN[1]], prefix=prefix))


@pytest.mark.parametrize("prefix, message", [
    (3, "prefix must be a str, a list of one per text, or None, not int"),
    (["a"], "prefix has 1 entries for 2 texts"),
    (["a", b"b"], "the prefix of text 2 is a bytes, not a str"),
    ("word " * 300, r"the prefix of text 1 is \d+ tokens; this model.s translations hold at most \d+"),
])
def test_bad_prefixes_are_translation_errors(t, prefix, message):
    with pytest.raises(TranslationError, match=message):
        t.translate([GERMAN[0], GERMAN[1]], prefix=prefix)


def test_prefix_of_splits_off_the_unfinished_word(sp):
    assert Prefix.of("The wom", sp) == Prefix(tuple(sp.encode("The")), WORD_START + "wom")
    assert Prefix.of("The woman ", sp) == Prefix(tuple(sp.encode("The woman")), WORD_START)
    assert Prefix.of("wom", sp) == Prefix((), WORD_START + "wom")
    assert Prefix.of("Snow☃", sp).spelling == ""          # bytes: forced as they are


def run(*args):
    return subprocess.run([str(BIN), "--threads", str(ORT_THREADS), *args], capture_output=True, timeout=120)


def test_cli_prefix_with_n_best(fixture_bundle, monkeypatch):
    monkeypatch.setenv("MT_MODEL", str(fixture_bundle))
    done = run("--from", "de", "--n-best", "2", "--prefix", "The wom", GERMAN[2], GERMAN[0])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 2 and all(h.startswith("The wom") for line in lines for h in line.split("\t"))


def test_cli_prefixes_one_per_line(fixture_bundle, monkeypatch, tmp_path):
    monkeypatch.setenv("MT_MODEL", str(fixture_bundle))
    (tmp_path / "in.de").write_text("\n".join(GERMAN[:3]) + "\n", encoding="utf-8")
    (tmp_path / "starts.en").write_text("The wom\n\nA \n", encoding="utf-8")
    done = run("--from", "de", "--beam-size", "1", "-i", str(tmp_path / "in.de"), "--prefixes",
               str(tmp_path / "starts.en"))
    lines = done.stdout.decode().splitlines()
    assert done.returncode == 0 and lines[0].startswith("The wom") and lines[2].startswith("A ")
    assert lines[1] == run("--from", "de", "--beam-size", "1", GERMAN[1]).stdout.decode().strip()
    short = run("--from", "de", "--prefixes", str(tmp_path / "starts.en"), GERMAN[0])
    assert short.returncode == 1 and b"3 lines for 1 lines to translate" in short.stderr
    both = run("--prefixes", str(tmp_path / "starts.en"), "--prefix", "A", GERMAN[0])
    assert both.returncode == 2 and b"--prefix and --prefixes: choose one" in both.stderr
    stdin = run("--prefixes", str(tmp_path / "starts.en"))
    assert stdin.returncode == 2 and b"--prefixes needs the lines to translate as TEXT or -i FILE" in stdin.stderr


def test_cli_prefix_errors_are_one_line(fixture_bundle, monkeypatch):
    monkeypatch.setenv("MT_MODEL", str(fixture_bundle))
    done = run("--html", "--prefix", "The", "<p>Hallo</p>")
    assert done.returncode == 2 and b"--prefix starts the translation of a line" in done.stderr
    done = run("--prefix", b"The \xff".decode("utf-8", "surrogateescape"), GERMAN[0])
    assert done.returncode == 1 and b"--prefix" in done.stderr and b"Traceback" not in done.stderr
    done = run("--prefix", "word " * 300, GERMAN[0])
    assert done.returncode == 1 and b"this model's translations hold at most" in done.stderr
    assert b"Traceback" not in done.stderr
