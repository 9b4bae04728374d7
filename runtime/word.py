"""Word documents in, Word documents out (`mt-translate --docx`, `Translator.translate_docx`).

A .docx is a zip of XML parts. The paragraphs of the body, tables, text boxes, headers, footers,
footnotes, endnotes and comments are translated through markup.py, the path HTML takes: a run whose
formatting differs from the paragraph's most common one travels as a <span>, a hyperlink as a <span>
around its runs, and what is not words (a tab, a picture, a field, a bookmark, a note's number) as an
empty element that goes back after the word it followed. The paragraph's runs are then written anew,
each with the properties of the run its words came from. Every other entry of the zip is copied byte
for byte; a paragraph with tracked changes is kept as it is.
"""

from __future__ import annotations

import copy
import html
import io
import zipfile
from collections import Counter
from html.parser import HTMLParser

from .errors import TranslationError

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
CONTENT_TYPES = "[Content_Types].xml"
WORDML = "application/vnd.openxmlformats-officedocument.wordprocessingml."
MACROS = "application/vnd.ms-word."             # .docm and .dotm
TEXT_PARTS = {WORDML + kind + "+xml" for kind in ("document.main", "template.main", "header", "footer", "footnotes",
                                                  "endnotes", "comments")} | {
    MACROS + "document.macroEnabled.main+xml", MACROS + "template.macroEnabledTemplate.main+xml"}
STYLES = WORDML + "styles+xml"
TRACKED = {f"{{{W}}}{tag}" for tag in ("ins", "del", "moveFrom", "moveTo")}
WRAPPERS = {f"{{{W}}}{tag}" for tag in ("smartTag", "customXml")}    # old markers around words
WORDS = {f"{{{W}}}{tag}" for tag in ("t", "noBreakHyphen")}
HINTS = {f"{{{W}}}{tag}" for tag in ("proofErr", "lastRenderedPageBreak", "softHyphen")}   # Word redoes them
LOCALES = {"cs": "cs-CZ", "de": "de-DE", "en": "en-US", "fr": "fr-FR"}    # w:lang wants a region
SHORT = 3                # words: a paragraph of at most this many is taken to be in the document's language
DETECTED_CHARACTERS = 10_000    # of the document's text, read to tell its language
ZIP = b"PK\x03\x04"
OLE = b"\xd0\xcf\x11\xe0"           # a .doc, or a .docx with a password (both inside an OLE container)


def w(tag: str) -> str:
    return f"{{{W}}}{tag}"


def translate_docx(translator, document: bytes, to=None, options=None, *, from_lang: str = "auto", glossary=None,
                   **overrides) -> bytes:
    """`document`, a .docx file's bytes, with its text translated into `to` and all else kept."""
    from . import markup

    entries, types = read_package(document)
    trees = {name: parse_part(name, data) for name, data in entries.items() if types.get(name) in TEXT_PARTS}
    if not any(types.get(name, "").endswith(".main+xml") for name in trees):
        raise TranslationError("not a Word document: it has no main document part")
    paragraphs = [Paragraph(p) for tree in trees.values() for p in tree.iter(w("p"))]
    wanted = [p for p in paragraphs if p.has_words]
    language = (to or translator.default_language).lower()
    groups = {from_lang: wanted}
    if from_lang == "auto" and (main := document_language(translator, [p.text for p in wanted], language)):
        groups = {main: [p for p in wanted if len(p.text.split()) <= SHORT],
                  "auto": [p for p in wanted if len(p.text.split()) > SHORT]}
    locale = LOCALES.get(language, language)
    for source, group in groups.items():
        done = markup.translate_fragments(translator, [p.fragment() for p in group], to, options, from_lang=source,
                                          glossary=glossary, **overrides)
        for paragraph, translation in zip(group, done):
            paragraph.rewrite(translation, locale)
    if tracked := sum(p.tracked for p in paragraphs):
        import warnings
        warnings.warn(f"{tracked} paragraph{'s' * (tracked > 1)} with tracked changes kept as written: accept or "
                      f"reject the changes to have {'them' if tracked > 1 else 'it'} translated", stacklevel=4)
    changed = {name: serialize(tree) for name, tree in trees.items()}
    for name, data in entries.items():
        if types.get(name) == STYLES:
            styles = parse_part(name, data)
            relabel(styles.iter(w("lang")), locale)
            changed[name] = serialize(styles)
    return write_package(document, changed)


