"""Subtitles (runtime/subtitles.py): `Translator.translate_subtitles` and `mt-translate --subtitles`.
GERMAN[i] -> ENGLISH[i] is what the fixture model reproduces on any CPU (greedy), so cue texts are
asserted exactly; everything that is not a cue's text must come back byte for byte."""

from __future__ import annotations

import pytest

from conftest import ENGLISH, GERMAN, ORT_THREADS, invoke
from mtkit.runtime.cli import main
from mtkit.runtime.subtitles import looks_like_subtitles, wrap

GREEDY = {"from_lang": "de", "beam_size": 1}


def srt(*cues: list[str], newline: str = "\n") -> str:
    blocks = [newline.join([str(n), f"00:00:{n:02d},000 --> 00:00:{n:02d},900", *lines])
              for n, lines in enumerate(cues, start=1)]
    return (newline * 2).join(blocks) + newline


def test_cues_are_translated_and_all_else_kept(fixture_translator):
    half = len(GERMAN[0].split()) // 2
    document = srt([GERMAN[1]], [" ".join(GERMAN[0].split()[:half]), " ".join(GERMAN[0].split()[half:])],
                   [f"- {GERMAN[2]}", f"- {GERMAN[3]}"], [f"<i>{GERMAN[4]}</i>"], ["♪ ♪"], newline="\r\n")
    out = fixture_translator.translate_subtitles(document, **GREEDY)
    assert out == srt([ENGLISH[1]], wrap(ENGLISH[0], 2), [f"- {ENGLISH[2]}", f"- {ENGLISH[3]}"],
                      [f"<i>{ENGLISH[4]}</i>"], ["♪ ♪"], newline="\r\n")


def test_webvtt_headers_notes_styles_and_settings_are_kept(fixture_translator):
    document = ("WEBVTT - a film\n\nNOTE made by hand\nover two lines\n\nSTYLE\n::cue { color: lime }\n\n"
                f"intro\n00:01.000 --> 00:02.000 align:start line:0\n{GERMAN[5]}\n\n"
                f"00:03.000 --> 00:04.000\n<v Anna>{GERMAN[6]}\n")
    out = fixture_translator.translate_subtitles(document, **GREEDY)
    assert out == document.replace(GERMAN[5], ENGLISH[5]).replace(GERMAN[6], ENGLISH[6])


def test_a_cue_never_gets_a_blank_line(fixture_translator):
    document = srt(["Tom", "schrie."])                         # two words over two lines -> "Tom yelled."
    out = fixture_translator.translate_subtitles(document, **GREEDY)
    lines = out.split("\n")
    assert lines[:2] == document.split("\n")[:2] and "" not in lines[2:-1]
    assert " ".join(lines[2:-1]).split() == ENGLISH[6].split()


@pytest.mark.parametrize("document", ["", "\n\n", "WEBVTT\n\nNOTE nothing to say\n",
                                      "1\n00:00:01,000 --> 00:00:02,000\n\n2\n"])
def test_files_without_cue_text_come_back_unchanged(fixture_translator, document):
    assert fixture_translator.translate_subtitles(document, **GREEDY) == document


@pytest.mark.parametrize("text, count", [("one two three four five six seven", 2), ("a b c", 3), ("Yes", 2),
                                         ("a very long word andashortone", 3), ("", 2)])
def test_wrap_keeps_the_words_in_at_most_that_many_lines(text, count):
    lines = wrap(text, count)
    assert 1 <= len(lines) <= count and " ".join(lines).split() == text.split()
    assert all(lines) or text == ""
    if len(lines) == 2:
        assert abs(len(lines[0]) - len(lines[1])) <= max(len(w) for w in text.split()) + 1


def test_looks_like_subtitles():
    assert looks_like_subtitles("1\n00:00:01,000 --> 00:00:02,000\nHallo\n")
    assert looks_like_subtitles("\ufeffWEBVTT\n")
    assert not looks_like_subtitles("Hallo\nWelt\n")


@pytest.fixture
def model(fixture_bundle, monkeypatch):
    monkeypatch.setenv("MT_MODEL", str(fixture_bundle))


def test_cli_subtitles_file(model, tmp_path, capsys):
    source = tmp_path / "film.de.srt"
    source.write_text(srt([GERMAN[7]], [GERMAN[8]]), encoding="utf-8")
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), "--beam-size", "1", "--from", "de", "--subtitles",
                                   "-i", str(source), "-o", str(tmp_path / "film.en.srt")], capsys)
    assert (code, out, err) == (0, "", "")
    assert (tmp_path / "film.en.srt").read_text(encoding="utf-8") == srt([ENGLISH[7]], [ENGLISH[8]])


@pytest.mark.parametrize("args, message", [(["--subtitles", "Hallo"], "--subtitles reads a file"),
                                           (["--subtitles", "--html", "-i", "x"], "choose one"),
                                           (["--subtitles", "--format", "jsonl", "-i", "x"], "--subtitles writes")])
def test_cli_subtitles_usage(model, capsys, args, message):
    code, _, err = invoke(main, args, capsys)
    assert code == 2 and message in err


def test_cli_notes_subtitles_given_as_text(model, tmp_path, capsys):
    source = tmp_path / "film.srt"
    source.write_text(srt([GERMAN[9]]), encoding="utf-8")
    code, _, err = invoke(main, ["--threads", str(ORT_THREADS), "--beam-size", "1", "-i", str(source)], capsys)
    assert code == 0 and "--subtitles keeps their timings" in err
