"""PDF files in, PDF files out (`mt-translate --pdf`, `Translator.translate_pdf`): each page's text
translated and set where it stood, all else kept: pictures, drawings, links, the outline, forms,
metadata.

A PDF has no paragraphs, only glyphs placed on a page. PDFium (pypdfium2) reads each character with
its box, font, size and colour; characters make lines, a wide gap or a table's rule parts a line
into cells, and lines make paragraphs while they keep their column, font size and spacing and the
line before ran on to the column's edge (a line that ends where the next word would have fitted
ends its paragraph). Each paragraph goes through office.py's path: words of another font (bold,
italic, another colour) and superscripts are a span that follows them. The paragraph's text objects
are taken off the page and reportlab sets the translation into the paragraph's box, with its
alignment, indents and line spacing and the font's family (serif, sans, mono), weight and slant
(PDF's standard fonts: Latin script), smaller where it is longer than the box holds (down to
MIN_SCALE); what reportlab drew goes onto the page as one object.

Kept as written: code (a paragraph all in a monospaced font), a paragraph with a formula (a math
font's glyphs; set anew, it would break), glyphs
PDFium cannot map to characters, text at an angle, and text inside form objects. A scanned page has
no text to translate: run OCR first. Needs the `pdf` extra (pypdfium2, reportlab).
"""

from __future__ import annotations

import ctypes
import functools
import io
import itertools
import re
import statistics
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from xml.sax.saxutils import escape

from .errors import DocumentError, TranslationError
from .office import Paragraph, PlainText, translate_paragraphs, translated_pieces

MAGIC = b"%PDF-"
# PDFium is not thread-safe: two threads in it at once, even on different documents, crash the process
# (pypdfium2's docs). What this file does with PDFium holds this lock; the translation in between does not.
PDFIUM = threading.Lock()
MIN_SCALE = 0.6          # the smallest font size a translation is set in, against the source's
CELL_GAP = 2.0           # a gap on a line wider than this many font sizes parts it (table cells)
BULLET = re.compile(r"^([•◦▪■►–—\-*]|\d{1,3}[.)]|[a-z][.)]|\(\w{1,3}\))\s")
# Words in a font's name that tell its family, weight and slant (TeX's fonts by their short names).
SERIF = ("times", "serif", "roman", "georgia", "cambria", "garamond", "minion", "palatino", "book", "charter",
         "baskerville", "caslon", "century", "schoolbook", "utopia", "didot", "bodoni", "constantia", "sabon",
         "nimbusrom", "termes", "pagella", "palladio", "cmr", "cmti", "cmbx", "sfrm", "sfti", "sfbx", "sfsl")
MONO = ("courier", "mono", "consol", "code", "cmtt", "sftt", "menlo")
BOLD = ("bold", "black", "heavy", "demi", "-medi", "sfbx", "cmbx")        # URW's "-Medi" is their bold
ITALIC = ("italic", "oblique", "sfti", "cmti")
# Fonts of formulas (TeX's and others'): a paragraph with a formula is kept, as setting it anew would break it.
MATH = ("cmmi", "cmsy", "cmex", "msbm", "msam", "eufm", "eusm", "eurm", "rsfs", "math", "stmary", "wasy", "esint",
        "txsy", "pxsy", "txex", "pxex")
FORCE_BOLD = 1 << 18     # a font descriptor's flag
# Notes whose text a viewer shows in a pop-up as it is written (their FPDF_ANNOT_ names).
SHOWN_AS_IS = ("TEXT", "LINE", "SQUARE", "CIRCLE", "POLYGON", "POLYLINE", "HIGHLIGHT", "UNDERLINE", "SQUIGGLY",
               "STRIKEOUT", "STAMP", "CARET", "INK", "FILEATTACHMENT")
