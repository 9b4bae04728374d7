"""Excel workbooks (runtime/sheets.py): `Translator.translate_xlsx` and `mt-translate --xlsx`. GERMAN[i] ->
ENGLISH[i] is what the fixture model reproduces on any CPU (greedy), so texts are asserted exactly;
numbers, formulas and everything else must come back as they were."""

from __future__ import annotations

import io
import zipfile

import pytest
from lxml import etree
from office_files import cell_texts, docx, paragraph, slide_paragraph, xlsx, zipped

from conftest import ENGLISH, GERMAN, translate_cli as cli
from mtkit.runtime import TranslationError
from mtkit.runtime.sheets import HeaderFooter
from mtkit.runtime.workbook_references import S

GREEDY = {"beam_size": 1}
BOLD = "<rPr><b/></rPr>"
NUMBERS = '<c r="B1"><v>42.5</v></c><c r="C1" t="str"><f>CONCAT("a","b")</f><v>ab</v></c>'


def translate(translator, document: bytes) -> bytes:
    return translator.translate_xlsx(document, "en", from_lang="de", **GREEDY)


def part(document: bytes, name: str):
    with zipfile.ZipFile(io.BytesIO(document)) as z:
        return etree.fromstring(z.read(name))


def test_shared_inline_and_comment_texts_are_translated_and_numbers_kept(fixture_translator):
    words = GERMAN[7].split()                          # "Wir haben ein sehr kleines Haus."
    rich = (f'<r><t xml:space="preserve">{" ".join(words[:3])} </t></r><r>{BOLD}<t>{" ".join(words[3:5])}</t></r>'
            f'<r><t xml:space="preserve"> {words[5]}</t></r>')
    inline = f'<c r="D1" t="inlineStr"><is><t>{GERMAN[2]}</t></is></c>'
    source = xlsx([f"<t>{GERMAN[0]}</t>", rich, f'<t xml:space="preserve">{GERMAN[1]}\n{GERMAN[3]}</t>',
                   f'<t>{GERMAN[4]}</t><rPh sb="0" eb="1"><t>x</t></rPh><phoneticPr fontId="1"/>'],
                  '<c r="A1" t="s"><v>0</v></c>' + NUMBERS + inline, comments=f"<r>{BOLD}<t>{GERMAN[5]}</t></r>")
    out = translate(fixture_translator, source)
    assert cell_texts(out) == [ENGLISH[0], ENGLISH[7], f"{ENGLISH[1]}\n{ENGLISH[3]}", ENGLISH[4] + "x"]
    assert cell_texts(out, "xl/worksheets/sheet1.xml", "is") == [ENGLISH[2]]
    assert cell_texts(out, "xl/comments1.xml", "text") == [ENGLISH[5]]
    plain, formatted, lines, phonetic = part(out, "xl/sharedStrings.xml")
    assert [child.tag for child in plain] == [f"{{{S}}}t"]                 # plain text stays one t
    assert formatted.find(f".//{{{S}}}b") is not None
    assert lines[0].get("{http://www.w3.org/XML/1998/namespace}space") == "preserve"
    assert [child.tag.split("}")[1] for child in phonetic] == ["t", "rPh", "phoneticPr"]
    sheet = part(out, "xl/worksheets/sheet1.xml")
    assert [(v.tag.split("}")[1], v.text) for v in sheet.iter(f"{{{S}}}v", f"{{{S}}}f")] == [
        ("v", "0"), ("v", "42.5"), ("f", 'CONCAT("a","b")'), ("v", "ab")]
    assert part(out, "xl/workbook.xml").find(f".//{{{S}}}sheet").get("name") == "Tabelle1"


@pytest.mark.parametrize("document, message", [
    (bytes.fromhex("d0cf11e0a1b11ae1") + bytes(504), "old Excel .xls"),
    (docx(paragraph("Hallo")), "not an Excel workbook: it has no main part"),
])
def test_what_is_not_an_xlsx_is_a_clear_error(fixture_translator, document, message):
    with pytest.raises(TranslationError, match=message):
        translate(fixture_translator, document)


def test_cli_translates_an_xlsx_file(model, tmp_path, capsys):
    (tmp_path / "tabelle.xlsx").write_bytes(xlsx([f"<t>{GERMAN[0]}</t>"], '<c r="A1" t="s"><v>0</v></c>'))
    code, out, err = cli(capsys, "--xlsx", "-i", str(tmp_path / "tabelle.xlsx"), "-o", str(tmp_path / "table.xlsx"))
    assert (code, out, err) == (0, "", "")
    assert cell_texts((tmp_path / "table.xlsx").read_bytes()) == [ENGLISH[0]]


def test_parts_without_words_are_kept_byte_for_byte(fixture_translator):
    source = xlsx([f"<t>{GERMAN[0]}</t>"], '<c r="A1" t="s"><v>0</v></c>' + NUMBERS)
    out = translate(fixture_translator, source)
    with zipfile.ZipFile(io.BytesIO(source)) as before, zipfile.ZipFile(io.BytesIO(out)) as after:
        for name in before.namelist():
            assert (after.read(name) == before.read(name)) == (name != "xl/sharedStrings.xml"), name


