"""OpenDocument files in, OpenDocument files out (`mt-translate --odf`, `Translator.translate_opendocument`):
LibreOffice's text documents (.odt), presentations (.odp) and spreadsheets (.ods).

The paragraphs and headings (text:p, text:h) of content.xml are translated as office.py says, and in
a text document those of its headers and footers (styles.xml) too. ODF's own rules: text sits
between the elements, not in runs; a text:span's style is the run's formatting, a text:a a link
around its runs; text:s stands for spaces; a tab and a line break are objects; a note, a frame, a
field or a bookmark is an object moved whole, and the paragraphs inside a note or a text box are
translated on their own, as are the words a cross-reference shows (References). The language marks
(fo:language, fo:country) and meta.xml's dc:language follow the translation, and so do a
spreadsheet's formulas that name a cell's text (follow_cells). Every other entry of the zip, the
mimetype first, is copied byte for byte.
"""

from __future__ import annotations

from .errors import DocumentError
from .office import (OLE, Paragraph, PlainTexts, other_language, parse_part, serialize, translate_paragraphs,
                     unzip, write_package)
from .workbook_references import formula

TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
FO = "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
DC = "http://purl.org/dc/elements/1.1/"
TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
KINDS = {f"application/vnd.oasis.opendocument.{kind}{template}" for kind in ("text", "presentation", "spreadsheet")
         for template in ("", "-template")}
FORMULAS = (("table-cell", "formula"), ("content-validation", "condition"))     # elements, attributes
STRING_VALUE = f"{{{OFFICE}}}string-value"      # a formula's cached text result
NUMBERS = {f"{{{TEXT}}}{kind}" for kind in ("page-number", "page-count", "sequence")}   # shown to the model
REFERENCES = tuple(f"{{{TEXT}}}{kind}-ref" for kind in ("bookmark", "reference", "sequence"))
HINTS = {f"{{{TEXT}}}soft-page-break"}          # where the last layout broke a page: redone on opening


def t(tag: str) -> str:
    return f"{{{TEXT}}}{tag}"


class OdfParagraph(Paragraph):
    """A text:p or text:h: text, and the elements between it."""

    TAGS = (t("p"), t("h"))

    def read_content(self) -> None:
        self._walk(self.element, (), None)

    def _walk(self, element, styles: tuple, link) -> None:
        if element.text:
            self.add_text(element.text, styles, link)
        for child in element:
            if child.tag == t("span"):
                self._walk(child, styles + (child.get(t("style-name"), ""),), link)
            elif child.tag == t("a"):
                self.links.append(child)
                self._walk(child, styles, len(self.links) - 1)
            elif child.tag == t("s"):
                self.add_text(" " * int(child.get(t("c"), "1") or 1), styles, link)
            elif child.tag not in HINTS:
                kind = {t("tab"): "tab", t("line-break"): "br"}.get(child.tag, "img")
                if child.tag in NUMBERS:
                    self.numbers[len(self.items)] = child.text or ""
                self.items.append(("object", child, kind, link))     # a note, a frame, a field, a bookmark
            if child.tail:
                self.add_text(child.tail, styles, link)

    def key(self, rpr) -> str:
        return "|".join(rpr)

    def run(self, text: str, rpr):
        """`text` in spans of the styles `rpr` (outermost first; none: a span without a style)."""
        spans = [self.element.makeelement(t("span"), {t("style-name"): style} if style else {})
                 for style in rpr or ("",)]
        for outer, inner in zip(spans, spans[1:]):
            outer.append(inner)
        spans[-1].text = text
        return spans[0]

    @staticmethod
    def relabel(tree, locale: str) -> None:
        language, _, country = locale.partition("-")
        for element in tree.iter():
            if other_language(element.get(f"{{{FO}}}language"), language):
                element.set(f"{{{FO}}}language", language)
                if country and element.get(f"{{{FO}}}country"):
                    element.set(f"{{{FO}}}country", country)


