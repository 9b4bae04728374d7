"""PDF files (runtime/pdf.py): `Translator.translate_pdf` and `mt-translate --pdf`, on PDFs made here
with reportlab. GERMAN[i] -> ENGLISH[i] is what the fixture model reproduces on any CPU (greedy), so
the text read back from the translated PDF is asserted exactly; pictures, links and what is not to
be translated must come back."""

from __future__ import annotations

import ctypes
import sys
import warnings

import pytest
from pdf_files import counts, fonts_of, paragraph, pdf, picture, text_of

from conftest import ENGLISH, GERMAN, translate_cli as cli
from mtkit.runtime import TranslationError

GREEDY = {"beam_size": 1}


def translate(translator, document: bytes) -> bytes:
    return translator.translate_pdf(document, "en", from_lang="de", **GREEDY)


def test_paragraphs_headings_and_cells_are_translated_and_the_rest_kept(fixture_translator):
    """A heading, a justified paragraph over several lines, two table cells parted by a rule, a picture
    and a link: the text comes back translated, each paragraph whole, and nothing else is lost."""
    def draw(sheet):
        paragraph(sheet, GERMAN[0], 72, 780, 450, size=16, font="Helvetica-Bold")
        end = paragraph(sheet, " ".join(GERMAN[1:5]), 72, 740, 200, justify=True)
        paragraph(sheet, GERMAN[5], 72, end - 30, 150)
        paragraph(sheet, GERMAN[6], 240, end - 30, 150)
        sheet.line(230, end - 20, 230, end - 80)
        picture(sheet, 400, 600)
        sheet.linkURL("https://example.org/", (72, end - 60, 200, end - 30))

    source = pdf(draw)
    out = translate(fixture_translator, source)
    text = text_of(out)
    for english in [ENGLISH[0], " ".join(ENGLISH[1:5]), ENGLISH[5], ENGLISH[6]]:
        assert english in text, (english, text)
    assert not any(word in text for word in ("Sie ", "Wir ", "nicht")), text        # no German left
    assert counts(out) == counts(source) == {"pages": 1, "pictures": 1, "links": 1}
    assert fonts_of(out, ENGLISH[0]) == {"Helvetica-Bold"}                # the heading's font, kept


def test_words_in_another_font_keep_it(fixture_translator):
    words = GERMAN[7].split()                          # "Wir haben ein sehr kleines Haus."
    source = pdf(lambda sheet: paragraph(sheet, f"{' '.join(words[:3])} <b>{' '.join(words[3:5])}</b> {words[5]}",
                                         72, 780, 450))
    out = translate(fixture_translator, source)
    assert text_of(out) == ENGLISH[7]
    bold = [w for w in ENGLISH[7].rstrip(".").split() if fonts_of(out, w) == {"Times-Bold"}]
    assert bold and len(bold) < len(ENGLISH[7].split())


def test_text_at_an_angle_stays_as_written(fixture_translator):
    def draw(sheet):
        paragraph(sheet, GERMAN[0], 72, 780, 450)
        sheet.saveState()
        sheet.translate(300, 300)
        sheet.rotate(90)
        sheet.drawString(0, 0, GERMAN[1])
        sheet.restoreState()

    out = translate(fixture_translator, pdf(draw))
    assert ENGLISH[0] in text_of(out) and GERMAN[1] in text_of(out)


def test_a_page_without_text_comes_back_with_a_warning(fixture_translator):
    source = pdf(lambda sheet: picture(sheet, 100, 100))
    with pytest.warns(UserWarning, match=r"the PDF has no text \(a scan\?\): run OCR on it first"):
        out = translate(fixture_translator, source)
    assert counts(out) == counts(source)