X_LETTERS = set("acemnorsuvwxz")       # letters as tall as the x-height
X_HEIGHT = {"Helvetica": 0.523, "Times": 0.448, "Courier": 0.426}    # the standard fonts' (their AFM files)
# TrueType fonts for a translation with letters the standard fonts lack (Czech, Greek, Cyrillic):
# family -> its regular, bold, oblique and bold oblique files, each where Linux, macOS or Windows keeps it.
DEJAVU = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu", "/usr/share/fonts/TTF")
UNICODE_FONTS = {
    "DejaVuSans": [[f"{d}/DejaVuSans{v}.ttf" for d in DEJAVU] for v in ("", "-Bold", "-Oblique", "-BoldOblique")],
    "Arial": [[f"C:/Windows/Fonts/{name}.ttf", f"/Library/Fonts/{name}.ttf",
               f"/System/Library/Fonts/Supplemental/{name}.ttf"] for name in ("arial", "arialbd", "ariali", "arialbi")],
}
FONTS = {("sans", False, False): "Helvetica", ("sans", True, False): "Helvetica-Bold",
         ("sans", False, True): "Helvetica-Oblique", ("sans", True, True): "Helvetica-BoldOblique",
         ("serif", False, False): "Times-Roman", ("serif", True, False): "Times-Bold",
         ("serif", False, True): "Times-Italic", ("serif", True, True): "Times-BoldItalic",
         ("mono", False, False): "Courier", ("mono", True, False): "Courier-Bold",
         ("mono", False, True): "Courier-Oblique", ("mono", True, True): "Courier-BoldOblique"}


@dataclass(frozen=True)
class Style:
    """How a character is drawn, as far as the translation keeps it."""
    font: str           # one of FONTS' values
    color: str          # "#rrggbb"
    script: str = ""    # "super" or "sub": smaller, and raised or lowered (a note's number, an index)


@dataclass
class Char:
    text: str
    box: tuple[float, float, float, float]     # left, bottom, right, top, in the page's user space
    size: float
    style: Style
    obj: int | None     # the text object that draws it: its index among the page's top-level ones
    kept: bool          # not to be translated: unmapped, at an angle, or inside a form object
    generated: bool     # PDFium's own space or line break between words


@dataclass
class Line:
    chars: list[Char]
    left: float = field(init=False)
    right: float = field(init=False)
    bottom: float = field(init=False)
    top: float = field(init=False)
    size: float = field(init=False)
    baseline: float = field(init=False)

    def __post_init__(self):
        boxes = [c.box for c in self.chars if c.text.strip()]
        self.left, self.bottom = min(b[0] for b in boxes), min(b[1] for b in boxes)
        self.right, self.top = max(b[2] for b in boxes), max(b[3] for b in boxes)
        self.size = statistics.median(c.size for c in self.chars if c.text.strip())
        self.baseline = statistics.median(c.box[1] for c in self.chars if c.text.isalnum() and c.size >= self.size) \
            if any(c.text.isalnum() and c.size >= self.size for c in self.chars) else self.bottom

    @property
    def text(self) -> str:
        return "".join(c.text for c in self.chars).strip()


class PdfParagraph(Paragraph):
    """Lines of one paragraph: its characters as text of their styles, and the translation to draw."""

    def __init__(self, lines: list[Line]):
        self.lines = lines
        letters = [c for line in lines for c in line.chars if c.text.strip()]
        code = all(c.style.font.startswith("Courier") for c in letters)       # a listing, as HTML's <pre> is kept
        self.kept = code or any(c.kept for c in letters)
        self.drawn: str | None = None           # reportlab markup of the translation, once rewritten
        self.lacking = False                    # its translation needs letters no font found has
        self.left, self.right = min(line.left for line in lines), max(line.right for line in lines)
        self.bottom, self.top = min(line.bottom for line in lines), max(line.top for line in lines)
        self.right_limit = self.right
        self.objects = {c.obj for c in letters if c.obj is not None}      # the text objects that draw it
        heights = [c.box[3] - c.box[1] for line in lines for c in line.chars if c.text in X_LETTERS]
        self.x_height = statistics.median(heights) if len(heights) >= 3 else None
        super().__init__(None)

    def read_content(self) -> None:
        if self.kept:
            return
        for number, line in enumerate(self.lines):
            chars = [c for c in line.chars if not (c.generated and c.text in "\r\n")]
            if number and chars and self.items:         # the line before ends: one space, or a word goes on
                last = self.items[-1][1].rstrip()
                if last.endswith("\u00ad") or (last.endswith("-") and chars[0].text.islower()):
                    last = last[:-1]                    # a word hyphenated at the line's end
                elif not last.endswith("-"):            # "E-Mail-" goes on as "E-Mail-Adresse"
                    last += " "
                self.items[-1] = ("text", last, *self.items[-1][2:])
            for char in chars:
                self.add_text(char.text, script_of(char, line), None)

    def key(self, style) -> str:
        return repr(style)

    def rewrite(self, translation: str, locale: str) -> None:
        keys = list(self.properties)
        pieces = [(text, number) for text, number, _ in translated_pieces(translation, 0) if text]
        words = "".join(text for text, _ in pieces)
        if words.split() == self.text.split():
            return          # not translated (another script, the target language already): the page's glyphs stay
        fonts = fonts_for(words)
        if fonts is None:
            self.lacking = True
            return
        parts = []
        for text, number in pieces:
            style = self.properties[keys[number]] if number is not None else self.properties[self.base]
            text = f'<font name="{fonts[style.font]}" color="{style.color}">{escape(text)}</font>'
            parts.append(f"<{style.script}>{text}</{style.script}>" if style.script else text)
        self.drawn = "".join(parts).strip()

    @property
    def style(self) -> Style:
        return self.properties[self.base]


