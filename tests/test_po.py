"""Gettext catalogs (runtime/po.py): `Translator.translate_po` and `mt-translate --po`. GERMAN[i] ->
ENGLISH[i] is what the fixture model reproduces on any CPU (greedy), so messages are asserted exactly;
everything else must be kept."""

from __future__ import annotations

import re

import polib
import pytest

from conftest import ENGLISH, GERMAN, ORT_THREADS, invoke
from mtkit.runtime import TranslationError
from mtkit.runtime.cli import main

GREEDY = {"beam_size": 1}
HEADER = '''# A catalog.
msgid ""
msgstr ""
"Language: {language}\\n"
"Content-Type: text/plain; charset=UTF-8\\n"
"Plural-Forms: nplurals={plurals}; plural=(n != 1);\\n"
'''


def catalog(*entries: str, language: str = "en", plurals: int = 2) -> str:
    return "\n".join([HEADER.format(language=language, plurals=plurals), *entries])


def entry(msgid: str, msgstr: str = "", before: str = "") -> str:
    return f'{before}msgid "{msgid}"\nmsgstr "{msgstr}"\n'


def test_untranslated_messages_are_translated_and_flagged_fuzzy(fixture_translator):
    document = catalog(
        entry(GERMAN[0], before="#: app.py:1\n#, python-format\n"),
        entry(GERMAN[1], "schon übersetzt"),                          # translated: kept
        entry(GERMAN[2], "ein Vorschlag", before="#, fuzzy\n"),          # fuzzy: a translator's to review, kept
        f'msgctxt "menu"\nmsgid "{GERMAN[3]}"\nmsgstr ""\n',
        f'msgid "{GERMAN[4]}"\nmsgid_plural "{GERMAN[5]}"\nmsgstr[0] ""\nmsgstr[1] ""\nmsgstr[2] ""\n',
        f'msgid ""\n"  {GERMAN[6]}\\n"\n"{GERMAN[7]} "\nmsgstr ""\n',      # lines, and the spaces around them
        f'#~ msgid "{GERMAN[8]}"\n#~ msgstr ""\n',                         # obsolete: kept
        plurals=3)
    out = polib.pofile(fixture_translator.translate_po(document, from_lang="de", **GREEDY))
    by_id = {e.msgid: e for e in out}
    assert by_id[GERMAN[0]].msgstr == ENGLISH[0] and by_id[GERMAN[0]].flags == ["fuzzy", "python-format"]
    assert by_id[GERMAN[0]].occurrences == [("app.py", "1")]
    assert (by_id[GERMAN[1]].msgstr, by_id[GERMAN[1]].flags) == ("schon übersetzt", [])
    assert (by_id[GERMAN[2]].msgstr, by_id[GERMAN[2]].flags) == ("ein Vorschlag", ["fuzzy"])
    assert by_id[GERMAN[3]].msgctxt == "menu" and by_id[GERMAN[3]].msgstr == ENGLISH[3]
    assert by_id[GERMAN[4]].msgstr_plural == {0: ENGLISH[4], 1: ENGLISH[5], 2: ENGLISH[5]}
    assert by_id[f"  {GERMAN[6]}\n{GERMAN[7]} "].msgstr == f"  {ENGLISH[6]}\n{ENGLISH[7]} "
    [obsolete] = out.obsolete_entries()
    assert obsolete.msgid == GERMAN[8] and obsolete.msgstr == ""
    assert out.metadata["Language"] == "en" and out.header == "A catalog."


@pytest.mark.parametrize("charset", ["ISO-8859-1", "CHARSET"])     # CHARSET: a template's placeholder
def test_the_file_comes_back_as_written_its_charset_the_utf8_it_is_in(fixture_translator, charset):
    """Before: CRLF became LF, a blank line was added at the end, and a Latin-1 label stayed over UTF-8."""
    document = catalog(entry(GERMAN[0])).replace("charset=UTF-8", f"charset={charset}").replace("\n", "\r\n")
    out = fixture_translator.translate_po(document, from_lang="de", **GREEDY)
    expected = document.replace(f"charset={charset}", "charset=UTF-8").replace(
        f'msgid "{GERMAN[0]}"\r\nmsgstr ""', f'#, fuzzy\r\nmsgid "{GERMAN[0]}"\r\nmsgstr "{ENGLISH[0]}"')
    assert out == expected


