"""Word documents (runtime/word.py): `Translator.translate_docx` and `mt-translate --docx`. GERMAN[i] ->
ENGLISH[i] is what the fixture model reproduces on any CPU (greedy), so texts are asserted exactly;
everything that is not words must come back as it was."""

from __future__ import annotations

import io
import zipfile

import pytest
from office_files import PNG, docx, paragraph, run, texts
from lxml import etree

from conftest import ENGLISH, GERMAN, translate_cli as cli
from mtkit.runtime import TranslationError
from mtkit.runtime.word import W

GREEDY = {"beam_size": 1}
BOLD = "<w:b/>"
TAB = "<w:r><w:tab/></w:r>"
FIELD = ('<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> PAGE </w:instrText>'
         '</w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>7</w:t></w:r>'
         '<w:r><w:fldChar w:fldCharType="end"/></w:r>')
WP = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"
PICTURE = f'<w:r><w:drawing><wp:inline xmlns:wp="{WP}"/></w:drawing></w:r>'


def translate(translator, document: bytes, **settings) -> bytes:
    return translator.translate_docx(document, "en", from_lang="de", **{**GREEDY, **settings})


def part(document: bytes, name: str = "word/document.xml"):
    with zipfile.ZipFile(io.BytesIO(document)) as z:
        return etree.fromstring(z.read(name))


def entries(document: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(document)) as z:
        return {name: z.read(name) for name in z.namelist()}


def test_paragraphs_tables_headers_and_notes_are_translated(fixture_translator):
    body = (paragraph(GERMAN[0], style="Heading1") + paragraph(GERMAN[1]) +
            f"<w:tbl><w:tr><w:tc>{paragraph(GERMAN[2])}</w:tc><w:tc>{paragraph(GERMAN[3])}</w:tc></w:tr></w:tbl>"
            + "<w:p/>")
    source = docx(body, header=paragraph(GERMAN[4]),
                  footnotes=f'<w:footnote w:id="1">{paragraph(GERMAN[5])}</w:footnote>')
    out = translate(fixture_translator, source)
    assert texts(out) == [ENGLISH[0], ENGLISH[1], ENGLISH[2], ENGLISH[3], ""]
    assert texts(out, "word/header1.xml") == [ENGLISH[4]]
    assert texts(out, "word/footnotes.xml") == [ENGLISH[5]]
    before, after = entries(source), entries(out)
    assert list(after) == list(before)                 # every entry, in its order
    for name in ("[Content_Types].xml", "_rels/.rels", "word/_rels/document.xml.rels", "word/media/image1.png"):
        assert after[name] == before[name]
    assert after["word/media/image1.png"] == PNG
    assert part(out).find(f".//{{{W}}}pStyle").get(f"{{{W}}}val") == "Heading1"   # paragraph properties kept


def test_formatting_follows_the_words_and_nothing_is_lost(fixture_translator):
    words = GERMAN[7].split()                          # "Wir haben ein sehr kleines Haus."
    body = paragraph(run(" ".join(words[:3]) + " "), run(" ".join(words[3:5]), BOLD), run(" " + words[5])) + \
        paragraph('<w:bookmarkStart w:id="0" w:name="Anfang"/>', GERMAN[8], '<w:bookmarkEnd w:id="0"/>', PICTURE) + \
        paragraph(f'<w:hyperlink r:id="rId2"><w:r><w:rPr><w:rStyle w:val="Hyperlink"/></w:rPr><w:t>{GERMAN[9]}'
                  f'</w:t></w:r></w:hyperlink>') + \
        paragraph(GERMAN[10] + " ", FIELD)
    out = translate(fixture_translator, docx(body))
    assert texts(out) == [ENGLISH[7], ENGLISH[8], ENGLISH[9], ENGLISH[10] + " 7"]
    tree = part(out)
    bold = [r for r in tree.iter(f"{{{W}}}r") if r.find(f"{{{W}}}rPr/{{{W}}}b") is not None]
    assert bold and all("".join(r.itertext()).strip() for r in bold)        # the bold words, still bold
    assert [b.get(f"{{{W}}}name") for b in tree.iter(f"{{{W}}}bookmarkStart")] == ["Anfang"]
    assert len(list(tree.iter(f"{{{W}}}bookmarkEnd"))) == 1 and len(list(tree.iter(f"{{{W}}}drawing"))) == 1
    [link] = tree.iter(f"{{{W}}}hyperlink")
    assert link.get("{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id") == "rId2"
    assert "".join(t.text for t in link.iter(f"{{{W}}}t")) == ENGLISH[9]
    assert link.find(f".//{{{W}}}rStyle").get(f"{{{W}}}val") == "Hyperlink"
    assert [t.text for t in tree.iter(f"{{{W}}}instrText")] == [" PAGE "]   # the field whole, kept
    assert [f.get(f"{{{W}}}fldCharType") for f in tree.iter(f"{{{W}}}fldChar")] == ["begin", "separate", "end"]


