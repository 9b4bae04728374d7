"""Subtitles (runtime/subtitles.py): `Translator.translate_subtitles` and `mt-translate --subtitles`.
GERMAN[i] -> ENGLISH[i] is what the fixture model reproduces on any CPU (greedy), so cue texts are
asserted exactly; everything that is not a cue's text must come back byte for byte."""

from __future__ import annotations

import pytest

from conftest import ENGLISH, GERMAN, ORT_THREADS, invoke
from mtkit.runtime.cli import main
from mtkit.runtime.subtitles import looks_like_subtitles, share, wrap

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


def test_ssa_override_tags_stay_at_the_start_and_styles_around_their_words(fixture_translator):
    """SRT files carry SSA tags: "{\\an8}" (top of the screen) at a cue's start, "{\\i1}...{\\i0}" for italics."""
    words = GERMAN[4].split()
    document = srt(["{\\an8}" + GERMAN[1]], [" ".join(["{\\i1}" + words[0] + "{\\i0}", *words[1:]])])
    plain = srt([GERMAN[1]], [f"<i>{words[0]}</i> {' '.join(words[1:])}"])
    out, expected = (fixture_translator.translate_subtitles(d, **GREEDY).split("\n") for d in (document, plain))
    assert out[2] == "{\\an8}" + expected[2]                                  # the tag, then the same text
    assert out[6] == expected[6].replace("<i>", "{\\i1}").replace("</i>", "{\\i0}")   # as <i> would be


def test_a_cue_never_gets_a_blank_line(fixture_translator):
    document = srt(["Tom", "schrie."])                         # two words over two lines -> "Tom yelled."
    out = fixture_translator.translate_subtitles(document, **GREEDY)
    lines = out.split("\n")
    assert lines[:2] == document.split("\n")[:2] and "" not in lines[2:-1]
    assert " ".join(lines[2:-1]).split() == ENGLISH[6].split()


def timed(*cues: tuple[float, float, str]) -> str:
    """An SRT file of one-line cues at the given times (seconds)."""
    def stamp(t):
        return f"00:00:{int(t):02d},{round(t % 1 * 1000):03d}"
    return "\n".join(f"{n}\n{stamp(a)} --> {stamp(b)}\n{text}\n" for n, (a, b, text) in enumerate(cues, start=1))


def cue_texts(document: str) -> list[str]:
    return [block.split("\n", 2)[2].replace("\n", " ").strip() for block in document.strip().split("\n\n")]


@pytest.mark.parametrize("index", [i for i, g in enumerate(GERMAN) if len(g.split()) >= 6][:3])
def test_a_sentence_cut_over_cues_is_translated_whole_and_shared_out_over_them(fixture_translator, index):
    words = GERMAN[index].split()
    third = max(len(words) // 3, 1)
    cut = [" ".join(words[:third]), " ".join(words[third:2 * third]), " ".join(words[2 * third:])]
    document = timed((1.0, 2.0, cut[0]), (2.1, 3.0, cut[1]), (3.5, 5.0, cut[2]))
    texts = cue_texts(fixture_translator.translate_subtitles(document, **GREEDY))
    assert " ".join(texts) == ENGLISH[index] and all(texts)
    # Each cue's share is about its share of the source (a third here), never empty, in order.
    assert all(len(t) <= len(ENGLISH[index]) * 0.6 for t in texts)


def test_cues_are_not_joined_across_a_sentence_end_a_pause_dialogue_or_markup(fixture_translator):
    half = lambda i: " ".join(GERMAN[i].split()[:2])              # noqa: E731  -- no sentence end
    document = timed((1, 2, GERMAN[1]), (2.1, 3, GERMAN[2]),        # a sentence end
                     (4, 5, half(3)), (7.5, 9, GERMAN[4]),          # a pause of 2.5 s
                     (10, 11, half(5)), (11.1, 12, f"- {GERMAN[6]}"),                      # a new speaker
                     (13, 14, half(7)), (14.1, 15, f"- {GERMAN[8]}\n- {GERMAN[9]}"),       # dialogue
                     (16, 17, half(10)), (17.1, 18, f"<i>{GERMAN[11]}</i>"))               # markup
    alone = [t.text for t in fixture_translator.translate([GERMAN[1], GERMAN[2], half(3), GERMAN[4], half(5),
                                                           half(7), half(10)], **GREEDY)]
    texts = cue_texts(fixture_translator.translate_subtitles(document, **GREEDY))
    assert texts == [*alone[:5], f"- {ENGLISH[6]}", alone[5], f"- {ENGLISH[8]} - {ENGLISH[9]}", alone[6],
                     f"<i>{ENGLISH[11]}</i>"]


def test_a_group_whose_translation_is_too_short_to_share_is_translated_cue_by_cue(fixture_translator, monkeypatch):
    from mtkit.runtime import subtitles
    monkeypatch.setattr(subtitles, "share", lambda text, weights: None)
    halves = [" ".join(GERMAN[0].split()[:2]), " ".join(GERMAN[0].split()[2:])]
    texts = cue_texts(fixture_translator.translate_subtitles(timed((1, 2, halves[0]), (2.1, 3, halves[1])), **GREEDY))
    assert texts == [t.text for t in fixture_translator.translate(halves, **GREEDY)]


@pytest.mark.parametrize("text, weights, expected", [
    ("one two three four", [1, 1], ["one two", "three four"]),
    ("I saw a dog, and it ran away quickly", [1, 1], ["I saw a dog,", "and it ran away quickly"]),   # the comma
    ("a b c", [1, 1, 1], ["a", "b", "c"]),
    ("a b c d e f g h", [1, 3], ["a b", "c d e f g h"]),
    ("a b", [1, 1, 1], None),
])
def test_share_cuts_between_words_by_weight(text, weights, expected):
    assert share(text, weights) == expected


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


def test_cli_knows_subtitles_by_name_and_notes_them_otherwise(model, tmp_path, capsys):
    (tmp_path / "film.srt").write_text(srt([GERMAN[9]]), encoding="utf-8")
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), "--beam-size", "1", "--from", "de", "-i",
                                   str(tmp_path / "film.srt")], capsys)
    assert (code, err) == (0, "") and out == srt([ENGLISH[9]])              # .srt: --subtitles, unasked
    (tmp_path / "film.txt").write_text(srt([GERMAN[9]]), encoding="utf-8")
    code, _, err = invoke(main, ["--threads", str(ORT_THREADS), "--beam-size", "1", "-i", str(tmp_path / "film.txt")],
                          capsys)
    assert code == 0 and "--subtitles keeps their timings" in err