@pytest.mark.parametrize("document, message", [
    (b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer <<>>\n%%EOF", "the PDF is damaged"),
    (b"PK\x03\x04 a zip", "not a PDF file .no %PDF- header in its first 1 KB."),
])
def test_what_is_no_readable_pdf_is_a_clear_error(fixture_translator, document, message):
    with pytest.raises(TranslationError, match=message):
        translate(fixture_translator, document)


def test_a_pdf_with_a_password_is_refused(fixture_translator):
    locked = pdf(lambda sheet: paragraph(sheet, GERMAN[0], 72, 780, 450), encrypt="geheim")
    with pytest.raises(TranslationError, match="the PDF has a password: save it without one first"):
        translate(fixture_translator, locked)


def test_mt_translate_knows_a_pdf_by_its_name(model, tmp_path, capsys):
    (tmp_path / "brief.pdf").write_bytes(pdf(lambda sheet: paragraph(sheet, GERMAN[2], 72, 780, 450)))
    code, out, err = cli(capsys, "-i", str(tmp_path / "brief.pdf"), "-o", str(tmp_path / "letter.pdf"))
    assert (code, out, err) == (0, "", "") and text_of((tmp_path / "letter.pdf").read_bytes()) == ENGLISH[2]
    code, out, err = cli(capsys, "--pdf", "-i", str(tmp_path / "brief.pdf"), "-o", str(tmp_path / "again.pdf"))
    assert code == 0 and text_of((tmp_path / "again.pdf").read_bytes()) == ENGLISH[2]


def test_without_the_pdf_extra_mt_translate_says_what_to_install(model, tmp_path, capsys, monkeypatch):
    (tmp_path / "brief.pdf").write_bytes(pdf(lambda sheet: paragraph(sheet, GERMAN[2], 72, 780, 450)))
    monkeypatch.setitem(sys.modules, "pypdfium2", None)          # as if not installed
    code, out, err = cli(capsys, "-i", str(tmp_path / "brief.pdf"), "-o", str(tmp_path / "letter.pdf"))
    assert code == 1 and out == "" and not (tmp_path / "letter.pdf").exists()
    assert err == ("mt-translate: error: pypdfium2 is not installed, which PDF files need; "     # not the file's fault
                   "install it with: pip install 'mtkit[pdf]'\n")


def test_nothing_warns_for_a_plain_page(fixture_translator):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        translate(fixture_translator, pdf(lambda sheet: paragraph(sheet, GERMAN[3], 72, 780, 450)))


def test_a_word_hyphenated_at_a_line_end_is_read_whole(fixture_translator):
    first, rest = GERMAN[3].rsplit(" ", 1)                 # "... das", "Christkind."
    cut = len(rest) // 2

    def draw(sheet):
        sheet.setFont("Times-Roman", 11)
        sheet.drawString(72, 700, f"{first} {rest[:cut]}-")
        sheet.drawString(72, 686, rest[cut:])

    assert text_of(translate(fixture_translator, pdf(draw))) == ENGLISH[3]


def test_text_that_needs_no_translation_keeps_its_own_glyphs(fixture_translator):
    """A paragraph already in the target language comes back as it is, drawn by the page itself."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    source = pdf(lambda sheet: paragraph(sheet, ENGLISH[0], 72, 780, 450))
    out = fixture_translator.translate_pdf(source, "en", **GREEDY)
    page = pdfium.PdfDocument(out)[0]
    assert text_of(out) == ENGLISH[0] and not list(page.get_objects(filter=[raw.FPDF_PAGEOBJ_FORM]))


def test_letters_the_standard_fonts_lack_take_a_unicode_font_or_keep_the_paragraph(fixture_translator):
    """A glossary puts a Czech word into the translation: it is set in DejaVu Sans (or Arial) where one
    is installed; else the paragraph stays as written, with a warning."""
    from mtkit.runtime import Glossary
    from mtkit.runtime.pdf import unicode_fonts

    glossary = Glossary.from_pairs("de", "en", [("Christkind", "Dědeček")])
    source = pdf(lambda sheet: paragraph(sheet, GERMAN[3], 72, 780, 450))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fixture_translator.translate_pdf(source, "en", from_lang="de", glossary=glossary, **GREEDY)
    if unicode_fonts() is None:
        assert text_of(out) == GERMAN[3] and "kept as written" in str(caught[-1].message)
    else:
        assert "Dědeček" in text_of(out) and not caught
        assert fonts_of(out, "Dědeček") <= {"DejaVuSans", "Arial"}


def test_without_a_unicode_font_such_a_paragraph_stays_as_written(fixture_translator, monkeypatch):
    from mtkit.runtime import Glossary, pdf as pdf_module

    monkeypatch.setattr(pdf_module, "unicode_fonts", lambda: None)       # a machine without DejaVu or Arial
    glossary = Glossary.from_pairs("de", "en", [("Christkind", "Dědeček")])
    source = pdf(lambda sheet: paragraph(sheet, GERMAN[3], 72, 780, 450) and paragraph(sheet, GERMAN[0], 72, 700, 450))
    with pytest.warns(UserWarning, match="1 paragraph kept as written: the translation has letters PDF's standard "
                                         "fonts lack, and no DejaVuSans or Arial font was found"):
        out = fixture_translator.translate_pdf(source, "en", from_lang="de", glossary=glossary, **GREEDY)
    assert text_of(out) == f"{GERMAN[3]} {ENGLISH[0]}"


def test_code_in_a_monospaced_font_stays_as_written(fixture_translator):
    def draw(sheet):
        paragraph(sheet, GERMAN[0], 72, 780, 450)
        paragraph(sheet, GERMAN[1], 72, 700, 450, font="Courier")

    text = text_of(translate(fixture_translator, pdf(draw)))       # what stays is read first: the page draws it
    assert text == f"{GERMAN[1]} {ENGLISH[0]}"


def test_a_notes_text_is_translated(fixture_translator):
    """A sticky note's text, shown in a pop-up, is translated; the page's text as before."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    def draw(sheet):
        paragraph(sheet, GERMAN[0], 72, 780, 450)
        sheet.textAnnotation(f"{GERMAN[1]}\n{GERMAN[2]}", Rect=(72, 600, 100, 630))

    out = translate(fixture_translator, pdf(draw))
    page = pdfium.PdfDocument(out)[0]
    annotation = raw.FPDFPage_GetAnnot(page, 0)
    size = raw.FPDFAnnot_GetStringValue(annotation, b"Contents", None, 0)
    buffer = ctypes.create_string_buffer(size)
    raw.FPDFAnnot_GetStringValue(annotation, b"Contents", ctypes.cast(buffer, ctypes.POINTER(ctypes.c_ushort)), size)
    raw.FPDFPage_CloseAnnot(annotation)
    assert buffer.raw[:size - 2].decode("utf-16-le") == f"{ENGLISH[1]}\n{ENGLISH[2]}" and text_of(out) == ENGLISH[0]


def test_pdf_is_offered_only_where_its_extra_is_installed(monkeypatch):
    from mtkit.runtime import documents

    assert ".pdf" in documents.supported() and ".docx" in documents.supported()
    monkeypatch.setitem(documents.NEEDS, "translate_pdf", ("no_such_module_here",))
    assert ".pdf" not in documents.supported() and ".docx" in documents.supported()


# PDFs translated in 8 threads at once by one Translator, in a process of their own: PDFium is not
# thread-safe, and two threads in it at once crashed the process (a segfault).
IN_THREADS = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
from pdf_files import pdf, text_of
from mtkit.runtime import Translator

model, documents = sys.argv[1], json.loads(sys.argv[2])
def draw(document):
    def pages(sheet):
        for page, line in enumerate(document):
            if page:
                sheet.showPage()
            sheet.drawString(50, 800, line)
    return pages
translator = Translator(model, variant="fp32", threads=1)
with ThreadPoolExecutor(8) as pool:
    done = list(pool.map(lambda d: translator.translate_pdf(pdf(draw(d)), "en", from_lang="de", beam_size=1),
                         documents))
print(json.dumps([text_of(out) for out in done]))
"""


def test_pdfs_translated_in_threads_at_once_come_out_whole(fixture_bundle):
    """One Translator shared by a web service's threads, each given a PDF: each comes back as alone
    (before the lock, 9 runs in 10 of this crashed)."""
    import json
    import subprocess
    from pathlib import Path

    numbers = [[(d + p) % 12 for p in range(30)] for d in range(16)]        # 16 PDFs of 30 pages, a line each
    documents = [[GERMAN[n] for n in document] for document in numbers]
    done = subprocess.run([sys.executable, "-c", IN_THREADS, str(fixture_bundle), json.dumps(documents)],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == [" ".join(ENGLISH[n] for n in document) for document in numbers]
