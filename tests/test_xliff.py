"""XLIFF (runtime/xliff.py): `Translator.translate_xliff` and `mt-translate --xliff`. GERMAN[i] -> ENGLISH[i]
is what the fixture model reproduces on any CPU (greedy), so targets are asserted exactly; everything
else in the file must be kept."""

from __future__ import annotations

import pytest
from lxml import etree

from conftest import ENGLISH, GERMAN, ORT_THREADS, invoke
from mtkit.runtime import TranslationError
from mtkit.runtime.cli import main

GREEDY = {"beam_size": 1}
V1 = "urn:oasis:names:tc:xliff:document:1.2"
V2 = "urn:oasis:names:tc:xliff:document:2.0"


def xliff1(*units: str, target_language: str = ' target-language="en"') -> str:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<xliff version="1.2" xmlns="{V1}">\n'
            f'  <file source-language="de-DE"{target_language} datatype="plaintext" original="app">\n    <body>\n'
            + "".join(f'      <trans-unit id="u{n}">\n        {unit}\n      </trans-unit>\n'
                      for n, unit in enumerate(units))
            + "    </body>\n  </file>\n</xliff>\n")


def targets(document: str, namespace: str = V1) -> dict[str, etree._Element]:
    root = etree.fromstring(document.encode())
    unit = "trans-unit" if namespace == V1 else "unit"
    return {u.get("id"): u.find(f".//{{{namespace}}}target") for u in root.iter(f"{{{namespace}}}{unit}")}


def text(element) -> str:
    return "".join(element.itertext())


def test_units_without_a_target_are_translated_and_marked_for_review(fixture_translator):
    document = xliff1(f"<source>{GERMAN[0]}</source>",
                      f"<source>{GERMAN[1]}</source>\n        <target>schon übersetzt</target>",
                      f"<source>{GERMAN[2]}</source>\n        <target/>\n        <note>ein Hinweis</note>",
                      f"<source>  {GERMAN[3]}\n{GERMAN[4]} </source>")
    out = fixture_translator.translate_xliff(document, **GREEDY)
    found = targets(out)
    assert [text(found[f"u{n}"]) for n in range(4)] == [ENGLISH[0], "schon übersetzt", ENGLISH[2],
                                                         f"  {ENGLISH[3]}\n{ENGLISH[4]} "]
    assert found["u0"].attrib == {"state": "needs-review-translation", "state-qualifier": "mt-suggestion"}
    assert found["u1"].attrib == {}                                   # a translator's target: kept as it was
    assert found["u0"].getprevious().tag == f"{{{V1}}}source"        # right after its source, indented alike
    assert '        <target state="needs-review-translation"' in out
    assert "<note>ein Hinweis</note>" in out and out.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<xliff')
    assert outline(out) == outline(document)               # everything but the targets, as it was


def outline(document: str) -> list[tuple]:
    """Every element but the targets and their marks: name, attributes and text."""
    root = etree.fromstring(document.encode())
    marks, target = ("state", "state-qualifier"), (f"{{{V1}}}target", f"{{{V2}}}target")
    return [(e.tag, {k: v for k, v in e.attrib.items() if k not in marks}, (e.text or "").strip()) for e in root.iter()
            if e.tag not in target and not any(a.tag in target for a in e.iterancestors())]


def test_inline_codes_come_back_once_as_they_were(fixture_translator):
    words = GERMAN[7].rstrip(".").split()        # "Wir haben ein sehr kleines Haus"
    paired = f'<source>{" ".join(words[:3])} <g id="1" ctype="bold">{" ".join(words[3:5])}</g> {words[5]}.</source>'
    placeholder = f'<source>{GERMAN[16]} <x id="INTERPOLATION" equiv-text="{{{{ n }}}}"/></source>'
    out = fixture_translator.translate_xliff(
        xliff1(paired, placeholder, '<source><x id="ICU" equiv-text="{n, plural}"/></source>'), **GREEDY)
    found = targets(out)
    assert text(found["u0"]) == ENGLISH[7]
    assert [(etree.QName(c).localname, dict(c.attrib)) for c in found["u0"]] == [("g", {"id": "1", "ctype": "bold"})]
    assert [(etree.QName(c).localname, dict(c.attrib)) for c in found["u1"]] == [
        ("x", {"id": "INTERPOLATION", "equiv-text": "{{ n }}"})]
    assert "`" not in text(found["u1"])                      # no placeholder name is left behind
    assert [(etree.QName(c).localname, c.get("id")) for c in found["u2"]] == [("x", "ICU")]   # no words: a copy


def test_translate_no_and_icu_plurals(fixture_translator):
    plural = f"{{count, plural, one {{{GERMAN[0]}}} other {{{GERMAN[1]}}}}}"
    document = xliff1(f"<source>{plural}</source>", f"<source>{GERMAN[2]}</source>").replace(
        '<trans-unit id="u1">', '<trans-unit id="u1" translate="no">')
    found = targets(fixture_translator.translate_xliff(document, **GREEDY))
    assert text(found["u0"]) == f"{{count, plural, one {{{ENGLISH[0]}}} other {{{ENGLISH[1]}}}}}"
    assert found["u1"] is None


