"""PowerPoint presentations (runtime/slides.py, drawingml.py): `Translator.translate_pptx`, `mt-translate --pptx`.
GERMAN[i] -> ENGLISH[i] is what the fixture model reproduces on any CPU (greedy), so texts are asserted
exactly; everything that is not words must come back as it was."""

from __future__ import annotations

import io
import zipfile

import pytest
from lxml import etree
from office_files import PNG, docx, paragraph, pptx, shape, slide_paragraph, slide_run, slide_texts

from conftest import ENGLISH, GERMAN, translate_cli as cli
from mtkit.runtime import TranslationError
from mtkit.runtime.drawingml import A

GREEDY = {"beam_size": 1}
SLIDE_NUMBER = ('<a:fld id="{B6F15528-21DE-4FAA-801E-634DDDAF4B2B}" type="slidenum"><a:rPr lang="de-DE"/><a:t>3</a:t>'
                '</a:fld>')
LINK = '<a:hlinkClick xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" r:id="rId2"/>'


def translate(translator, document: bytes) -> bytes:
    return translator.translate_pptx(document, "en", from_lang="de", **GREEDY)


def part(document: bytes, name: str = "ppt/slides/slide1.xml"):
    with zipfile.ZipFile(io.BytesIO(document)) as z:
        return etree.fromstring(z.read(name))


def test_text_boxes_tables_and_notes_are_translated(fixture_translator):
    table = ('<p:graphicFrame><a:graphic><a:graphicData><a:tbl><a:tr>'
             f'<a:tc><a:txBody><a:bodyPr/>{slide_paragraph(GERMAN[2])}</a:txBody></a:tc>'
             f'<a:tc><a:txBody><a:bodyPr/>{slide_paragraph(GERMAN[3])}</a:txBody></a:tc>'
             '</a:tr></a:tbl></a:graphicData></a:graphic></p:graphicFrame>')
    source = pptx(shape(slide_paragraph(GERMAN[0]), slide_paragraph(GERMAN[1])) + table,
                  shape(slide_paragraph(GERMAN[4])), notes=shape(slide_paragraph(GERMAN[5])))
    out = translate(fixture_translator, source)
    assert slide_texts(out) == ENGLISH[:4]
    assert slide_texts(out, "ppt/slides/slide2.xml") == [ENGLISH[4]]
    assert slide_texts(out, "ppt/notesSlides/notesSlide1.xml") == [ENGLISH[5]]
    with zipfile.ZipFile(io.BytesIO(source)) as before, zipfile.ZipFile(io.BytesIO(out)) as after:
        assert after.namelist() == before.namelist()
        assert after.read("ppt/media/image1.png") == PNG


def test_formatting_links_fields_and_breaks_stay_with_their_words(fixture_translator):
    words = GERMAN[7].split()                          # "Wir haben ein sehr kleines Haus."
    formatted = slide_paragraph(slide_run(" ".join(words[:3]) + " "),
                                slide_run(" ".join(words[3:5]), 'lang="de-DE" b="1"'), slide_run(" " + words[5]))
    linked = slide_paragraph(slide_run(GERMAN[8], 'lang="de-DE" err="1"', LINK))
    lines = slide_paragraph(GERMAN[9], '<a:br><a:rPr lang="de-DE"/></a:br>', GERMAN[10] + " ", SLIDE_NUMBER)
    tabbed = slide_paragraph(slide_run(f"{GERMAN[11]}\t{GERMAN[12]}"))
    out = translate(fixture_translator, pptx(shape(formatted, linked, lines, tabbed)))
    assert slide_texts(out) == [ENGLISH[7], ENGLISH[8], f"{ENGLISH[9]}\n{ENGLISH[10]} 3",
                                f"{ENGLISH[11]}\t{ENGLISH[12]}"]
    first, second, third, _ = part(out).iter(f"{{{A}}}p")
    bold = [r for r in first.iter(f"{{{A}}}r") if r.find(f"{{{A}}}rPr").get("b") == "1"]
    assert bold and all("".join(r.itertext()).strip() for r in bold)
    [link] = second.iter(f"{{{A}}}hlinkClick")
    assert "".join(second.itertext()) == ENGLISH[8] and second.find(f"{{{A}}}r/{{{A}}}rPr").get("err") is None
    assert [f.get("type") for f in third.iter(f"{{{A}}}fld")] == ["slidenum"]
    for p in (first, second, third):
        assert p[-1].tag == f"{{{A}}}endParaRPr"                 # still last, as the schema wants
    languages = {e.get("lang") for e in part(out).iter(f"{{{A}}}rPr", f"{{{A}}}endParaRPr")}
    assert languages == {"en-US"}
    assert [e.get("lang") for e in part(out, "ppt/presentation.xml").iter(f"{{{A}}}defRPr")] == ["en-US"]


