"""Word documents in, Word documents out (`mt-translate --docx`, `Translator.translate_docx`).

The paragraphs (w:p) of the body, tables, text boxes, headers, footers, footnotes, endnotes and
comments are translated as office.py says. Word's own rules: a hyperlink wraps its runs, as a form's
field (a content control, w:sdt) does; a complex field (a page number, a cross-reference) runs from
its begin mark to its end mark and is kept whole, but for the words of a cross-reference's or a
hyperlink field's result, translated on their own (FieldResults); a field that goes on past its
paragraph (a table of contents) keeps its code, and its result is read as words; a tab, a break, a
picture or a note's number inside a run becomes a run of its own; spell-checking's markers are
dropped (Word redoes them); a paragraph with tracked changes is kept as it is. The language marks
(w:lang) of the runs and of the styles follow the translation. Charts (titles, series names,
category labels) and SmartArt are DrawingML (drawingml.py).
"""

from __future__ import annotations

import copy

from .drawingml import DRAWINGS, PictureDescription
from .office import AttributeText, Format, Paragraph, PlainTexts, other_language, translate_package

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
WORDML = "application/vnd.openxmlformats-officedocument.wordprocessingml."
MACROS = "application/vnd.ms-word."             # .docm and .dotm


def w(tag: str) -> str:
    return f"{{{W}}}{tag}"


TRACKED = {w(tag) for tag in ("ins", "del", "moveFrom", "moveTo")}
WRAPPERS = {w("smartTag"), w("customXml")}      # old markers around words: their words are read, they go
HINTS = {w(tag) for tag in ("proofErr", "lastRenderedPageBreak", "softHyphen")}   # Word redoes them
WORDS = {w("t"), w("noBreakHyphen")}
FIXED_CONTROLS = {w("dataBinding"), "{http://schemas.microsoft.com/office/word/2010/wordml}checkbox"}
NUMBER_FIELDS = {"PAGE", "NUMPAGES", "SECTIONPAGES", "PAGEREF", "SEQ"}     # shown to the model as their number
WORDED_FIELDS = {"REF", "STYLEREF", "HYPERLINK"}    # whose result is words; others (a page number, a merge field) stay


class WordParagraph(Paragraph):
    """A w:p."""

    TAGS, FIRST = (w("p"),), (w("pPr"),)

    def __init__(self, element):
        self.tracked = has_tracked_changes(element)
        self._field: list | None = None                 # the runs of an open complex field
        self._depth = 0
        self._code_end = 0                              # where the open field's result begins, in _field
        self._field_link, self._field_item = None, 0    # its link, and its object's place in items
        self.wrapped: set = set()                       # controls whose properties a rewrite has moved
        super().__init__(element)

    def read_content(self) -> None:
        super().read_content()
        if self._field is not None and self._code_end:
            # A field that goes on past this paragraph (a table of contents): its code is kept, and the
            # result in this paragraph is read as words, as the next paragraphs' are.
            rest, link = self._field[self._code_end:], self._field_link
            del self._field[self._code_end:]
            self._field, self._depth = None, 0
            for child in rest:
                self.read(child, link)

    def read(self, child, link) -> None:
        if child.tag in HINTS:
            return
        if self._field is not None or (child.tag == w("r") and child.find(w("fldChar")) is not None):
            self._read_field(child, link)
        elif child.tag == w("r"):
            self._read_run(child, link)
        elif link is None and (runs := _wrapped(child)) is not None:
            self.links.append(child)
            for grandchild in runs:
                self.read(grandchild, len(self.links) - 1)
        elif child.tag in WRAPPERS:
            for grandchild in child:
                if not grandchild.tag.endswith("Pr"):
                    self.read(grandchild, link)
        else:
            if child.tag == w("fldSimple") and _keyword(child.get(w("instr"), "")) in NUMBER_FIELDS:
                self.numbers[len(self.items)] = "".join(t.text or "" for t in child.iter(w("t")))
            self.items.append(("object", child, "img", None))

    def _read_field(self, child, link) -> None:
        """A complex field from its begin to its end, kept as one object."""
        if self._field is None:
            self._field, self._code_end, self._field_link, self._field_item = [], 0, link, len(self.items)
            self.items.append(("object", self._field, "img", link))
        self._field.append(child)
        for mark in child.iter(w("fldChar")):
            kind = mark.get(w("fldCharType"))
            self._depth += {"begin": 1, "end": -1}.get(kind, 0)
            if kind == "separate" and self._depth == 1:
                self._code_end = len(self._field)
        if self._depth <= 0:
            code = "".join(t.text or "" for run in self._field for t in run.iter(w("instrText")))
            if _keyword(code) in NUMBER_FIELDS:
                result = [t.text or "" for run in self._field[self._code_end:] for t in run.iter(w("t"))]
                self.numbers[self._field_item] = "".join(result)
            self._field, self._depth = None, 0

    def _read_run(self, run, link) -> None:
        rpr = run.find(w("rPr"))
        if all(part.tag not in WORDS for part in run):          # no words: the run is one object, as it is
            kinds = [_kind(part) for part in run if part.tag != w("rPr")]
            self.items.append(("object", run, kinds[0] if len(kinds) == 1 else "img", link))
            return
        for part in run:
            if part.tag == w("t"):
                self.add_text(part.text or "", rpr, link)
            elif part.tag == w("noBreakHyphen"):
                self.add_text("\u2011", rpr, link)
            elif part.tag not in HINTS and part.tag != w("rPr"):
                self.items.append(("object", (rpr, part), _kind(part), link))

    def wrap(self, source):
        if source.tag != w("sdt"):
            return super().wrap(source)
        control = source.makeelement(source.tag, dict(source.attrib))
        properties = [part for part in source if part.tag != w("sdtContent")]
        # Moved the first time, so that what reads them (a list's items) writes into the document; copied after.
        if source in self.wrapped:
            properties = [copy.deepcopy(part) for part in properties]
        control.extend(properties)
        self.wrapped.add(source)
        content = control.makeelement(w("sdtContent"), {})
        control.append(content)
        return control, content

    def run(self, text: str, rpr):
        run = self.element.makeelement(w("r"), {})
        if rpr is not None:
            run.append(copy.deepcopy(rpr))
        t = run.makeelement(w("t"), {})
        t.text = text
        if text != text.strip():
            t.set(XML_SPACE, "preserve")
        run.append(t)
        return run

    def run_of(self, rpr, part):
        run = part.makeelement(w("r"), {})
        if rpr is not None:
            run.append(copy.deepcopy(rpr))
        run.append(part)
        return run

    @staticmethod
    def relabel(tree, locale: str) -> None:
        for lang in tree.iter(w("lang")):
            if other_language(lang.get(w("val")), locale):
                lang.set(w("val"), locale)