def test_the_target_language_is_the_files_or_must_be_given(fixture_translator):
    document = xliff1(f"<source>{GERMAN[0]}</source>", target_language="")
    with pytest.raises(TranslationError, match="names no target language"):
        fixture_translator.translate_xliff(document, **GREEDY)
    out = fixture_translator.translate_xliff(document, "en", **GREEDY)
    assert 'target-language="en"' in out and text(targets(out)["u0"]) == ENGLISH[0]


def test_xliff_2_segments_are_translated_with_their_codes(fixture_translator):
    document = (f'<xliff xmlns="{V2}" version="2.1" srcLang="de" trgLang="en"><file id="f">'
                f'<unit id="a"><segment><source>{GERMAN[0]}</source></segment></unit>'
                f'<unit id="b"><segment state="initial"><source>{GERMAN[5].rstrip("?")}<ph id="1"/>?</source>'
                f'</segment></unit><unit id="c"><segment state="final"><source>{GERMAN[6]}</source>'
                f'<target>fertig</target></segment></unit></file></xliff>')
    out = fixture_translator.translate_xliff(document, **GREEDY)
    found, root = targets(out, V2), etree.fromstring(out.encode())
    assert text(found["a"]) == ENGLISH[0] and text(found["c"]) == "fertig"
    assert [etree.QName(c).localname for c in found["b"]] == ["ph"]
    assert [s.get("state") for s in root.iter(f"{{{V2}}}segment")] == ["translated", "translated", "final"]


@pytest.mark.parametrize("document, message", [
    ("<xliff version='1.2'><file>", "not XLIFF"),
    ("<html><body/></html>", "not XLIFF 1.x or 2.x: the root is <html>"),
    (f'<xliff version="3.0" xmlns="{V1}"/>', "version '3.0'"),
])
def test_what_is_not_xliff_is_a_clear_error(fixture_translator, document, message):
    with pytest.raises(TranslationError, match=message):
        fixture_translator.translate_xliff(document, **GREEDY)


def test_cli_translates_an_xliff_file(fixture_bundle, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("MT_MODEL", str(fixture_bundle))
    (tmp_path / "messages.xlf").write_text(xliff1(f"<source>{GERMAN[0]}</source>"), encoding="utf-8")
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), "--beam-size", "1", "--xliff", "-i",
                                   str(tmp_path / "messages.xlf"), "-o", str(tmp_path / "messages.en.xlf")], capsys)
    assert (code, out, err) == (0, "", "")
    assert text(targets((tmp_path / "messages.en.xlf").read_text(encoding="utf-8"))["u0"]) == ENGLISH[0]
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), "--beam-size", "1", "-i",
                                   str(tmp_path / "messages.xlf")], capsys)   # an .xlf needs no --xliff
    assert code == 0 and text(targets(out)["u0"]) == ENGLISH[0]
    (tmp_path / "messages.txt").write_text(xliff1(f"<source>{GERMAN[0]}</source>"), encoding="utf-8")
    code, _, err = invoke(main, ["--threads", str(ORT_THREADS), "-i", str(tmp_path / "messages.txt")], capsys)
    assert code == 0 and "--xliff translates its units" in err                # otherwise named: a note


def test_a_declared_encoding_other_than_utf8_neither_garbles_nor_mislabels(fixture_translator):
    # Before: the text was read again as Latin-1 ("SchÃ¶n" in source and target), and the file written
    # as UTF-8 still said ISO-8859-1.
    document = xliff1("<source>Schön, Grüße.</source>").replace('encoding="UTF-8"', "encoding='ISO-8859-1'")
    out = fixture_translator.translate_xliff(document, **GREEDY)
    assert out.startswith("<?xml version=\"1.0\" encoding='UTF-8'?>\n")
    root = etree.fromstring(out.encode("utf-8"))
    assert text(root.find(f".//{{{V1}}}source")) == "Schön, Grüße." and "Ã" not in out


def test_crlf_line_endings_a_bom_and_the_declaration_are_kept(fixture_translator):
    # Before: every line ended in "\n", and with a BOM the <?xml ...?> declaration was dropped.
    document = "\ufeff" + xliff1(f"<source>{GERMAN[0]}</source>").replace("\n", "\r\n")
    out = fixture_translator.translate_xliff(document, **GREEDY)
    assert out.startswith('\ufeff<?xml version="1.0" encoding="UTF-8"?>\r\n<xliff ') and out.endswith("</xliff>\r\n")
    assert out.count("\r\n") == document.count("\r\n") + 1 and "\n" not in out.replace("\r\n", "")   # + the target
    assert text(targets(out[1:])["u0"]) == ENGLISH[0]
