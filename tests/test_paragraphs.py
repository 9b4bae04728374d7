"""Wrapped plain text (runtime/paragraphs.py): `Translator.translate_paragraphs` and `mt-translate
--paragraphs`. GERMAN[i] -> ENGLISH[i] is what the fixture model reproduces on any CPU (greedy)."""

from __future__ import annotations

import textwrap

import pytest

from conftest import ENGLISH, GERMAN, ORT_THREADS, invoke
from mtkit.runtime.cli import main
from mtkit.runtime.paragraphs import _paragraphs

GREEDY = {"from_lang": "de", "beam_size": 1}


def test_a_wrapped_paragraph_is_translated_whole_and_wrapped_again(fixture_translator):
    text = " ".join(GERMAN[20:24])
    width = 50
    document = (f"{GERMAN[0]}\r\n\r\n" + "\r\n".join(textwrap.wrap(text, width)) + "\r\n\r\n"
                f"- {GERMAN[1]}\r\n- {GERMAN[2]}\r\n\r\n  {GERMAN[3]}\r\n")
    out = fixture_translator.translate_paragraphs(document, **GREEDY)
    english = " ".join(ENGLISH[20:24])
    widest = max(len(line) for line in textwrap.wrap(text, width))
    assert out == (f"{ENGLISH[0]}\r\n\r\n" + "\r\n".join(textwrap.wrap(english, widest, break_long_words=False,
                                                                      break_on_hyphens=False)) + "\r\n\r\n"
                   f"- {ENGLISH[1]}\r\n- {ENGLISH[2]}\r\n\r\n  {ENGLISH[3]}\r\n")


def test_narrow_blocks_and_list_items_keep_their_lines(fixture_translator):
    document = f"{GERMAN[4]}\n{GERMAN[5]}\n"           # short lines: a greeting, an address
    assert max(map(len, GERMAN[4:6])) <= 40
    out = fixture_translator.translate_paragraphs(document, **GREEDY)
    assert out == f"{ENGLISH[4]}\n{ENGLISH[5]}\n"
    assert fixture_translator.translate_paragraphs("", **GREEDY) == ""
    assert fixture_translator.translate_paragraphs("\n\n", **GREEDY) == "\n\n"
    assert fixture_translator.translate_paragraphs(GERMAN[6], **GREEDY) == ENGLISH[6]       # no final newline
    assert fixture_translator.translate_paragraphs("- \n\n", **GREEDY) == "- \n\n"          # an empty list item


@pytest.mark.parametrize("bodies, expected", [
    (["a" * 60, "b" * 58, "c" * 20, "", "d" * 70], [(0, 3, 60), (4, 5, 70)]),     # a short last line, a blank one
    (["a" * 60, "b" * 30, "c" * 60], [(0, 2, 60), (2, 3, 60)]),                   # a short line ends a paragraph
    (["- " + "a" * 60, "  " + "b" * 60, "- " + "c" * 60], [(0, 2, 62), (2, 3, 62)]),   # list items
    (["Hello,", "Tom"], [(0, 1, 6), (1, 2, 6)]),                                  # narrow: line by line
])
def test_paragraphs_are_cut_where_the_layout_says(bodies, expected):
    assert _paragraphs(bodies) == expected


def test_cli_paragraphs(fixture_bundle, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("MT_MODEL", str(fixture_bundle))
    source = tmp_path / "brief.txt"
    source.write_text(f"{GERMAN[7]}\n\n{GERMAN[8]}\n", encoding="utf-8")
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), "--paragraphs", "--from", "de", "--beam-size", "1",
                                   "-i", str(source)], capsys)
    assert code == 0 and err == "" and out == f"{ENGLISH[7]}\n\n{ENGLISH[8]}\n"
    code, _, err = invoke(main, ["--paragraphs", "--markdown", "-i", str(source)], capsys)
    assert code == 2 and "--markdown and --paragraphs: choose one" in err


def test_wrapped_text_is_told_apart_from_one_sentence_a_line():
    from mtkit.runtime.paragraphs import looks_wrapped
    text = " ".join(GERMAN[20:40])
    assert looks_wrapped(textwrap.wrap(text, 60))
    assert not looks_wrapped(GERMAN[20:40])
    assert not looks_wrapped(textwrap.wrap(GERMAN[20], 60))          # a break or none: not enough to tell


def test_plain_mt_translate_notes_wrapped_input(fixture_bundle, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("MT_MODEL", str(fixture_bundle))
    source = tmp_path / "brief.txt"
    source.write_text("\n".join(textwrap.wrap(" ".join(GERMAN[20:40]), 60)) + "\n", encoding="utf-8")
    args = ["--threads", str(ORT_THREADS), "--from", "de", "--beam-size", "1", "-i", str(source)]
    code, _, err = invoke(main, args, capsys)
    assert code == 0 and err == ("mt-translate: note: the input looks like wrapped paragraphs, which line by line are "
                                 "translated in pieces; --paragraphs translates each whole\n")
    assert invoke(main, [*args, "-q"], capsys)[2] == ""
