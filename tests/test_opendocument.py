"""OpenDocument files (runtime/opendocument.py): `Translator.translate_opendocument` and `mt-translate --odf`.
GERMAN[i] -> ENGLISH[i] is what the fixture model reproduces on any CPU (greedy), so texts are asserted
exactly; everything that is not words must come back as it was."""

from __future__ import annotations

import io
import zipfile

import pytest
from lxml import etree
from office_files import PNG, zipped

from conftest import ENGLISH, GERMAN, translate_cli as cli
from mtkit.runtime import TranslationError
from mtkit.runtime.opendocument import TEXT

GREEDY = {"beam_size": 1}
NAMESPACES = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
              f'xmlns:text="{TEXT}" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
              'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" '
              'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
              'xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:dc="http://purl.org/dc/elements/1.1/" '
              'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0"')


def odt(body: str, header: str = "", mimetype: str = "application/vnd.oasis.opendocument.text",
        manifest: str = "") -> bytes:
    """An .odt: content.xml's body text, a header in styles.xml, German language marks."""
    entries = {
        "mimetype": mimetype,
        "content.xml": f'<office:document-content {NAMESPACES}><office:automatic-styles><style:style '
                       'style:name="T1" style:family="text"><style:text-properties fo:font-weight="bold" '
                       'fo:language="de" fo:country="DE"/></style:style></office:automatic-styles>'
                       f'<office:body><office:text>{body}</office:text></office:body></office:document-content>',
        "styles.xml": f'<office:document-styles {NAMESPACES}><office:master-styles><style:master-page '
                      f'style:name="Standard"><style:header>{header}</style:header></style:master-page>'
                      '</office:master-styles></office:document-styles>',
        "meta.xml": f'<office:document-meta {NAMESPACES}><office:meta><dc:language>de-DE</dc:language>'
                    '</office:meta></office:document-meta>',
        "Pictures/bild.png": PNG,
        "META-INF/manifest.xml": f'<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:'
                                 f'manifest:1.0">{manifest}</manifest:manifest>',
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data, compress_type=zipfile.ZIP_STORED if name == "mimetype" else None)
    return out.getvalue()


def paragraphs(document: bytes, part: str = "content.xml") -> list[str]:
    with zipfile.ZipFile(io.BytesIO(document)) as z:
        tree = etree.fromstring(z.read(part))
    return ["".join(p.itertext()) for p in tree.iter(f"{{{TEXT}}}p", f"{{{TEXT}}}h")]


def part(document: bytes, name: str = "content.xml"):
    with zipfile.ZipFile(io.BytesIO(document)) as z:
        return etree.fromstring(z.read(name))


def translate(translator, document: bytes) -> bytes:
    return translator.translate_opendocument(document, "en", from_lang="de", **GREEDY)


def test_headings_paragraphs_cells_and_headers_are_translated(fixture_translator):
    body = (f'<text:h text:outline-level="1">{GERMAN[0]}</text:h><text:p>{GERMAN[1]}</text:p>'
            f'<table:table><table:table-row><table:table-cell><text:p>{GERMAN[2]}</text:p></table:table-cell>'
            f'</table:table-row></table:table><text:p/>')
    source = odt(body, header=f"<text:p>{GERMAN[3]}</text:p>")
    out = translate(fixture_translator, source)
    assert paragraphs(out) == [ENGLISH[0], ENGLISH[1], ENGLISH[2], ""]
    assert paragraphs(out, "styles.xml") == [ENGLISH[3]]
    with zipfile.ZipFile(io.BytesIO(source)) as before, zipfile.ZipFile(io.BytesIO(out)) as after:
        assert after.namelist() == before.namelist()
        assert (after.infolist()[0].filename, after.infolist()[0].compress_type) == ("mimetype", zipfile.ZIP_STORED)
        for name in ("mimetype", "Pictures/bild.png", "META-INF/manifest.xml"):
            assert after.read(name) == before.read(name)
    assert part(out, "meta.xml").findtext(".//{http://purl.org/dc/elements/1.1/}language") == "en-US"
    properties = part(out).find(".//{urn:oasis:names:tc:opendocument:xmlns:style:1.0}text-properties")
    fo = "{urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0}"
    assert (properties.get(f"{fo}language"), properties.get(f"{fo}country")) == ("en", "US")


def test_spans_links_spaces_tabs_breaks_and_notes(fixture_translator):
    words = GERMAN[7].split()                          # "Wir haben ein sehr kleines Haus."
    formatted = (f'<text:p>{" ".join(words[:3])}<text:s/><text:span text:style-name="T1">{" ".join(words[3:5])}'
                 f'</text:span> {words[5]}</text:p>')
    linked = f'<text:p><text:a xlink:type="simple" xlink:href="https://example.org/">{GERMAN[8]}</text:a></text:p>'
    lines = f"<text:p>{GERMAN[9]}<text:line-break/>{GERMAN[10]}<text:tab/>{GERMAN[11]}</text:p>"
    noted = (f'<text:p>{GERMAN[12]}<text:note text:id="n1" text:note-class="footnote"><text:note-citation>1'
             f'</text:note-citation><text:note-body><text:p>{GERMAN[13]}</text:p></text:note-body></text:note></text:p>')
    out = translate(fixture_translator, odt(formatted + linked + lines + noted))
    tree = part(out)
    first, second, third, fourth, inside = tree.iter(f"{{{TEXT}}}p")
    assert "".join(first.itertext()) == ENGLISH[7]
    assert [s.get(f"{{{TEXT}}}style-name") for s in first.iter(f"{{{TEXT}}}span") if s.get(f"{{{TEXT}}}style-name")]
    [link] = second.iter(f"{{{TEXT}}}a")
    assert link.get("{http://www.w3.org/1999/xlink}href") == "https://example.org/"
    assert "".join(link.itertext()) == ENGLISH[8]
    assert [c.tag.split("}")[1] for c in third if c.tag in (f"{{{TEXT}}}line-break", f"{{{TEXT}}}tab")] == [
        "line-break", "tab"]
    assert "".join(inside.itertext()) == ENGLISH[13]                            # a note's own paragraph
    assert "".join(fourth.itertext()) == ENGLISH[12] + "1" + ENGLISH[13]         # the note, whole, after its word