def test_paragraphs_without_words_and_runs_with_pictures_keep_them(fixture_translator):
    """Reading a paragraph moves nothing: one without words comes back byte for byte, and a run that holds
    words and a picture keeps the picture, as a page break keeps its place."""
    mixed = f'<w:r><w:t>{GERMAN[0]}</w:t><w:drawing/></w:r>'
    body = paragraph(PICTURE) + paragraph(mixed) + paragraph(GERMAN[1], '<w:r><w:br w:type="page"/></w:r>')
    source = docx(body)
    out = translate(fixture_translator, source)
    first = etree.tostring(part(source)[0][0]), etree.tostring(part(out)[0][0])
    assert first[0] == first[1]
    assert len(list(part(out).iter(f"{{{W}}}drawing"))) == 2 and texts(out) == ["", ENGLISH[0], ENGLISH[1]]
    assert [b.get(f"{{{W}}}type") for b in part(out).iter(f"{{{W}}}br")] == ["page"]


def test_one_space_between_words_whatever_lies_between(fixture_translator):
    words = GERMAN[7].split()                          # "Wir haben ein sehr kleines Haus."
    body = paragraph(run(" ".join(words[:3]) + " "), '<w:bookmarkStart w:id="0" w:name="b"/>',
                     run(" ".join(words[3:]), BOLD))
    assert texts(translate(fixture_translator, docx(body))) == [ENGLISH[7]]


def test_tabs_and_line_breaks_stay_between_their_words(fixture_translator):
    body = paragraph(GERMAN[11], TAB, GERMAN[12]) + paragraph(GERMAN[13], "<w:r><w:br/></w:r>", GERMAN[14])
    out = translate(fixture_translator, docx(body))
    assert texts(out) == [f"{ENGLISH[11]}\t{ENGLISH[12]}", ENGLISH[13] + ENGLISH[14]]
    second = list(part(out).iter(f"{{{W}}}p"))[1]
    assert [c.tag.split("}")[1] for r in second for c in r if c.tag != f"{{{W}}}rPr"] == ["t", "br", "t"]


def test_tracked_changes_are_kept_as_written_with_a_warning(fixture_translator):
    tracked = paragraph(GERMAN[0], f'<w:ins w:id="1" w:author="A">{run(GERMAN[1])}</w:ins>')
    with pytest.warns(UserWarning, match="1 paragraph with tracked changes"):
        out = translate(fixture_translator, docx(tracked + paragraph(GERMAN[2])))
    assert texts(out) == [GERMAN[0] + GERMAN[1], ENGLISH[2]]


def test_spell_checking_languages_name_the_translation(fixture_translator):
    body = paragraph(run(GERMAN[0], '<w:lang w:val="de-DE"/>'), run(" " + GERMAN[1], '<w:lang w:val="en-GB"/>'))
    out = translate(fixture_translator, docx(body))
    languages = [lang.get(f"{{{W}}}val") for lang in part(out).iter(f"{{{W}}}lang")]
    assert languages and set(languages) <= {"en-US", "en-GB"}
    assert [lang.get(f"{{{W}}}val") for lang in part(out, "word/styles.xml").iter(f"{{{W}}}lang")] == ["en-US"]