def script_of(char: Char, line: Line) -> Style:
    """The character's style, as a superscript or subscript where it is smaller than its line and
    raised or lowered."""
    if char.size < 0.85 * line.size and char.text.strip():
        if char.box[1] > line.baseline + 0.25 * line.size:
            return replace(char.style, script="super")
        if char.box[1] < line.baseline - 0.1 * line.size:
            return replace(char.style, script="sub")
    return char.style


def translate_pdf(translator, document: bytes, to=None, options=None, *, from_lang: str = "auto", glossary=None,
                  **overrides) -> bytes:
    """`document`, a PDF file's bytes, with its pages' text translated into `to` and all else kept."""
    try:
        import pypdfium2  # noqa: F401  (open_pdf imports it; here, as reportlab, so that a missing one fails first)
        import reportlab  # noqa: F401  (set_paragraphs imports it when used; here, so that a missing one fails first)
    except ModuleNotFoundError as e:
        raise TranslationError(f"{e.name} is not installed, which PDF files need; install it with: "
                               f"pip install 'mtkit[pdf]'") from None

    with PDFIUM:
        pdf = open_pdf(document)
    try:
        with PDFIUM:
            pages = [read_page(pdf, i) for i in range(len(pdf))]          # each: its paragraphs and its notes
        paragraphs = [p for page, _ in pages for p in page]
        if not any(p.has_words for p in paragraphs) and not any(p.kept for p in paragraphs):
            import warnings
            warnings.warn("the PDF has no text (a scan?): run OCR on it first; it is written back as it was",
                          stacklevel=3)
        translate_paragraphs(translator, [*paragraphs, *(c for _, notes in pages for c in notes)], to, options,
                             from_lang, glossary, overrides)
        if lacking := sum(p.lacking for p in paragraphs):
            import warnings
            warnings.warn(f"{lacking} paragraph{'s' * (lacking > 1)} kept as written: the translation has letters "
                          f"PDF's standard fonts lack, and no {' or '.join(UNICODE_FONTS)} font was found",
                          stacklevel=3)
        with PDFIUM:
            for number, (page_paragraphs, notes) in enumerate(pages):
                drawn = [p for p in page_paragraphs if p.drawn]
                translated = [c for c in notes if c.translated is not None]
                if drawn or translated:
                    page = pdf[number]
                    redraw(pdf, page, drawn)
                    write_comments(page, translated)
            out = io.BytesIO()
            pdf.save(out)
        return out.getvalue()
    finally:
        with PDFIUM:        # closed here, with its pages: left to its finalizer, it would close on any thread
            pdf.close()


def open_pdf(document: bytes):
    """The PDF as a pypdfium2 PdfDocument, or a DocumentError that says why it cannot be read."""
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(document)
    except pdfium.PdfiumError as e:
        if MAGIC not in document[:1024]:      # readers find the header anywhere in the first 1 KB, or do without
            raise DocumentError("not a PDF file (no %PDF- header in its first 1 KB)") from None
        if "password" in str(e).lower():
            raise DocumentError("the PDF has a password: save it without one first") from None
        raise DocumentError(f"the PDF is damaged: {e}") from None