def test_a_charts_title_is_translated(fixture_translator):
    from office_files import A

    out = translate(fixture_translator, xlsx([f"<t>{GERMAN[0]}</t>"], '<c r="A1" t="s"><v>0</v></c>',
                                             chart=slide_paragraph(GERMAN[1])))
    title = part(out, "xl/charts/chart1.xml")
    assert "".join(t.text for t in title.iter(f"{{{A}}}t")) == ENGLISH[1]


def test_a_charts_series_names_and_category_labels_are_translated_and_its_numbers_kept(fixture_translator):
    """What a chart shows is its caches: string points are labels, translated; number points stay."""
    def points(*values: str) -> str:
        return "".join(f'<c:pt idx="{i}"><c:v>{v}</c:v></c:pt>' for i, v in enumerate(values))

    def cache(kind: str, *values: str) -> str:
        return f"<c:{kind}>{points(*values)}</c:{kind}>"
    series = (f'<c:ser><c:tx><c:strRef><c:f>Tabelle1!$B$1</c:f>{cache("strCache", GERMAN[2])}</c:strRef></c:tx>'
              f'<c:cat><c:multiLvlStrRef><c:multiLvlStrCache><c:ptCount val="2"/>{cache("lvl", GERMAN[3], GERMAN[4])}'
              f'{cache("lvl", GERMAN[5])}</c:multiLvlStrCache></c:multiLvlStrRef></c:cat>'
              f'<c:val><c:numRef><c:numCache><c:formatCode>General</c:formatCode>{points("12.5", "7")}'
              f'</c:numCache></c:numRef></c:val></c:ser>')
    out = translate(fixture_translator, xlsx([f"<t>{GERMAN[0]}</t>"], '<c r="A1" t="s"><v>0</v></c>',
                                             chart=slide_paragraph(GERMAN[1]),
                                             plot=f"<c:plotArea><c:barChart>{series}</c:barChart></c:plotArea>"))
    chart = part(out, "xl/charts/chart1.xml")
    values = [v.text for v in chart.iter("{http://schemas.openxmlformats.org/drawingml/2006/chart}v")]
    assert values == [ENGLISH[2], ENGLISH[3], ENGLISH[4], ENGLISH[5], "12.5", "7"]


def test_a_sheets_printed_header_and_footer_are_translated_and_their_codes_kept(fixture_translator):
    footer = f'&amp;L{GERMAN[6]}&amp;C&amp;P / &amp;N&amp;R&amp;"Arial,Fett"&amp;12{GERMAN[18]}'
    with zipfile.ZipFile(io.BytesIO(xlsx([f"<t>{GERMAN[0]}</t>"], '<c r="A1" t="s"><v>0</v></c>'))) as z:
        entries = {name: z.read(name) for name in z.namelist()}
    sheet = "xl/worksheets/sheet1.xml"
    entries[sheet] = entries[sheet].replace(b"</worksheet>", f"<headerFooter><oddFooter>{footer}</oddFooter>"
                                                             "</headerFooter></worksheet>".encode())
    out = translate(fixture_translator, zipped(entries))
    assert part(out, sheet).findtext(f".//{{{S}}}oddFooter") == f'&L{ENGLISH[6]}&C&P / &N&R&"Arial,Fett"&12{ENGLISH[18]}'
    element = etree.fromstring(f'<oddHeader xmlns="{S}">&amp;CM&amp;&amp;M &amp;P</oddHeader>')
    header = HeaderFooter(element)
    assert header.text == "M&M " and header.fragment() == '<br class="o0">M&amp;M <span class="o2">1</span>'
    header.rewrite('<br class="o0">M&amp;M Page <span class="o2">1</span>', "en-US")   # a literal & doubles again
    assert element.text == "&CM&&M Page &P"


def test_excel_365_threaded_comments_are_translated_and_one_with_mentions_kept(fixture_translator):
    threaded = "http://schemas.microsoft.com/office/spreadsheetml/2018/threadedcomments"
    with zipfile.ZipFile(io.BytesIO(xlsx([f"<t>{GERMAN[0]}</t>"], '<c r="A1" t="s"><v>0</v></c>'))) as z:
        entries = {name: z.read(name) for name in z.namelist()}
    entries["[Content_Types].xml"] = entries["[Content_Types].xml"].replace(
        b"</Types>", b'<Override PartName="/xl/threadedComments/threadedComment1.xml" '
                     b'ContentType="application/vnd.ms-excel.threadedcomments+xml"/></Types>')
    entries["xl/threadedComments/threadedComment1.xml"] = (
        f'<ThreadedComments xmlns="{threaded}"><threadedComment ref="A1" id="{{1}}"><text>{GERMAN[5]}\n'
        f'{GERMAN[6]}</text></threadedComment><threadedComment ref="A1" id="{{2}}" parentId="{{1}}"><text>'
        f'@Tom {GERMAN[7]}</text><mentions><mention startIndex="0" length="4"/></mentions></threadedComment>'
        '</ThreadedComments>').encode()
    out = translate(fixture_translator, zipped(entries))
    texts = [t.text for t in part(out, "xl/threadedComments/threadedComment1.xml").iter(f"{{{threaded}}}text")]
    assert texts == [f"{ENGLISH[5]}\n{ENGLISH[6]}", f"@Tom {GERMAN[7]}"]