@pytest.mark.parametrize("document, message", [
    (b"not a zip", "not an OpenDocument file"),
    (odt("", mimetype="application/vnd.oasis.opendocument.graphics"), "not an OpenDocument text, presentation"),
    (odt("", manifest="<manifest:file-entry><manifest:encryption-data/></manifest:file-entry>"), "password"),
    (zipped({"[Content_Types].xml": "<Types/>"}), "mimetype ''"),
])
def test_what_is_not_an_opendocument_file_is_a_clear_error(fixture_translator, document, message):
    with pytest.raises(TranslationError, match=message):
        translate(fixture_translator, document)


def test_cli_translates_an_odt(model, tmp_path, capsys):
    (tmp_path / "brief.odt").write_bytes(odt(f"<text:p>{GERMAN[0]}</text:p>"))
    code, out, err = cli(capsys, "--odf", "-i", str(tmp_path / "brief.odt"), "-o", str(tmp_path / "letter.odt"))
    assert (code, out, err) == (0, "", "")
    assert paragraphs((tmp_path / "letter.odt").read_bytes()) == [ENGLISH[0]]


def test_a_spreadsheets_formulas_lists_and_filters_follow_its_cells(fixture_translator):
    """As in an Excel workbook: a formula comparing a cell with its old text would compute something else."""
    value, other = GERMAN[16], GERMAN[23]
    q = "&quot;"
    body = ('<table:database-ranges><table:database-range table:target-range-address="T.A1:T.A2"><table:filter>'
            f'<table:filter-condition table:field-number="0" table:operator="=" table:value="{value}"/>'
            '</table:filter></table:database-range></table:database-ranges>'
            '<table:content-validations><table:content-validation table:name="val1" table:condition='
            f'"of:cell-content-is-in-list({q}{value.upper()}{q};{q}{other}{q})"/></table:content-validations>'
            f'<table:table table:name="T"><table:table-row><table:table-cell office:value-type="string">'
            f'<text:p>{value}</text:p></table:table-cell><table:table-cell table:formula='
            f'"of:=COUNTIF([.A1:.A3];{q}{value}{q})+LEN({q}{other}{q})" office:value-type="float" office:value="1">'
            '<text:p>1</text:p></table:table-cell></table:table-row></table:table>')
    document = odt(body, mimetype="application/vnd.oasis.opendocument.spreadsheet")
    tree = part(translate(fixture_translator, document.replace(b"office:text>", b"office:spreadsheet>")))
    table = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
    bananas = ENGLISH[16]
    assert [c.get(f"{table}formula") for c in tree.iter(f"{table}table-cell")] == [
        None, f'of:=COUNTIF([.A1:.A3];"{bananas}")+LEN("{other}")']         # text no cell holds stays
    assert next(tree.iter(f"{table}content-validation")).get(f"{table}condition") == \
        f'of:cell-content-is-in-list("{bananas}";"{other}")'
    assert next(tree.iter(f"{table}filter-condition")).get(f"{table}value") == bananas


def test_the_words_a_cross_reference_shows_are_translated_in_it(fixture_translator):
    reference = f'<text:bookmark-ref text:reference-format="text" text:ref-name="Ziel">{GERMAN[18]}</text:bookmark-ref>'
    page = '<text:bookmark-ref text:reference-format="page" text:ref-name="Ziel">3</text:bookmark-ref>'
    body = f'<text:p>{GERMAN[10]} {reference} {page}</text:p>'
    tree = part(translate(fixture_translator, odt(body)))
    refs = list(tree.iter(f"{{{TEXT}}}bookmark-ref"))
    assert [r.text for r in refs] == [ENGLISH[18], "3"]
    assert [r.get(f"{{{TEXT}}}ref-name") for r in refs] == ["Ziel", "Ziel"]
    assert paragraphs(translate(fixture_translator, odt(body)))[0].startswith(ENGLISH[10])


def test_a_page_number_shows_the_model_a_number_and_stays_whole():
    """"Seite <page-number/> von <page-count/>" reads as "Seite 1 von 2" to the model (as "Seite von"
    it dropped the "of"), and both fields come back as they were."""
    from mtkit.runtime.opendocument import OdfParagraph

    body = ('<text:p>Seite <text:page-number text:select-page="current">1</text:page-number> von '
            '<text:page-count>1</text:page-count></text:p>')
    element = next(part(odt(body)).iter(f"{{{TEXT}}}p"))
    words = OdfParagraph(element)
    assert words.fragment() == 'Seite <span class="o1">1</span> von <span class="o3">2</span>'
    words.rewrite('Page <span class="o1">1</span> of <span class="o3">2</span>', "en-US")
    assert "".join(element.itertext()) == "Page 1 of 1"
    assert [child.tag.split("}")[1] for child in element.iter() if child is not element] == \
        ["span", "page-number", "span", "page-count"]