class References(PlainTexts):
    """The words a paragraph's cross-references show (text:bookmark-ref, text:reference-ref,
    text:sequence-ref: a heading's text, "Abbildung 3"), which OdfParagraph moves whole: each
    translated as a sentence of its own, in its element."""

    def __init__(self, element):
        self.references = [r for r in element.iter(*REFERENCES) if len(r) == 0 and (r.text or "").strip()
                           and next(r.iterancestors(t("p"), t("h"))) is element]      # not a note's, inside
        super().__init__(element, [r.text for r in self.references])

    def write(self, translations: list[str]) -> None:
        for reference, text in zip(self.references, translations):
            reference.text = text


def translate_opendocument(translator, document: bytes, to=None, options=None, *, from_lang: str = "auto",
                           glossary=None, **overrides) -> bytes:
    """`document`, an .odt, .odp or .ods file's bytes, with its text translated into `to` and all else kept."""
    if document.startswith(OLE):
        raise DocumentError("not an OpenDocument file: an old binary Office file, or one with a password")
    entries = unzip(document, "not an OpenDocument file (one is a zip file)")
    kind = entries.get("mimetype", b"").decode("ascii", "replace").strip()
    if kind not in KINDS or "content.xml" not in entries:
        raise DocumentError(f"not an OpenDocument text, presentation or spreadsheet (mimetype {kind!r})")
    if b"manifest:encryption-data" in entries.get("META-INF/manifest.xml", b""):
        raise DocumentError("the file has a password: save it without one")
    parts = ["content.xml"] + (["styles.xml"] if "text" in kind and "styles.xml" in entries else [])
    trees = {name: parse_part(name, entries[name]) for name in parts}
    paragraphs = [reader(p) for tree in trees.values() for p in tree.iter(*OdfParagraph.TAGS)
                  for reader in (OdfParagraph, References)]
    locale = translate_paragraphs(translator, paragraphs, to, options, from_lang, glossary, overrides)
    if "spreadsheet" in kind:
        follow_cells(trees["content.xml"], paragraphs)
    for name in ("styles.xml", "content.xml"):
        if name in entries:
            if name not in trees:
                trees[name] = parse_part(name, entries[name])
            OdfParagraph.relabel(trees[name], locale)
    if "meta.xml" in entries:
        trees["meta.xml"] = parse_part("meta.xml", entries["meta.xml"])
        for language in trees["meta.xml"].iter(f"{{{DC}}}language"):
            language.text = locale
    return write_package(document, {name: serialize(tree) for name, tree in trees.items()})


def follow_cells(tree, paragraphs: list) -> None:
    """A spreadsheet's formulas, cached text results, validity lists and filters that name a cell's
    whole text take its translation, as in an Excel workbook (workbook_references.py): the sheet
    computes what it computed before."""
    texts = {}
    for p in paragraphs:
        cell = p.element.getparent()
        if (isinstance(p, OdfParagraph) and p.has_words and cell.tag == f"{{{TABLE}}}table-cell"
                and len(cell.findall(t("p"))) == 1):
            texts.setdefault(p.text.casefold(), OdfParagraph(p.element).text)    # compared without case
    if not texts:
        return
    for element, attribute in ((e, f"{{{TABLE}}}{name}") for tag, name in FORMULAS
                               for e in tree.iter(f"{{{TABLE}}}{tag}")):
        if value := element.get(attribute):
            element.set(attribute, formula(value, texts, {}))
    for cell in tree.iter(f"{{{TABLE}}}table-cell"):
        if cell.get(f"{{{TABLE}}}formula") and (new := texts.get(cell.get(STRING_VALUE, "").casefold())):
            cell.set(STRING_VALUE, new)
    for condition in tree.iter(f"{{{TABLE}}}filter-condition"):
        if (new := texts.get(condition.get(f"{{{TABLE}}}value", "").casefold())) is not None:
            condition.set(f"{{{TABLE}}}value", new)