def read_page(pdf, number: int) -> tuple[list[PdfParagraph], list[Comment]]:
    """The paragraphs and the notes of one page; none, with a warning, for a page PDFium cannot load (it
    stays as is)."""
    import pypdfium2 as pdfium

    try:
        page = pdf[number]
    except pdfium.PdfiumError as e:
        import warnings
        warnings.warn(f"page {number + 1} cannot be read ({e}); it is kept as it is", stacklevel=4)
        return [], []
    textpage = page.get_textpage()
    try:
        chars = read_chars(page, textpage)
    finally:
        textpage.close()
    rules = vertical_rules(page)
    lines = [segment for line in split_lines(chars) for segment in split_cells(line, rules)]
    paragraphs = [PdfParagraph(block) for block in paragraphs_of(lines, rules)]
    for p in paragraphs:            # how far a translation on one line may run
        p.right_limit = max(p.right, column_right(p.lines[0], lines, rules))
    for line in lines:              # read: a book's characters would take hundreds of megabytes
        line.chars = []
    return paragraphs, read_comments(page)


class Comment(PlainText):
    """A note's text (an annotation's Contents: a sticky note, a highlight's comment), which a viewer
    shows in a pop-up; `element` is the annotation's index on its page."""


def read_comments(page) -> list[Comment]:
    """The notes on the page whose text a viewer shows as it is (not a FreeText note, whose page
    appearance would keep the source's words, nor a link or a form's field)."""
    import pypdfium2.raw as raw

    comments, shown = [], {getattr(raw, f"FPDF_ANNOT_{name}") for name in SHOWN_AS_IS}
    for index in range(raw.FPDFPage_GetAnnotCount(page)):
        annotation = raw.FPDFPage_GetAnnot(page, index)
        try:
            if raw.FPDFAnnot_GetSubtype(annotation) in shown:
                size = raw.FPDFAnnot_GetStringValue(annotation, b"Contents", None, 0)
                text = ctypes.create_string_buffer(size)
                raw.FPDFAnnot_GetStringValue(annotation, b"Contents", ctypes.cast(text, ctypes.POINTER(ctypes.c_ushort)),
                                             size)
                if (contents := text.raw[:max(size - 2, 0)].decode("utf-16-le", "replace").replace("\r", "\n")).strip():
                    comments.append(Comment(index, contents))
        finally:
            raw.FPDFPage_CloseAnnot(annotation)
    return comments


def write_comments(page, comments: list[Comment]) -> None:
    import pypdfium2.raw as raw

    for comment in comments:
        annotation = raw.FPDFPage_GetAnnot(page, comment.element)
        text = ctypes.create_string_buffer((comment.translated + "\0").encode("utf-16-le"))
        raw.FPDFAnnot_SetStringValue(annotation, b"Contents", ctypes.cast(text, ctypes.POINTER(ctypes.c_ushort)))
        raw.FPDFPage_CloseAnnot(annotation)


def read_chars(page, textpage) -> list[Char]:
    import pypdfium2.raw as raw

    top_level = {handle(obj): n for n, obj in enumerate(text_objects(page))}
    styles: dict[int, tuple[Style, bool, float]] = {}     # by text object: its style, formula or not, size
    chars: list[Char] = []
    for i in range(textpage.count_chars()):
        code = raw.FPDFText_GetUnicode(textpage, i)
        code = code if code <= 0x10FFFF else 0xE000         # no character (a damaged font): kept, as unmapped
        generated = bool(raw.FPDFText_IsGenerated(textpage, i))
        obj = raw.FPDFText_GetTextObject(textpage, i)
        address = ctypes.cast(obj, ctypes.c_void_p).value or 0
        if address and address not in styles:
            styles[address] = (*read_font(textpage, i), font_size(obj))
        # PDFium's marks of a hyphen at a line end: a soft one (0xFFFE), or one that is part of the word (0x02)
        text = "\u00ad" if code == 0xFFFE else "-" if code == 2 else chr(code) if code else ""
        if 0xDC00 <= code <= 0xDFFF and chars and "\ud800" <= chars[-1].text <= "\udbff":    # a pair's second half
            chars[-1].text = (chars[-1].text + text).encode("utf-16", "surrogatepass").decode("utf-16")
            text = ""
        unmapped = raw.FPDFText_HasUnicodeMapError(textpage, i) == 1 or 0xE000 <= code <= 0xF8FF
        angle = raw.FPDFText_GetCharAngle(textpage, i)
        at_angle = angle > 0.01 and abs(angle - 6.283185) > 0.01
        style, math, size = styles[address] if address else (chars[-1].style, False, chars[-1].size) if chars \
            else (Style("Helvetica", "#000000"), False, 10.0)
        invisible = size < 1                   # a font size of 0: text there only to be searched
        kept = not generated and (unmapped or at_angle or math or invisible or (address and address not in top_level))
        chars.append(Char(text, textpage.get_charbox(i, loose=False), size, style, top_level.get(address), kept,
                          generated))
    return chars


