"""Excel workbooks in, workbooks out (`mt-translate --xlsx`, `Translator.translate_xlsx`).

A cell's text lives in the shared strings (one si each), or inline in a sheet (is); a comment's in
its text element. Each is translated as office.py says, rich text run by run. SpreadsheetML's own
rules: a line break in a cell is a character, and ends a sentence; a tab is one too; the phonetic
guides of East Asian text are kept after the runs; a sheet's printed header and footer are
translated with their codes kept (HeaderFooter), and so are Excel 365's threaded comments. Charts
(titles, series names, category labels) and the text of shapes are DrawingML (drawingml.py). Tables,
formulas, filters and drop-down lists that name a cell's text follow its translation
(workbook_references.py). Numbers, sheet names and every other part stay as they are.
"""

from __future__ import annotations

import copy
import re

from .drawingml import DRAWINGS, DrawingParagraph, PictureDescription
from .office import ElementText, Format, Paragraph, PlainText, translate_package
from .workbook_references import SML, ListChoices, cell_value, follow_translation, s

MACROS = "application/vnd.ms-excel."           # .xlsm and .xltm
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
THREADED = "http://schemas.microsoft.com/office/spreadsheetml/2018/threadedcomments"
DRAWING = "application/vnd.openxmlformats-officedocument.drawing+xml"     # a sheet's shapes and text boxes
CONTROLS = {"\t": "tab", "\n": "br"}
# A header's or footer's codes: its sections (&L, &C, &R), a page number (&P), a font ("&"Arial,Bold"),
# a size (&12), a colour (&KFF0000), a literal & (&&), ...
SECTIONS = ("&L", "&C", "&R")
PAGE_NUMBERS = ("&P", "&N")             # shown to the model as numbers: "Seite 1 von 2", not "Seite von"
HEADER_CODE = re.compile(r'&(?:"[^"]*"|\d+|K[0-9A-Fa-f]{6}|K\d{2}[+-]\d{3}|[LCR]|.)', re.DOTALL)


class CellText(Paragraph):
    """An si, is or comment text: plain (one t) or rich (runs of rPr and t)."""

    TAGS, LAST = (s("si"), s("is"), s("text")), (s("rPh"), s("phoneticPr"))

    def __init__(self, element):
        self.value = cell_value(element)        # as formulas and tables name it, before translation
        super().__init__(element)

    def read(self, child, link) -> None:
        if child.tag == s("t"):
            self.add_characters(child.text or "", None, link, s("t"), CONTROLS)
        elif child.tag == s("r") and child.find(s("t")) is not None:
            self.add_characters(child.find(s("t")).text or "", child.find(s("rPr")), link, s("t"), CONTROLS)

    def run(self, text: str, rpr):
        t = self.element.makeelement(s("t"), {})
        t.text = text
        return self.run_of(rpr, t)

    def run_of(self, rpr, part):
        if part.text != part.text.strip():
            part.set(XML_SPACE, "preserve")
        run = part.makeelement(s("r"), {})
        if rpr is not None:
            run.append(copy.deepcopy(rpr))
        run.append(part)
        return run

    def rewrite(self, translation: str, locale: str) -> None:
        super().rewrite(translation, locale)
        runs = [child for child in self.element if child.tag == s("r")]
        if all(run.find(s("rPr")) is None for run in runs):     # plain text stays one t, as Excel writes it
            t = self.element.makeelement(s("t"), {})
            t.text = "".join(run.find(s("t")).text or "" for run in runs)
            if t.text != t.text.strip() or "\n" in t.text:
                t.set(XML_SPACE, "preserve")
            for run in runs:
                self.element.remove(run)
            self.element.insert(0, t)


class HeaderFooter(PlainText):
    """A sheet's printed header or footer ("&LBericht&RSeite &P von &N"): its words translated, each
    section a sentence of its own, its codes kept where their words go."""

    TAGS = tuple(s(f"{pages}{part}") for pages in ("odd", "even", "first") for part in ("Header", "Footer"))

    def __init__(self, element):
        super().__init__(element, element.text or "")

    def read_content(self) -> None:
        start = 0
        for code in HEADER_CODE.finditer(self.source):
            if self.source[start:code.start()]:
                self.add_text(self.source[start:code.start()], None, None)
            if code.group() == "&&":
                self.add_text("&", None, None)
            else:
                if code.group() in PAGE_NUMBERS:
                    self.numbers[len(self.items)] = ""
                self.items.append(("object", code.group(), "br" if code.group() in SECTIONS else "img", None))
            start = code.end()
        if self.source[start:]:
            self.add_text(self.source[start:], None, None)

    def rewrite(self, translation: str, locale: str) -> None:
        self.element.text = "".join(self.items[number][1] if text is None else text.replace("&", "&&")
                                    for text, number, _ in self.pieces(translation))


class ThreadedComment(ElementText):
    """A post of an Excel 365 comment thread (the comments part holds an older copy of the thread, for
    older Excels). One with @mentions stays as written: they point into its text by position."""

    TAGS = (f"{{{THREADED}}}text",)

    def read_text(self, element) -> str:
        return "" if element.getparent().find(f"{{{THREADED}}}mentions") is not None else element.text or ""


MAIN = frozenset({SML + "sheet.main+xml", SML + "template.main+xml", MACROS + "sheet.macroEnabled.main+xml",
                  MACROS + "template.macroEnabled.main+xml"})
XLSX = Format(
    name="an Excel workbook", suffix=".xlsx", old="Excel .xls", main=MAIN,
    parts={**dict.fromkeys({SML + "sharedStrings+xml", SML + "comments+xml"}, (CellText,)),
           SML + "worksheet+xml": (CellText, ListChoices, HeaderFooter),
           "application/vnd.ms-excel.threadedcomments+xml": (ThreadedComment,),
           **DRAWINGS, DRAWING: (DrawingParagraph, PictureDescription)},
    follow=follow_translation)


def translate_xlsx(translator, document: bytes, to=None, options=None, **settings) -> bytes:
    """`document`, an .xlsx file's bytes, with its cells' and comments' text translated into `to` and all else kept."""
    return translate_package(XLSX, translator, document, to, options, **settings)