def document_language(translator, texts: list[str], to: str) -> str | None:
    """The language the document is written in, if one the model translates into `to` from: a short
    paragraph (a heading, a table cell, a header's one word) is taken to be in it, as detecting a word
    or two alone is a guess. None if the document reads as `to` already, or no language is clear."""
    whole = " ".join(texts)[:DETECTED_CHARACTERS]
    found = translator.source_language(whole, to) if whole.strip() else None
    return found.language if found and found.translated and not found.warning else None


def read_package(document: bytes) -> tuple[dict[str, bytes], dict[str, str]]:
    """The zip's entries by name, and each part's content type."""
    if document.startswith(OLE):
        raise TranslationError("not a .docx: an old Word .doc, or a document with a password; save it as .docx "
                               "without one")
    try:
        with zipfile.ZipFile(io.BytesIO(document)) as package:
            entries = {info.filename: package.read(info) for info in package.infolist() if not info.is_dir()}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, NotImplementedError,
            RuntimeError) as e:            # RuntimeError: an entry with a password
        raise TranslationError(f"not a .docx (a Word document is a zip file): {e}") from None
    if CONTENT_TYPES not in entries:
        raise TranslationError(f"not a Word document: the zip has no {CONTENT_TYPES}")
    listing = parse_part(CONTENT_TYPES, entries[CONTENT_TYPES])
    defaults = {e.get("Extension", "").lower(): e.get("ContentType") for e in listing if e.tag.endswith("Default")}
    overrides = {e.get("PartName", "").lstrip("/"): e.get("ContentType") for e in listing if e.tag.endswith("Override")}
    types = {name: overrides.get(name) or defaults.get(name.rpartition(".")[2].lower(), "") for name in entries}
    return entries, types


def parse_part(name: str, data: bytes):
    from lxml import etree

    try:
        return etree.fromstring(data, etree.XMLParser(resolve_entities=False, huge_tree=True))
    except etree.XMLSyntaxError as e:
        raise TranslationError(f"the document is damaged: {name}: {e}") from None


def serialize(tree) -> bytes:
    from lxml import etree
    return etree.tostring(tree, xml_declaration=True, encoding="UTF-8", standalone=True)