def test_short_paragraphs_are_read_in_the_documents_language(fixture_translator):
    """A heading or a table cell of a word or two is taken to be in the language of the whole document:
    detected alone, "Tom schrie." could be anything."""
    from mtkit.runtime.office import document_language
    assert document_language(fixture_translator, GERMAN[:12], "en") == "de"
    assert document_language(fixture_translator, ENGLISH[:12], "en") is None


@pytest.mark.parametrize("document, message", [
    (b"", "not a .docx"),
    (b"plain text, not a zip", "not a .docx"),
    (bytes.fromhex("d0cf11e0a1b11ae1") + bytes(504), "old Word .doc, or a file with a password"),
    (docx(paragraph("x")).replace(b"[Content_Types].xml", b"[Content_Typez].xml"), "no \\[Content_Types\\].xml"),
])
def test_what_is_not_a_docx_is_a_clear_error(fixture_translator, document, message):
    with pytest.raises(TranslationError, match=message):
        translate(fixture_translator, document)


def test_a_damaged_part_or_a_str_is_a_clear_error(fixture_translator):
    source = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(docx(paragraph(GERMAN[0])))) as z, zipfile.ZipFile(source, "w") as damaged:
        for name in z.namelist():
            data = z.read(name)
            damaged.writestr(name, data[: len(data) // 2] if name == "word/document.xml" else data)
    with pytest.raises(TranslationError, match="damaged: word/document.xml"):
        translate(fixture_translator, source.getvalue())
    with pytest.raises(TranslationError, match="must be a bytes, not str"):
        fixture_translator.translate_docx("<w:document/>")


# ----- mt-translate --docx -----------------------------------------------------------------------------

def test_cli_translates_a_docx_file(model, tmp_path, capsys):
    (tmp_path / "brief.docx").write_bytes(docx(paragraph(GERMAN[0]) + paragraph(GERMAN[1])))
    code, out, err = cli(capsys, "--docx", "-i", str(tmp_path / "brief.docx"), "-o", str(tmp_path / "letter.docx"))
    assert (code, out, err) == (0, "", "")
    assert texts((tmp_path / "letter.docx").read_bytes()) == [ENGLISH[0], ENGLISH[1]]


def test_cli_docx_errors_are_one_line_and_write_nothing(model, tmp_path, capsys):
    (tmp_path / "alt.doc").write_bytes(bytes.fromhex("d0cf11e0a1b11ae1") + bytes(504))
    code, _, err = cli(capsys, "--docx", "-i", str(tmp_path / "alt.doc"), "-o", str(tmp_path / "out.docx"))
    assert code == 1 and err.count("\n") == 1 and "alt.doc: not a .docx: an old Word .doc" in err
    assert not (tmp_path / "out.docx").exists()
    code, _, err = cli(capsys, "--docx", GERMAN[0])
    assert code == 2 and "--docx reads a file" in err


def test_a_docx_is_known_by_its_name_and_else_by_its_bytes(model, tmp_path, capsys):
    """-i brief.docx needs no --docx: a Word file has no lines. Named otherwise, its first bytes give it away."""
    (tmp_path / "brief.docx").write_bytes(docx(paragraph(GERMAN[0])))
    code, out, err = cli(capsys, "-i", str(tmp_path / "brief.docx"), "-o", str(tmp_path / "letter.docx"))
    assert (code, out, err) == (0, "", "") and texts((tmp_path / "letter.docx").read_bytes()) == [ENGLISH[0]]
    (tmp_path / "brief.bin").write_bytes(docx(paragraph(GERMAN[0])))
    code, out, err = cli(capsys, "-i", str(tmp_path / "brief.bin"))
    assert code == 1 and out == "" and "it is a zip file: --docx, --pptx, --xlsx, --odf and --epub translate" in err


@pytest.mark.parametrize("start", [b"PK\x03\x04\x14\x00\n\xff", b"PK\x03\x04\xff\n", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\n"])
def test_a_file_that_is_no_text_is_named_whatever_its_first_line(tmp_path, capsys, start):
    """A zip's header holds its time stamp: its first line may decode, and the bad byte come later."""
    (tmp_path / "brief.bin").write_bytes(start + b"rest\xfe of the file\n")
    code, out, err = cli(capsys, "-i", str(tmp_path / "brief.bin"))
    assert code == 1 and out == "" and err.count("\n") == 1 and "not a text file; it is " in err


def test_a_zip_that_unpacks_to_too_much_is_refused(fixture_translator, monkeypatch):
    """A 20 MB upload to mt-serve can unpack to gigabytes: the sizes its entries declare are checked first."""
    from mtkit.runtime import office

    monkeypatch.setattr(office, "MAX_UNZIPPED", 1000)
    with pytest.raises(TranslationError, match="unpacks to 0 MB, more than the 0 MB a document may hold"):
        translate(fixture_translator, docx(paragraph(GERMAN[0] * 20)))


def test_an_entry_that_lies_about_its_size_is_not_inflated_past_it(fixture_translator):
    """The 1 GB check reads the sizes the entries declare: an entry of 1,000 bytes that inflates to 50 MB
    was inflated whole (to 2 GB at a time) before its CRC failed; now no further than 1,000 bytes."""
    import struct
    import tracemalloc

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(docx(paragraph(run(GERMAN[0]))))) as source, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info.filename, source.read(info))
        target.writestr("word/media/zeros.bin", bytes(50_000_000))
    document = bytearray(out.getvalue())
    entry = document.rindex(b"PK\x01\x02")              # the last entry's central directory header
    assert document[entry + 46:entry + 66] == b"word/media/zeros.bin"
    struct.pack_into("<I", document, entry + 24, 1000)   # its uncompressed size
    tracemalloc.start()
    try:
        with pytest.raises(TranslationError, match="Bad CRC-32 for file 'word/media/zeros.bin'"):
            translate(fixture_translator, bytes(document))
        assert tracemalloc.get_traced_memory()[1] < 10_000_000
    finally:
        tracemalloc.stop()


def control(runs: str, properties: str = "") -> str:
    """An inline content control (a form's field) around `runs`."""
    return (f'<w:sdt><w:sdtPr><w:alias w:val="Feld"/><w:tag w:val="field"/><w:id w:val="7"/>{properties}</w:sdtPr>'
            f'<w:sdtEndPr/><w:sdtContent>{runs}</w:sdtContent></w:sdt>')


def test_a_forms_fields_are_translated_inside_their_controls(fixture_translator):
    """The words in a content control are the paragraph's words: translated, with the control, its
    properties and its place kept. One bound to the document's data, or a check box, stays as it is."""
    words = GERMAN[7].split()                          # "Wir haben ein sehr kleines Haus."
    bound = '<w:dataBinding w:xpath="/form/name" w:storeItemID="{0A1B2C3D-0000-0000-0000-000000000000}"/>'
    box = '<w14:checkbox><w14:checked w14:val="0"/></w14:checkbox>'
    body = (paragraph(control(run(GERMAN[0]))) +
            paragraph(run(" ".join(words[:2]) + " "), control(run(" ".join(words[2:]), BOLD))) +
            paragraph(control(run(GERMAN[1]), bound)) +
            paragraph(control(run("\u2610"), box), run(" " + GERMAN[2])))
    out = translate(fixture_translator, docx(body))
    assert texts(out) == [ENGLISH[0], ENGLISH[7], GERMAN[1], "\u2610 " + ENGLISH[2]]
    paragraphs = list(part(out).iter(f"{{{W}}}p"))
    for p, content in zip(paragraphs, [ENGLISH[0], None, GERMAN[1], "\u2610"]):
        [sdt] = p.iter(f"{{{W}}}sdt")
        assert [child.tag.split("}")[1] for child in sdt] == ["sdtPr", "sdtEndPr", "sdtContent"]
        assert sdt.find(f"{{{W}}}sdtPr/{{{W}}}tag").get(f"{{{W}}}val") == "field"
        words_in = "".join(t.text for t in sdt.iter(f"{{{W}}}t"))
        assert words_in == content if content else words_in.strip() and words_in in ENGLISH[7]


def test_a_charts_embedded_workbook_is_translated_too(fixture_translator):
    """Word writes a chart's embedded data back into the chart when it is edited: it is translated
    as the chart is."""
    from office_files import cell_texts, xlsx, zipped

    workbook = xlsx([f"<t>{GERMAN[1]}</t>"], '<c r="A1" t="s"><v>0</v></c>')
    with zipfile.ZipFile(io.BytesIO(docx(paragraph(GERMAN[0])))) as z:
        package = {name: z.read(name) for name in z.namelist()}
    package["word/embeddings/Microsoft_Excel_Sheet1.xlsx"] = workbook
    package["word/embeddings/broken.xlsx"] = b"not a zip"
    out = entries(translate(fixture_translator, zipped(package)))
    assert cell_texts(out["word/embeddings/Microsoft_Excel_Sheet1.xlsx"]) == [ENGLISH[1]]
    assert out["word/embeddings/broken.xlsx"] == b"not a zip"


def test_a_pictures_description_and_a_drop_down_lists_items_are_translated(fixture_translator):
    """Alt text is what a screen reader says for a picture; a list's items are what its field can show."""
    drop_down = ('<w:dropDownList><w:listItem w:displayText="{0}" w:value="a"/><w:listItem w:displayText="{1}" '
                 'w:value="b"/></w:dropDownList>').format(GERMAN[3], GERMAN[4])
    picture = (f'<w:r><w:drawing><wp:inline xmlns:wp="{WP}"><wp:docPr id="1" name="Bild 1" '
               f'descr="{GERMAN[2]}&#xA;&#xA;{GERMAN[5]}"/></wp:inline></w:drawing></w:r>')
    body = paragraph(picture) + paragraph(control(run(GERMAN[3]), drop_down))
    tree = part(translate(fixture_translator, docx(body)))
    [described] = tree.iter(f"{{{WP}}}docPr")
    assert described.get("descr") == f"{ENGLISH[2]}\n\n{ENGLISH[5]}" and described.get("name") == "Bild 1"
    assert [item.get(f"{{{W}}}displayText") for item in tree.iter(f"{{{W}}}listItem")] == [ENGLISH[3], ENGLISH[4]]
    assert [item.get(f"{{{W}}}value") for item in tree.iter(f"{{{W}}}listItem")] == ["a", "b"]
    assert texts(translate(fixture_translator, docx(body)))[1] == ENGLISH[3]


def field(code: str, *result: str) -> str:
    """A complex field's runs: begin, its code, separate, `result` (runs as XML, or text), end."""
    runs = "".join(r if r.startswith("<") else run(r) for r in result)
    return (f'<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> {code} '
            f'</w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r>{runs}'
            '<w:r><w:fldChar w:fldCharType="end"/></w:r>')


def test_a_cross_references_and_a_hyperlink_fields_words_are_translated_on_their_own(fixture_translator):
    """The field stays whole (Word writes a new result into it on updating), but its words, which a
    reader sees in the sentence, are the target's; a page number and a field inside a field stay."""
    simple = f'<w:fldSimple w:instr=" HYPERLINK \\l &quot;Ziel&quot; "><w:r><w:t>{GERMAN[16]}</w:t></w:r></w:fldSimple>'
    body = paragraph(GERMAN[10] + " ", field("REF _Ref1 \\h", GERMAN[18]), field("PAGEREF _Ref1 \\h", "7")) + \
        paragraph(GERMAN[11] + " ", simple, field("REF _Ref2", GERMAN[23], field("PAGE", "2")))
    tree = part(translate(fixture_translator, docx(body)))
    first, second = tree.iter(f"{{{W}}}p")
    assert [t.text for t in first.iter(f"{{{W}}}t")] == [ENGLISH[10] + " ", ENGLISH[18], "7"]
    assert [t.text for t in second.iter(f"{{{W}}}t")] == [ENGLISH[11] + " ", ENGLISH[16], GERMAN[23], "2"]
    assert [t.text.strip() for t in tree.iter(f"{{{W}}}instrText")] == ["REF _Ref1 \\h", "PAGEREF _Ref1 \\h",
                                                                        "REF _Ref2", "PAGE"]
    assert [f.get(f"{{{W}}}fldCharType") for f in first.iter(f"{{{W}}}fldChar")] == ["begin", "separate", "end"] * 2


def test_a_table_of_contents_first_entry_is_translated_like_the_others(fixture_translator):
    """A field that spans paragraphs (a table of contents) keeps its code; the entry in its first
    paragraph is words, as the following ones are (it had been kept as part of the field)."""
    start = ('<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> TOC \\o "1-3" '
             '\\h </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r>')
    page = field("PAGEREF _Toc1 \\h", "3")
    entry = f'<w:hyperlink w:anchor="_Toc1"><w:r><w:t>{GERMAN[6]}</w:t></w:r>{TAB}{page}</w:hyperlink>'
    body = paragraph(start, entry) + paragraph(GERMAN[18], TAB, "4", '<w:r><w:fldChar w:fldCharType="end"/></w:r>')
    out = translate(fixture_translator, docx(body))
    assert texts(out) == [f"{ENGLISH[6]}\t3", f"{ENGLISH[18]}\t4"]
    tree = part(out)
    assert [t.text.strip() for t in tree.iter(f"{{{W}}}instrText")] == ['TOC \\o "1-3" \\h', "PAGEREF _Toc1 \\h"]
    assert [f.get(f"{{{W}}}fldCharType") for f in tree.iter(f"{{{W}}}fldChar")] == \
        ["begin", "separate", "begin", "separate", "end", "end"]
    assert next(tree.iter(f"{{{W}}}hyperlink")).get(f"{{{W}}}anchor") == "_Toc1"


def test_a_page_number_field_shows_the_model_a_number_of_its_own_and_stays_whole():
    """"Seite [PAGE] von [NUMPAGES]" reads to the model as "Seite 2 von 3" (it had read "Seite von" and
    dropped the "of"); each number differs from the sentence's own, and the fields come back whole."""
    from mtkit.runtime.word import WordParagraph

    body = paragraph("Seite 1 ", field("PAGE", "1"), " von ", field("NUMPAGES", "12"), " ", field("REF x", "Ziel"))
    simple = paragraph("Seite ", '<w:fldSimple w:instr=" PAGE "><w:r><w:t>3</w:t></w:r></w:fldSimple>')
    assert WordParagraph(part(docx(simple))[0][0]).fragment() == 'Seite <span class="o1">3</span>'
    element = part(docx(body))[0][0]
    words = WordParagraph(element)
    assert words.fragment() == 'Seite 1 <span class="o1">2</span> von <span class="o3">12</span> <img class="o5">'
    words.rewrite('Page 1 <span class="o1">2</span> of <span class="o3">seven</span> <img class="o5">', "en-US")
    assert "".join(t.text for t in element.iter(f"{{{W}}}t")) == "Page 1 1 of 12 Ziel"     # the fields' own results
    assert [t.text.strip() for t in element.iter(f"{{{W}}}instrText")] == ["PAGE", "NUMPAGES", "REF x"]


def test_a_page_number_after_a_tab_is_no_word_of_the_sentence():
    """A table of contents' entry, "Docx4j über Maven verwenden<tab>7": shown to the model, the 7 landed
    inside the German title ("Docx4j über Maven 7 verwenden"); after a tab it goes back at the end."""
    from mtkit.runtime.word import WordParagraph

    element = part(docx(paragraph("Einleitung", TAB, field("PAGEREF _Toc1 \\h", "7"))))[0][0]
    assert WordParagraph(element).fragment() == 'Einleitung <img class="o1"> <img class="o2">'