def font_size(obj) -> float:
    """A text object's font size on the page: its font's size, scaled as its matrix scales it."""
    import pypdfium2.raw as raw

    size, matrix = ctypes.c_float(), raw.FS_MATRIX()
    raw.FPDFTextObj_GetFontSize(obj, ctypes.byref(size))
    raw.FPDFPageObj_GetMatrix(obj, ctypes.byref(matrix))
    return size.value * abs(matrix.a * matrix.d - matrix.b * matrix.c) ** 0.5 or size.value


def text_objects(page) -> list:
    """The page's text objects, not those inside form objects: in their order, which is the same each
    time the page is loaded (their handles are not)."""
    import pypdfium2.raw as raw
    return list(page.get_objects(filter=[raw.FPDF_PAGEOBJ_TEXT], max_depth=0))


def handle(obj) -> int:
    return ctypes.cast(obj.raw, ctypes.c_void_p).value or 0


def read_font(textpage, index: int) -> tuple[Style, bool]:
    """The style of a character's font, and whether it is a font of formulas."""
    import pypdfium2.raw as raw

    name = ctypes.create_string_buffer(256)
    flags = ctypes.c_int()
    raw.FPDFText_GetFontInfo(textpage, index, name, 256, ctypes.byref(flags))
    font = name.value.decode("latin-1").split("+")[-1].lower()
    family = "mono" if any(m in font for m in MONO) or flags.value & 1 else \
        "serif" if any(s in font for s in SERIF) or flags.value & 2 else "sans"
    bold = any(w in font for w in BOLD) or bool(flags.value & FORCE_BOLD)     # PDFium's weights are guesses
    italic = any(w in font for w in ITALIC) or bool(flags.value & 64)
    rgba = [ctypes.c_uint() for _ in range(4)]
    raw.FPDFText_GetFillColor(textpage, index, *(ctypes.byref(c) for c in rgba))
    return (Style(FONTS[family, bold, italic], "#{:02x}{:02x}{:02x}".format(*(c.value for c in rgba[:3]))),
            any(m in font for m in MATH))


def split_lines(chars: list[Char]) -> list[Line]:
    """Characters in reading order, cut into lines at PDFium's line breaks, except one before a
    character set right after the last (a superscript: PDFium breaks there too), and where the text
    starts again further left on another baseline."""
    lines, current, previous, broken = [], [], None, False
    for char in chars:
        if char.generated and char.text in "\r\n":
            broken = True
            continue
        if previous is not None and char.text.strip():
            size = max(char.size, previous.size)
            attached = abs(char.box[0] - previous.box[2]) < 0.3 * size
            moved = min(abs(char.box[1] - previous.box[1]), abs(char.box[3] - previous.box[3])) > 0.6 * size
            if (broken and not attached) or (moved and char.box[0] < previous.box[2] - 0.5 * size):
                lines.append(current)
                current = []
            broken = False
        current.append(char)
        if char.text.strip():
            previous = char
    if current:
        lines.append(current)
    return [Line(without_marker(line)) for line in lines if any(c.text.strip() for c in line)]


def without_marker(chars: list[Char]) -> list[Char]:
    """A line without the list's bullet it starts with, when that is drawn in a font with no Unicode
    map (Word's bullets in Symbol): the bullet stays on the page, and the words after it are read."""
    start = 0
    while start < len(chars) and chars[start].kept:
        start += 1
    rest = chars[start:]
    if start and rest and not rest[0].text.strip() and any(c.text.strip() and not c.kept for c in rest):
        return list(itertools.dropwhile(lambda c: not c.text.strip(), rest))
    return chars


