"""Small PDF files made with reportlab for the tests of runtime/pdf.py, and what a test reads back
from a PDF with PDFium: its text, fonts, pictures and links."""

from __future__ import annotations

import io
import re


def pdf(draw, encrypt: str | None = None) -> bytes:
    """A one-page A4 PDF, drawn by `draw(canvas)`."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    sheet = canvas.Canvas(out, pagesize=A4, encrypt=encrypt, invariant=True)
    draw(sheet)
    sheet.showPage()
    sheet.save()
    return out.getvalue()


def paragraph(sheet, markup: str, x: float, top: float, width: float, size: float = 11, font: str = "Times-Roman",
              justify: bool = False) -> float:
    """`markup` (reportlab's) set in a box of `width` from `top` down; where it ends."""
    from reportlab.lib.enums import TA_JUSTIFY, TA_LEFT
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.platypus import Paragraph

    flowable = Paragraph(markup, ParagraphStyle("p", fontName=font, fontSize=size, leading=size * 1.25,
                                                alignment=TA_JUSTIFY if justify else TA_LEFT))
    _, height = flowable.wrap(width, 800)
    flowable.drawOn(sheet, x, top - height)
    return top - height


def picture(sheet, x: float, y: float) -> None:
    from PIL import Image                  # reportlab's dependency
    from reportlab.lib.utils import ImageReader
    sheet.drawImage(ImageReader(Image.new("RGB", (4, 4), "teal")), x, y, width=40, height=40)


def text_of(document: bytes) -> str:
    """All the text on the document's pages, with its white space made single spaces."""
    import pypdfium2 as pdfium

    pages = pdfium.PdfDocument(document)
    return re.sub(r"\s+", " ", " ".join(page.get_textpage().get_text_range() for page in pages)).strip()


def fonts_of(document: bytes, words: str) -> set[str]:
    """The names of the fonts the characters of `words` are drawn in, on the first page."""
    import ctypes

    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    textpage = pdfium.PdfDocument(document)[0].get_textpage()
    text = textpage.get_text_range()
    start = text.index(words)
    names = set()
    for index in range(start, start + len(words)):
        if text[index].strip():
            name = ctypes.create_string_buffer(256)
            raw.FPDFText_GetFontInfo(textpage, index, name, 256, None)
            names.add(name.value.decode().split("+")[-1])
    return names


def counts(document: bytes) -> dict[str, int]:
    """Pages, pictures and link annotations."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pages = pdfium.PdfDocument(document)
    return {"pages": len(pages),
            "pictures": sum(len(list(page.get_objects(filter=[raw.FPDF_PAGEOBJ_IMAGE]))) for page in pages),
            "links": sum(raw.FPDFPage_GetAnnotCount(page) for page in pages)}