def write_package(document: bytes, changed: dict[str, bytes]) -> bytes:
    """The zip again, entry by entry in its order, with the parts in `changed` replaced."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(document)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = changed.get(info.filename)
            target.writestr(info, source.read(info) if data is None else data, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def relabel(langs, locale: str) -> None:
    """Spell-checking languages (w:lang's w:val) set to the translation's, where they name another."""
    for lang in langs:
        value = lang.get(w("val"))
        if value and value.split("-")[0].lower() != locale.split("-")[0]:
            lang.set(w("val"), locale)


class Paragraph:
    """One w:p: its words as an HTML fragment for markup.py, and its runs rewritten from the translation.

    `items` holds, in order, ("text", text, properties key, link) and ("object", element, kind, link):
    an object is an element moved as it is (a run holding a picture or a tab, a bookmark, a whole field
    from its begin to its end), kind "br" for a line break, which ends a sentence, else "img"."""

    def __init__(self, element):
        self.element = element
        self.items: list[tuple] = []
        self.properties: dict[str, object] = {}        # key -> a w:rPr (or None)
        self.links: list = []
        self.tracked = any(child.tag in TRACKED for child in element.iter())
        self._field: list | None = None                 # the runs of an open complex field
        self._depth = 0
        if not self.tracked:
            for child in element:
                self._read(child, None)
        self.text = "".join(text for kind, text, *_ in self.items if kind == "text")
        self.has_words = bool(self.text.strip())

    def _read(self, child, link) -> None:
        if child.tag == w("pPr") or child.tag in HINTS:
            return
        if self._field is not None or (child.tag == w("r") and child.find(w("fldChar")) is not None):
            self._read_field(child, link)
        elif child.tag == w("r"):
            self._read_run(child, link)
        elif child.tag == w("hyperlink"):
            self.links.append(child)
            for grandchild in child:
                self._read(grandchild, len(self.links) - 1)
        elif child.tag in WRAPPERS:                 # their words read as the paragraph's; the wrapper goes
            for grandchild in child:
                if not grandchild.tag.endswith("Pr"):
                    self._read(grandchild, link)
        else:
            self.items.append(("object", child, "img", None))

    def _read_field(self, child, link) -> None:
        """A complex field (a page number, a cross-reference) from its begin to its end, kept as one object."""
        if self._field is None:
            self._field = []
            self.items.append(("object", self._field, "img", link))
        self._field.append(child)
        for mark in child.iter(w("fldChar")):
            self._depth += {"begin": 1, "end": -1}.get(mark.get(w("fldCharType")), 0)
        if self._depth <= 0:
            self._field, self._depth = None, 0

    def _read_run(self, run, link) -> None:
        rpr = run.find(w("rPr"))
        if all(part.tag not in WORDS for part in run):          # no words: the run is one object, as it is
            self.items.append(("object", run, _kind(run), link))
            return
        key = _key(rpr)
        self.properties.setdefault(key, rpr)
        for part in run:
            if part.tag == w("t"):
                self._text(part.text or "", key, link)
            elif part.tag == w("noBreakHyphen"):
                self._text("\u2011", key, link)
            elif part.tag in HINTS or part.tag == w("rPr"):
                continue
            else:                   # a tab, a break, a picture, a note's number: a run of its own once rewritten
                self.items.append(("object", (rpr, part), _kind(part), link))

    def _text(self, text: str, key: str, link) -> None:
        if self.items and self.items[-1][0] == "text" and self.items[-1][2:] == (key, link):
            text = self.items.pop()[1] + text
        self.items.append(("text", text, key, link))

    def fragment(self) -> str:
        """The paragraph as HTML: the most common formatting bare, others as <span class="sN">, links as
        <span class="hN">, objects as <img class="oN"> or <br class="oN">."""
        counts = Counter()
        for kind, text, key, _ in self.items:
            if kind == "text":
                counts[key] += len(text.strip())
        self.base = counts.most_common(1)[0][0]
        keys = list(self.properties)
        out, open_link = [], None
        for number, (kind, value, detail, link) in enumerate(self.items):
            if link != open_link:
                out.append(("</span>" if open_link is not None else "") +
                           (f'<span class="h{link}">' if link is not None else ""))
                open_link = link
            if kind == "object":
                spacer = " " if _is_tab(value) else ""     # a tab separates words, as a space does
                out.append(f'{spacer}<{detail} class="o{number}">{spacer}')
            elif detail == self.base:
                out.append(html.escape(value, quote=False))
            else:
                out.append(f'<span class="s{keys.index(detail)}">{html.escape(value, quote=False)}</span>')
        out.append("</span>" if open_link is not None else "")
        return "".join(out)

    def rewrite(self, translation: str, locale: str) -> None:
        """The paragraph's content replaced by runs built from `translation` (what `fragment` became)."""
        reader = _Reader(len(self.items))
        reader.feed(translation)
        reader.close()
        lost = [number for number, item in enumerate(self.items) if item[0] == "object" and number not in reader.seen]
        pieces = reader.pieces + [(None, number, None) for number in lost]      # nothing is left out
        keys = list(self.properties)
        for child in list(self.element):
            if child.tag != w("pPr"):
                self.element.remove(child)
        relabel(self.element.iterfind(f"{w('pPr')}/{w('rPr')}/{w('lang')}"), locale)
        holder, holder_link = self.element, None
        spaced = False              # what is written so far ends in a space, a tab or a line break
        for index, (text, number, link) in enumerate(pieces):
            if text is None:                            # an object, back where it landed
                _, value, _, link = self.items[number]
            if link != holder_link:
                holder, holder_link = self.element, link
                if link is not None:
                    source = self.links[link]
                    holder = source.makeelement(source.tag, dict(source.attrib))
                    self.element.append(holder)
            if text is None:
                for element in _elements(value):
                    holder.append(element)
                spaced = spaced or _is_tab_or_break(self.items[number])
                continue
            following = pieces[index + 1] if index + 1 < len(pieces) else (None, None, None)
            text = text.lstrip() if spaced else text           # one space between words, whatever lies between
            if following[0] is None and following[1] is not None and _is_tab_or_break(self.items[following[1]]):
                text = text.rstrip()
            if text:
                holder.append(self._run(text, keys[number] if number is not None else self.base, locale))
                spaced = text[-1].isspace()

    def _run(self, text: str, key: str, locale: str):
        run = self.element.makeelement(w("r"), {})
        rpr = self.properties.get(key)
        if rpr is not None:
            rpr = copy.deepcopy(rpr)
            relabel(rpr.iter(w("lang")), locale)
            run.append(rpr)
        t = run.makeelement(w("t"), {})
        t.text = text
        if text != text.strip():
            t.set(XML_SPACE, "preserve")
        run.append(t)
        return run


def _key(rpr) -> str:
    from lxml import etree
    return "" if rpr is None else etree.tostring(rpr, encoding="unicode")


def _kind(element) -> str:
    """"br" for a line break (in a run, or a run of one), which ends a sentence; else "img"."""
    breaks = [part for part in ([element] if element.tag != w("r") else element) if part.tag in (w("br"), w("cr"))]
    return "br" if any(b.get(w("type"), "textWrapping") == "textWrapping" for b in breaks) else "img"


def _elements(value) -> list:
    """What an object puts back: a run moved as it was, a field's runs, or a part of a run in a run of its own
    (made now, so that reading a paragraph changes nothing)."""
    if isinstance(value, list):
        return value
    if not isinstance(value, tuple):
        return [value]
    rpr, part = value
    run = part.makeelement(w("r"), {})
    if rpr is not None:
        run.append(copy.deepcopy(rpr))
    run.append(part)
    return [run]


def _is_tab(value) -> bool:
    parts = [value[1]] if isinstance(value, tuple) else [] if isinstance(value, list) else list(value)
    return any(part.tag == w("tab") for part in parts)


def _is_tab_or_break(item: tuple) -> bool:
    return item[0] == "object" and (item[2] == "br" or _is_tab(item[1]))


class _Reader(HTMLParser):
    """markup.py's output read back: (text, properties number, link) for words, (None, object number,
    None) for an object, in order."""

    def __init__(self, objects: int):
        super().__init__(convert_charrefs=True)
        self.pieces: list[tuple] = []
        self.seen: set[int] = set()
        self.stack: list[tuple[str, int] | None] = []
        self.objects = objects

    def handle_starttag(self, tag, attrs):
        name = dict(attrs).get("class") or ""
        kind, number = name[:1], int(name[1:]) if name[1:].isdigit() else -1
        if tag in ("img", "br"):
            if kind == "o" and 0 <= number < self.objects and number not in self.seen:
                self.seen.add(number)
                self.pieces.append((None, number, None))
        elif tag == "span":
            self.stack.append((kind, number) if kind in "sh" else None)

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag):
        if tag == "span" and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        style = next((n for entry in reversed(self.stack) if entry and entry[0] == "s" for n in [entry[1]]), None)
        link = next((n for entry in reversed(self.stack) if entry and entry[0] == "h" for n in [entry[1]]), None)
        self.pieces.append((data, style, link))