def test_the_benchmark_cuts_each_sentence_over_two_cues(fixture_translator):
    from mtkit.benchmarks.cut_sentences import cut_into_cues, subtitle_scores as score
    document = cut_into_cues([GERMAN[0], GERMAN[1]])
    assert looks_like_subtitles(document) and len(cue_texts(document)) == 4
    assert " ".join(cue_texts(document)[:2]) == GERMAN[0]
    scores = [score(fixture_translator, [GERMAN[0], GERMAN[1]], ENGLISH[:2], n) for n in (1, 4)]
    assert all(0 <= s["bleu"] <= 100 and 0 <= s["chrf"] <= 100 for s in scores)


def test_text_without_a_timing_line_is_not_subtitles(fixture_translator):
    from mtkit.runtime.errors import TranslationError
    with pytest.raises(TranslationError, match="^no subtitle cues found"):
        fixture_translator.translate_subtitles(f"{GERMAN[0]}\n{GERMAN[1]}\n", **GREEDY)


def test_a_malformed_timing_line_is_warned_of_and_its_cue_kept(fixture_translator):
    from mtkit.runtime.subtitles import SubtitleWarning
    document = srt([GERMAN[1]], [GERMAN[2]]).replace("00:00:02,000 --> 00:00:02,900", "00:00:02,000 --> garbage")
    with pytest.warns(SubtitleWarning, match="^line 6 is not a valid timing line, so its cue is left untranslated: "
                                             "00:00:02,000 --> garbage$"):
        out = fixture_translator.translate_subtitles(document, **GREEDY)
    assert out == document.replace(GERMAN[1], ENGLISH[1])


def test_cli_subtitles_of_plain_text_is_an_error(model, tmp_path, capsys):
    source = tmp_path / "notes.txt"
    source.write_text(f"{GERMAN[0]}\n{GERMAN[1]}\n", encoding="utf-8")
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), "--subtitles", "-i", str(source),
                                   "-o", str(tmp_path / "out.srt")], capsys)
    assert code == 1 and out == "" and not (tmp_path / "out.srt").exists()
    assert err == (f'mt-translate: error: {source}: no subtitle cues found (no line is a timing line such as '
                   '"00:00:01,000 --> 00:00:03,500")\n')
    source.write_text("1\n00:00:03,000 --> garbage\nHallo\n", encoding="utf-8")
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), "--subtitles", "-i", str(source)], capsys)
    assert code == 1 and err == (f"mt-translate: error: {source}: no subtitle cues found (line 2 is not a valid "
                                 "timing line: 00:00:03,000 --> garbage)\n")


def test_cli_warns_of_a_malformed_timing_line(model, tmp_path, capsys):
    source = tmp_path / "film.srt"
    source.write_text(srt([GERMAN[1]], [GERMAN[2]]).replace("00:00:02,000 --> 00:00:02,900", "00:00:02,000 --> x"),
                      encoding="utf-8")
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), "--beam-size", "1", "--from", "de", "--subtitles",
                                   "-i", str(source)], capsys)
    assert code == 0 and ENGLISH[1] in out and GERMAN[2] in out
    assert err == ("mt-translate: warning: document: line 6 is not a valid timing line, so its cue is left "
                   "untranslated: 00:00:02,000 --> x\n")