@pytest.mark.parametrize("document, message", [
    (b"not a zip", "not a .pptx"),
    (bytes.fromhex("d0cf11e0a1b11ae1") + bytes(504), "old PowerPoint .ppt"),
    (docx(paragraph("Hallo")), "not a PowerPoint presentation: it has no main part"),
])
def test_what_is_not_a_pptx_is_a_clear_error(fixture_translator, document, message):
    with pytest.raises(TranslationError, match=message):
        translate(fixture_translator, document)


def test_cli_translates_a_pptx_file_and_refuses_a_docx(model, tmp_path, capsys):
    (tmp_path / "folien.pptx").write_bytes(pptx(shape(slide_paragraph(GERMAN[0]))))
    code, out, err = cli(capsys, "--pptx", "-i", str(tmp_path / "folien.pptx"), "-o", str(tmp_path / "slides.pptx"))
    assert (code, out, err) == (0, "", "")
    assert slide_texts((tmp_path / "slides.pptx").read_bytes()) == [ENGLISH[0]]
    (tmp_path / "brief.docx").write_bytes(docx(paragraph(GERMAN[0])))
    code, _, err = cli(capsys, "--pptx", "-i", str(tmp_path / "brief.docx"), "-o", str(tmp_path / "x.pptx"))
    assert code == 1 and "not a PowerPoint presentation" in err and not (tmp_path / "x.pptx").exists()


def test_a_pictures_description_is_translated(fixture_translator):
    picture = (f'<p:pic><p:nvPicPr><p:cNvPr id="4" name="Bild 3" descr="{GERMAN[2]}"/><p:cNvPicPr/><p:nvPr/>'
               '</p:nvPicPr></p:pic>')
    tree = part(translate(fixture_translator, pptx(shape(slide_paragraph(slide_run(GERMAN[0]))) + picture)))
    described = tree.find(".//{http://schemas.openxmlformats.org/presentationml/2006/main}cNvPr[@name='Bild 3']")
    assert described.get("descr") == ENGLISH[2]


def test_a_file_name_in_a_description_stays(fixture_translator):
    picture = ('<p:pic><p:nvPicPr><p:cNvPr id="4" name="Bild 3" descr="sonnen-untergang.jpg"/><p:cNvPicPr/><p:nvPr/>'
               '</p:nvPicPr></p:pic>')
    tree = part(translate(fixture_translator, pptx(shape(slide_paragraph(slide_run(GERMAN[0]))) + picture)))
    described = tree.find(".//{http://schemas.openxmlformats.org/presentationml/2006/main}cNvPr[@name='Bild 3']")
    assert described.get("descr") == "sonnen-untergang.jpg"


def test_comments_old_and_new_are_translated(fixture_translator):
    """PowerPoint 365's comments are DrawingML paragraphs; earlier ones' are plain text."""
    from office_files import SLIDE_NAMESPACES

    p188 = "http://schemas.microsoft.com/office/powerpoint/2018/8/main"
    legacy = (f'<p:cmLst {SLIDE_NAMESPACES}><p:cm authorId="0" idx="1"><p:pos x="10" y="10"/><p:text>{GERMAN[1]}'
              '</p:text></p:cm></p:cmLst>')
    modern = (f'<p188:cmLst xmlns:p188="{p188}" {SLIDE_NAMESPACES}><p188:cm id="{{1}}" authorId="{{2}}">'
              f'<p188:txBody><a:bodyPr/>{slide_paragraph(slide_run(GERMAN[2]))}</p188:txBody></p188:cm></p188:cmLst>')
    extra = {"ppt/comments/comment1.xml": ("application/vnd.openxmlformats-officedocument.presentationml.comments+xml",
                                           legacy),
             "ppt/comments/modernComment_1.xml": ("application/vnd.ms-powerpoint.comments+xml", modern)}
    out = translate(fixture_translator, pptx(shape(slide_paragraph(slide_run(GERMAN[0]))), extra=extra))
    assert [t.text for t in part(out, "ppt/comments/comment1.xml").iter(
        "{http://schemas.openxmlformats.org/presentationml/2006/main}text")] == [ENGLISH[1]]
    assert slide_texts(out, "ppt/comments/modernComment_1.xml") == [ENGLISH[2]]


def test_a_slide_number_field_shows_the_model_a_number_and_stays_whole():
    from mtkit.runtime.drawingml import A, DrawingParagraph

    element = etree.fromstring(f'<a:p xmlns:a="{A}"><a:r><a:t>Folie </a:t></a:r><a:fld id="{{1}}" type="slidenum">'
                               '<a:t>‹#›</a:t></a:fld><a:r><a:t> von 9</a:t></a:r></a:p>')
    words = DrawingParagraph(element)
    assert words.fragment() == 'Folie <span class="o1">1</span> von 9'
    words.rewrite('Slide <span class="o1">1</span> of 9', "en-US")
    assert "".join(element.itertext()) == "Slide ‹#› of 9" and element[1].get("type") == "slidenum"