def vertical_rules(page) -> list[tuple[float, float, float, float]]:
    """The boxes of the page's thin vertical lines and bars: a table's column rules."""
    import pypdfium2.raw as raw

    boxes = [obj.get_bounds() for obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_PATH], max_depth=1)]
    return [box for box in boxes if box[2] - box[0] <= 3 and box[3] - box[1] > 4]


def split_cells(line: Line, rules: list) -> list[Line]:
    """A line parted where a gap wider than CELL_GAP font sizes, or a vertical rule, lies between two
    characters."""
    segments, current, last_right = [], [], None
    for char in line.chars:
        if char.text.strip():
            if last_right is not None and (char.box[0] - last_right > CELL_GAP * line.size or any(
                    last_right - 1 <= r[0] and r[2] <= char.box[0] + 1 and r[1] < char.box[3] and r[3] > char.box[1]
                    for r in rules)):
                segments.append(current)
                current = []
            last_right = char.box[2]
        current.append(char)
    segments.append(current)
    return [Line(s) for s in segments if any(c.text.strip() for c in s)]


def paragraphs_of(lines: list[Line], rules: list) -> list[list[Line]]:
    """Lines grouped into paragraphs: a line joins the paragraph before it when it is the next line
    of the same column, in the same size, and the line before ran on to the column's right edge."""
    blocks: list[list[Line]] = []
    for line in lines:
        block = blocks[-1] if blocks else None
        if block is None or not continues(block, line, column_right(block[-1], lines, rules)):
            blocks.append([line])
        else:
            block.append(line)
    return blocks


def column_right(line: Line, lines: list[Line], rules: list) -> float:
    """The right edge of the column `line` is in: the furthest any line of its size starting where it
    starts reaches, short of the first rule or text to its right (the next table cell)."""
    furthest = max(other.right for other in lines if other is line or abs(other.left - line.left) < 3 * line.size
                   and abs(other.size - line.size) <= 0.15 * line.size)
    beside = [other.left for other in lines if other.left >= line.right and other.bottom < line.top + line.size
              and other.top > line.bottom - line.size]
    walls = [rule[0] for rule in rules if rule[0] >= line.right and rule[1] < line.top and rule[3] > line.bottom]
    return min([furthest, *beside, *walls])


def continues(block: list[Line], line: Line, right: float) -> bool:
    """Whether `line` goes on the paragraph `block`, whose column ends at `right`."""
    last = block[-1]
    size = max(last.size, line.size)
    if abs(line.size - last.size) > 0.15 * size:
        return False
    gap = last.baseline - line.baseline
    spacing = statistics.median(a.baseline - b.baseline for a, b in zip(block, block[1:])) if len(block) > 1 else None
    if gap <= 0.3 * size or gap > (spacing * 1.25 if spacing else 1.7 * size):
        return False
    left = min(b.left for b in block)
    if line.right < left or line.left > right or abs(line.left - left) > 3 * size and abs(line.left - last.left) > size:
        return False
    if BULLET.match(line.text):
        return False
    # The next word would not have fitted: its width, a space, and the margin a table cell keeps from its rule.
    return right - last.right < first_word_width(line) + 0.75 * size


def first_word_width(line: Line) -> float:
    """How wide the line's first word is drawn."""
    word = list(itertools.takewhile(lambda c: c.text.strip(), itertools.dropwhile(lambda c: not c.text.strip(),
                                                                                  line.chars)))
    return max(c.box[2] for c in word) - line.left if word else 0.0


def redraw(pdf, page, paragraphs: list[PdfParagraph]) -> None:
    """The page's translated paragraphs taken off it and set anew, in one object drawn over it."""
    if not paragraphs:
        return
    import pypdfium2 as pdfium

    gone = set().union(*(p.objects for p in paragraphs))
    for n, obj in enumerate(text_objects(page)):
        if n in gone:
            page.remove_obj(obj)
    left, bottom, right, top = page.get_mediabox()
    overlay = pdfium.PdfDocument(set_paragraphs(paragraphs, (left, bottom, right, top)))
    obj = overlay.page_as_xobject(0, pdf).as_pageobject()
    obj.transform(pdfium.PdfMatrix().translate(left, bottom))
    page.insert_obj(obj)
    page.gen_content()