def test_the_target_is_the_catalogs_language_or_must_be_given(fixture_translator):
    english = fixture_translator.translate_po(catalog(entry(GERMAN[0])), from_lang="de", **GREEDY)
    assert polib.pofile(english)[0].msgstr == ENGLISH[0]
    template = catalog(entry(ENGLISH[0]), language="")               # a .pot: no Language
    with pytest.raises(TranslationError, match="names no Language"):
        fixture_translator.translate_po(template, **GREEDY)
    german = polib.pofile(fixture_translator.translate_po(template, to="de", **GREEDY))
    assert german.metadata["Language"] == "de" and german[0].msgstr == GERMAN[0]
    # A catalog copied from another language's keeps its header: the Language said "en" over German text
    copied = polib.pofile(fixture_translator.translate_po(catalog(entry(ENGLISH[0]), language="en"), to="de", **GREEDY))
    assert copied.metadata["Language"] == "de" and copied[0].msgstr == GERMAN[0]
    regional = polib.pofile(fixture_translator.translate_po(catalog(entry(ENGLISH[0]), language="de_AT"), **GREEDY))
    assert regional.metadata["Language"] == "de_AT" and regional[0].msgstr == GERMAN[0]     # its own, kept


@pytest.mark.parametrize("document", ["", "\n"])
def test_an_empty_catalog_comes_back_as_it_was(fixture_translator, document):
    assert fixture_translator.translate_po(document, to="en") == document


def test_a_file_that_is_no_catalog_is_a_clear_error(fixture_translator):
    with pytest.raises(TranslationError, match="not a gettext catalog"):
        fixture_translator.translate_po("Hallo Welt\nnoch eine Zeile\n", to="en")


@pytest.mark.parametrize("strings, message", [
    # polib reads these without an error, as what lies between a line's first and last characters.
    (f'msgid "{GERMAN[0]}\nmsgstr ""\n', 'line 8: a string must be in double quotes: msgid "' + GERMAN[0]),
    (f'msgid {GERMAN[0]}\nmsgstr ""\n', "line 8: a string must be in double quotes: msgid " + GERMAN[0]),
    (f'msgid ""\n"{GERMAN[0]}\nmsgstr ""\n', "line 9: a string must be in double quotes"),
    (f'msgid "{GERMAN[0]}"\nmsgstr[0] "x\nmsgstr[1] ""\n', 'line 9: a string must be in double quotes: msgstr[0] "x'),
    (f'#~ msgid "{GERMAN[0]}\n#~ msgstr ""\n', "line 8: a string must be in double quotes: #~ msgid"),
    # ... and these it would write back as other strings ("\\q").
    ('msgid "Hal\\qlo"\nmsgstr ""\n', 'line 8: unknown escape \\q in: msgid "Hal\\qlo"'),
])
def test_a_string_not_in_quotes_is_a_clear_error_not_a_message_cut_short(fixture_translator, strings, message):
    with pytest.raises(TranslationError, match="not a gettext catalog: " + re.escape(message)):
        fixture_translator.translate_po(catalog(strings), to="en")


def test_what_a_catalog_says_is_never_a_path_to_open(fixture_translator, tmp_path, monkeypatch):
    """polib opens a string that names a file: a catalog sent to mt-serve must not read the server's."""
    private = catalog(entry(GERMAN[0], "private"))       # "private" is in no other line
    (tmp_path / "private.po").write_text(private, encoding="utf-8")
    with pytest.raises(TranslationError, match="not a gettext catalog"):
        fixture_translator.translate_po(str(tmp_path / "private.po"), to="en")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "# a.po").write_text(private, encoding="utf-8")        # a comment, as a catalog
    assert "private" not in fixture_translator.translate_po("# a.po", to="en")


def test_cli_po(model, tmp_path, capsys):
    source = tmp_path / "app.po"
    source.write_text(catalog(entry(GERMAN[9])), encoding="utf-8")
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), "--beam-size", "1", "--from", "de", "--po",
                                   "-i", str(source), "-o", str(tmp_path / "app.en.po")], capsys)
    assert (code, out, err) == (0, "", "")
    assert polib.pofile(str(tmp_path / "app.en.po"))[0].msgstr == ENGLISH[9]
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), "--beam-size", "1", "--from", "de", "-i",
                                   str(source)], capsys)                   # a .po without --po: read as one
    assert code == 0 and polib.pofile(out)[0].msgstr == ENGLISH[9]
    (tmp_path / "app.txt").write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    code, _, err = invoke(main, ["--threads", str(ORT_THREADS), "-i", str(tmp_path / "app.txt")], capsys)
    assert code == 0 and "--po translates its messages" in err              # otherwise named: a note
    source.write_text("Hallo Welt\n", encoding="utf-8")
    code, _, err = invoke(main, ["--po", "-i", str(source)], capsys)
    assert code == 1 and "not a gettext catalog" in err and "Traceback" not in err
    source.write_text(catalog(f'msgid "{GERMAN[9]}\nmsgstr ""\n'), encoding="utf-8")     # a quote missing
    code, out, err = invoke(main, ["--po", "-i", str(source)], capsys)
    assert (code, out) == (1, "") and err == (f'mt-translate: error: {source}: not a gettext catalog: line 8: a string '
                                              f'must be in double quotes: msgid "{GERMAN[9]}\n')
