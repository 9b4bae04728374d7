"""Gettext catalogs (runtime/po.py): `Translator.translate_po` and `mt-translate --po`. GERMAN[i] ->
ENGLISH[i] is what the fixture model reproduces on any CPU (greedy), so messages are asserted exactly;
everything else must be kept."""

from __future__ import annotations

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


def test_the_target_is_the_catalogs_language_or_must_be_given(fixture_translator):
    english = fixture_translator.translate_po(catalog(entry(GERMAN[0])), from_lang="de", **GREEDY)
    assert polib.pofile(english)[0].msgstr == ENGLISH[0]
    template = catalog(entry(ENGLISH[0]), language="")               # a .pot: no Language
    with pytest.raises(TranslationError, match="names no Language"):
        fixture_translator.translate_po(template, **GREEDY)
    german = polib.pofile(fixture_translator.translate_po(template, to="de", **GREEDY))
    assert german.metadata["Language"] == "de" and german[0].msgstr == GERMAN[0]


@pytest.mark.parametrize("document", ["", "\n"])
def test_an_empty_catalog_comes_back_as_it_was(fixture_translator, document):
    assert fixture_translator.translate_po(document, to="en") == document


def test_a_file_that_is_no_catalog_is_a_clear_error(fixture_translator):
    with pytest.raises(TranslationError, match="not a gettext catalog"):
        fixture_translator.translate_po("Hallo Welt\nnoch eine Zeile\n", to="en")


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