def fonts_for(text: str) -> dict[str, str] | None:
    """reportlab's names of the fonts to set `text` in, by the standard font each stands for: the
    standard ones (Latin-1 and a little more), or else a TrueType family with more letters, if one
    is found (UNICODE_FONTS); None if none is."""
    try:
        text.encode("cp1252")               # the standard fonts' encoding (WinAnsi)
        return {name: name for name in FONTS.values()}
    except UnicodeEncodeError:
        return unicode_fonts()


@functools.cache
def unicode_fonts() -> dict[str, str] | None:
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    for family, files in UNICODE_FONTS.items():
        regular = next((path for path in files[0] if Path(path).is_file()), None)
        if regular is None:
            continue
        names = {}
        for variant, candidates in zip(("", "-Bold", "-Oblique", "-Bold-Oblique"), files):
            path = next((p for p in candidates if Path(p).is_file()), regular)
            pdfmetrics.registerFont(TTFont(family + variant, path))
            names[variant] = family + variant
        return {name: names["-Bold" * ("Bold" in name) + "-Oblique" * ("Oblique" in name or "Italic" in name)
                            or ""] for name in FONTS.values()}
    return None


def set_paragraphs(paragraphs: list[PdfParagraph], mediabox) -> bytes:
    """A one-page PDF of the page's size with each translation set into its paragraph's box."""
    from reportlab.lib.enums import TA_CENTER, TA_JUSTIFY, TA_LEFT, TA_RIGHT
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.pdfgen import canvas
    from reportlab.platypus import Paragraph as Flowable

    left, bottom, right, top = mediabox
    out = io.BytesIO()
    sheet = canvas.Canvas(out, pagesize=(right - left, top - bottom))
    align = {"left": TA_LEFT, "center": TA_CENTER, "right": TA_RIGHT, "justify": TA_JUSTIFY}
    for p in paragraphs:
        lines = p.lines
        size = statistics.median(line.size for line in lines)
        leading = statistics.median(a.baseline - b.baseline for a, b in zip(lines, lines[1:])) if len(lines) > 1 \
            else 1.2 * size
        if p.x_height:          # letters as tall as the source's: its font may run larger or smaller per point
            size *= min(max(p.x_height / size / X_HEIGHT[p.style.font.split("-")[0]], 0.85), 1.25)
        width = (p.right_limit if len(lines) == 1 else p.right + 0.5 * size) - p.left
        how = alignment(p)
        indent = lines[1].left - p.left if len(lines) > 1 and how in ("left", "justify") else 0.0
        first = lines[0].left - lines[1].left if indent or (len(lines) > 1 and how in ("left", "justify")) else 0.0
        for scale in (1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, MIN_SCALE):
            style = ParagraphStyle("p", fontName=p.style.font, fontSize=size * scale, leading=leading * scale,
                                   textColor=p.style.color, alignment=align[how], leftIndent=indent,
                                   firstLineIndent=first)
            flowable = Flowable(p.drawn, style)
            _, needed = flowable.wrap(width, 10 * (top - bottom))
            if needed <= (len(lines) + 0.3) * leading:          # as many lines as it had
                break
        ascent_gap = (leading * scale - size * scale) / 2
        flowable.drawOn(sheet, p.left - left, p.top - needed + ascent_gap - bottom)
    sheet.showPage()
    sheet.save()
    return out.getvalue()


def alignment(p: PdfParagraph) -> str:
    """How the paragraph's lines stand: justified, left-aligned (a first line may be indented or hang),
    centred or right-aligned."""
    lines = p.lines
    if len(lines) < 2:
        return "left"
    lefts, rights = [line.left for line in lines], [line.right for line in lines]
    tolerance = 0.3 * lines[0].size

    def even(values) -> bool:
        return max(values) - min(values) < tolerance
    if len(lines) > 2 and even(rights[:-1]) and even(lefts[1:]):
        return "justify"
    if even(lefts[1:]):
        return "left"
    if even([(a + b) / 2 for a, b in zip(lefts, rights)]):
        return "center"
    return "right" if even(rights) else "left"