class FieldResults(PlainTexts):
    """The results of a paragraph's cross-references and hyperlink fields (REF, STYLEREF, HYPERLINK),
    which WordParagraph keeps whole: each translated as a sentence of its own, into its first w:t
    (Word writes a new result there when it updates the field)."""

    TAGS = (w("p"),)

    def __init__(self, element):
        results = field_results(element)
        self.results = results if results and not has_tracked_changes(element) else []    # kept as WordParagraph keeps it
        super().__init__(element, ["".join(t.text or "" for t in result) for result in self.results])

    def write(self, translations: list[str]) -> None:
        for result, text in zip(self.results, translations):
            for t, part in zip(result, [text] + [""] * (len(result) - 1)):
                t.text = part
                if part != part.strip():
                    t.set(XML_SPACE, "preserve")


def has_tracked_changes(paragraph) -> bool:
    return any(child.tag in TRACKED for child in paragraph.iter())


def field_results(paragraph) -> list[list]:
    """The w:t elements of each worded field's result in `paragraph`: a simple field (w:fldSimple), or
    a complex one begun and ended there with no field inside it."""
    results, depth, code, result, nested = [], 0, [], None, False
    for element in paragraph.iter(w("fldChar"), w("instrText"), w("t"), w("fldSimple")):
        kind = element.get(w("fldCharType"))
        if element.tag == w("fldSimple"):
            nested = nested or depth > 0
            if depth == 0 and _keyword(element.get(w("instr"), "")) in WORDED_FIELDS:
                results.append(list(element.iter(w("t"))))
        elif kind == "begin":
            depth += 1
            if depth == 1:
                code, result, nested = [], None, False
            else:
                nested = True
        elif kind == "separate" and depth == 1:
            result = []
        elif kind == "end" and depth > 0:
            depth -= 1
            if depth == 0 and result and not nested and _keyword("".join(code)) in WORDED_FIELDS:
                results.append(result)
        elif element.tag == w("instrText") and depth == 1 and result is None:
            code.append(element.text or "")
        elif element.tag == w("t") and depth == 1 and result is not None:
            result.append(element)
    return [result for result in results if any((t.text or "").strip() for t in result)]


def _keyword(code: str) -> str:
    return code.split()[0].upper() if code.split() else ""


class ListItem(AttributeText):
    """An item of a form's drop-down list or combo box, as the list shows it (its value stays)."""

    TAGS, ATTRIBUTE = (w("listItem"),), w("displayText")


def _wrapped(element) -> list | None:
    """The children of a hyperlink, or of a content control (a form's field, w:sdt), that hold its runs;
    None for other elements, and for a control whose text is not to be translated: one bound to the
    document's data (Word writes the data back over it) or a check box."""
    if element.tag == w("hyperlink"):
        return list(element)
    if element.tag == w("sdt"):
        properties = element.find(w("sdtPr"))
        if properties is None or all(part.tag not in FIXED_CONTROLS for part in properties):
            return list(element.iterfind(w("sdtContent") + "/*"))
    return None


def _kind(part) -> str:
    if part.tag == w("tab"):
        return "tab"
    if part.tag == w("cr") or (part.tag == w("br") and part.get(w("type"), "textWrapping") == "textWrapping"):
        return "br"
    return "img"


MAIN = frozenset({WORDML + "document.main+xml", WORDML + "template.main+xml", MACROS + "document.macroEnabled.main+xml",
                  MACROS + "template.macroEnabledTemplate.main+xml"})
DOCX = Format(
    name="a Word document", suffix=".docx", old="Word .doc", main=MAIN,
    parts={**dict.fromkeys(MAIN | {WORDML + kind + "+xml" for kind in ("header", "footer", "footnotes", "endnotes",
                                                                         "comments")},
                           (WordParagraph, FieldResults, ListItem, PictureDescription)),
           **DRAWINGS},
    styles={WORDML + "styles+xml": WordParagraph})


def translate_docx(translator, document: bytes, to=None, options=None, **settings) -> bytes:
    """`document`, a .docx file's bytes, with its text translated into `to` and all else kept."""
    return translate_package(DOCX, translator, document, to, options, **settings)
