"""Office documents in, Office documents out: what Word's .docx (word.py), PowerPoint's .pptx
(slides.py), Excel's .xlsx (sheets.py) and OpenDocument's files (opendocument.py) share.

All are zips of XML parts, with their text in paragraphs of runs. Each paragraph is translated
through markup.py, the path HTML takes: a run whose formatting differs from the paragraph's most
common one travels as a <span>, a hyperlink as a <span> around its runs, and what is not words (a
tab, a picture, a field, a bookmark, a note's number) as an empty element that goes back after the
word it followed. The paragraph's runs are then written anew, each with the properties of the run
its words came from. Every entry of the zip that holds no text is copied byte for byte.
"""

from __future__ import annotations

import html
import io
import itertools
import re
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser

from .errors import DocumentError, TranslationError

CONTENT_TYPES = "[Content_Types].xml"
EMBEDDED_WORKBOOK = re.compile(r"(^|/)embeddings/[^/]+\.xlsx$", re.IGNORECASE)
ZIP = b"PK\x03\x04"
OLE = b"\xd0\xcf\x11\xe0"           # a .doc or .ppt, or an Office file with a password (both OLE containers)
SHORT = 3                # words: a paragraph of at most this many is taken to be in the document's language
DETECTED_CHARACTERS = 10_000    # of the document's text, read to tell its language
MAX_UNZIPPED = 1_000_000_000   # bytes a document's zip may unpack to (the size its entries declare, as read)
LOCALES = {"cs": "cs-CZ", "de": "de-DE", "en": "en-US", "fr": "fr-FR"}    # Office's language marks want a region


@dataclass(frozen=True)
class Format:
    """One kind of Office file: what it is called, where its text is and how its paragraphs read."""
    name: str                   # "a Word document"
    suffix: str                 # ".docx"
    old: str                    # its binary predecessor: ".doc"
    main: frozenset             # content types of the main part, one of which it has
    parts: dict                 # content type of a part whose text is translated -> the Paragraph classes reading it
    styles: dict = field(default_factory=dict)   # content type of a part whose language marks follow -> its class
    follow: object = None       # (entries, types, trees, paragraphs) -> the names of other parts it made follow
                                # the translation (an Excel table's column names), or None


def translate_package(fmt: Format, translator, document: bytes, to=None, options=None, *, from_lang: str = "auto",
                      glossary=None, **overrides) -> bytes:
    """`document`, an Office file's bytes, with its paragraphs translated into `to` and all else kept."""
    entries, types = read_package(fmt, document)
    if not fmt.main & set(types.values()):
        raise DocumentError(f"not {fmt.name}: it has no main part")
    trees = {name: parse_part(name, data) for name, data in entries.items() if types.get(name) in fmt.parts}
    found = [(name, reader(p)) for name, tree in trees.items()
             for reader in fmt.parts[types[name]] for p in tree.iter(*reader.TAGS)]
    touched = {name for name, p in found if p.has_words}       # parts without words stay byte for byte
    locale = translate_paragraphs(translator, [p for _, p in found], to, options, from_lang, glossary, overrides)
    if fmt.follow:
        touched |= fmt.follow(entries, types, trees, [p for _, p in found])
    for name, data in entries.items():
        if types.get(name) in fmt.styles:
            if name not in trees:
                trees[name] = parse_part(name, data)
            fmt.styles[types[name]].relabel(trees[name], locale)
            touched.add(name)
    changed = {name: serialize(trees[name]) for name in touched}
    changed.update(translate_workbooks(translator, entries, to, options, from_lang, glossary, overrides))
    return write_package(document, changed)


def translate_workbooks(translator, entries: dict[str, bytes], to, options, from_lang: str, glossary,
                        overrides: dict) -> dict[str, bytes]:
    """The workbooks embedded in a document (a chart's data, which Word and PowerPoint show and write
    back into the chart when its data is edited), translated; one that cannot be read stays as it is."""
    from .sheets import translate_xlsx

    translated = {}
    for name, data in entries.items():
        if EMBEDDED_WORKBOOK.search(name):
            try:
                translated[name] = translate_xlsx(translator, data, to, options, from_lang=from_lang,
                                                  glossary=glossary, **overrides)
            except TranslationError:
                pass
    return translated


def translate_paragraphs(translator, paragraphs: list, to, options, from_lang: str, glossary, overrides: dict) -> str:
    """Each Paragraph with words translated and rewritten; the target's locale ("en-US"), for the
    language marks. A short paragraph is taken to be in the document's language (document_language)."""
    from . import markup

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
                      f"reject the changes to have {'them' if tracked > 1 else 'it'} translated", stacklevel=5)
    return locale


def document_language(translator, texts: list[str], to: str) -> str | None:
    """The language the document is written in, if one the model translates into `to` from: a short
    paragraph (a heading, a table cell, a header's one word) is taken to be in it, as detecting a word
    or two alone is a guess. None if the document reads as `to` already, or no language is clear."""
    whole = " ".join(texts)[:DETECTED_CHARACTERS]
    found = translator.source_language(whole, to) if whole.strip() else None
    return found.language if found and found.translated and not found.warning else None


def read_package(fmt: Format, document: bytes) -> tuple[dict[str, bytes], dict[str, str]]:
    """The zip's entries by name, and each part's content type."""
    if document.startswith(OLE):
        raise DocumentError(f"not a {fmt.suffix}: an old {fmt.old}, or a file with a password; save it as "
                               f"{fmt.suffix} without one")
    entries = unzip(document, f"not a {fmt.suffix} ({fmt.name} is a zip file)")
    if CONTENT_TYPES not in entries:
        raise DocumentError(f"not {fmt.name}: the zip has no {CONTENT_TYPES}")
    listing = parse_part(CONTENT_TYPES, entries[CONTENT_TYPES])
    defaults = {e.get("Extension", "").lower(): e.get("ContentType") for e in listing if e.tag.endswith("Default")}
    overrides = {e.get("PartName", "").lstrip("/"): e.get("ContentType") for e in listing if e.tag.endswith("Override")}
    types = {name: overrides.get(name) or defaults.get(name.rpartition(".")[2].lower(), "") for name in entries}
    return entries, types


def unzip(document: bytes, not_a_zip: str) -> dict[str, bytes]:
    """A zip's entries by name; a TranslationError starting with `not_a_zip` if it is none, and one for
    a zip that unpacks to more than MAX_UNZIPPED bytes (a file of 20 MB can hold gigabytes of zeros)."""
    try:
        with zipfile.ZipFile(io.BytesIO(document)) as package:
            files = [info for info in package.infolist() if not info.is_dir()]
            if (size := sum(info.file_size for info in files)) > MAX_UNZIPPED:
                raise DocumentError(f"its zip unpacks to {size / 1e6:,.0f} MB, more than the "
                                       f"{MAX_UNZIPPED / 1e6:,.0f} MB a document may hold")
            return {info.filename: read_entry(package, info) for info in files}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, NotImplementedError,
            RuntimeError) as e:            # RuntimeError: an entry with a password
        raise DocumentError(f"{not_a_zip}: {e}") from None


def read_entry(package: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """An entry's bytes, inflated no further than the size it declares: ZipFile.read inflates up to 2 GB
    at a time before it finds that an entry lies about its size. One that lies fails its CRC check."""
    with package.open(info) as entry:
        return entry.read(info.file_size + 1)


def parse_part(name: str, data: bytes):
    from lxml import etree          # keeps the namespace prefixes that mc:Ignorable names, as Office needs

    try:
        return etree.fromstring(data, etree.XMLParser(resolve_entities=False, huge_tree=True))
    except etree.XMLSyntaxError as e:
        raise DocumentError(f"the file is damaged: {name}: {e}") from None


def serialize(tree) -> bytes:
    from lxml import etree
    return etree.tostring(tree, xml_declaration=True, encoding="UTF-8", standalone=True)


def write_package(document: bytes, changed: dict[str, bytes]) -> bytes:
    """The zip again, entry by entry in its order and compression (an EPUB's mimetype is stored), with the
    entries in `changed` replaced."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(document)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = changed.get(info.filename)
            target.writestr(info, read_entry(source, info) if data is None else data)
    return out.getvalue()


def other_language(value: str | None, locale: str) -> bool:
    """Whether a language mark ("de-DE") names another language than `locale`."""
    return bool(value) and value.split("-")[0].lower() != locale.split("-")[0]


class Paragraph:
    """One paragraph: its words as an HTML fragment for markup.py, and its runs rewritten from the
    translation. A subclass reads its format's children into `items` (`read`) and writes a run back
    (`run`); this class does the rest.

    `items` holds, in order, ("text", text, properties key, link) and ("object", value, kind, link).
    An object's value is what goes back: an element moved as it is, a list of them (a field from its
    begin to its end), or (properties, element) for a part of a run that becomes a run of its own.
    Its kind is "br" for a line break, which ends a sentence, "tab", or "img" for the rest."""

    TAGS: tuple[str, ...] = ()          # the paragraph elements this class reads
    FIRST: tuple[str, ...] = ()         # children kept before the runs (paragraph properties)
    LAST: tuple[str, ...] = ()          # and after them (the paragraph mark's properties)
    tracked = False                     # whether the paragraph holds tracked changes (kept as written)

    def __init__(self, element):
        self.element = element
        self.items: list[tuple] = []
        self.properties: dict[str, object] = {}        # key -> the run properties it stands for (or None)
        self.links: list = []                          # elements that wrap runs (a hyperlink, a form's field)
        self.numbers: dict[int, str] = {}              # object -> the number it shows (a page number's field)
        if not self.tracked:
            self.read_content()
        self.text = "".join(text for kind, text, *_ in self.items if kind == "text")
        self.numbers = distinct_numbers({n: shown for n, shown in self.numbers.items() if not self._after_tab(n)},
                                        self.text)
        self.has_words = bool(self.text.strip())
        counts = Counter()
        for kind, text, key, _ in self.items:
            if kind == "text":
                counts[key] += len(text.strip())
        self.base = counts.most_common(1)[0][0] if counts else None    # the formatting most of its words have

    def _after_tab(self, number: int) -> bool:
        """Whether item `number` follows a tab: a table of contents' page number, which is not part of
        the sentence before it (shown as a number, it landed inside a German title's words)."""
        before = [item for item in self.items[:number] if item[0] == "object" or item[1].strip()]
        return bool(before) and before[-1][0] == "object" and before[-1][2] == "tab"

    def read_content(self) -> None:
        """`items` from the paragraph's children (a format with text between them reads it too)."""
        for child in self.element:
            if child.tag not in self.FIRST + self.LAST:
                self.read(child, None)

    def read(self, child, link) -> None:
        raise NotImplementedError

    def key(self, rpr) -> str:
        """The properties `rpr` as a key: runs with equal keys look alike."""
        from lxml import etree
        return "" if rpr is None else etree.tostring(rpr, encoding="unicode")

    def wrap(self, source):
        """A new, empty copy of `source`, an element that wraps runs (a hyperlink), and the element in it
        where the runs go."""
        wrapper = source.makeelement(source.tag, dict(source.attrib))
        return wrapper, wrapper

    def run(self, text: str, rpr):
        """A run of `text` with a copy of the run properties `rpr`."""
        raise NotImplementedError

    def run_of(self, rpr, part):
        """A run of its own for `part`, with a copy of the run properties `rpr`."""
        raise NotImplementedError

    @staticmethod
    def relabel(tree, locale: str) -> None:
        """The language marks in `tree` set to `locale`, where they name another."""

    def add_text(self, text: str, rpr, link) -> None:
        key = self.key(rpr)
        self.properties.setdefault(key, rpr)
        if self.items and self.items[-1][0] == "text" and self.items[-1][2:] == (key, link):
            text = self.items.pop()[1] + text
        self.items.append(("text", text, key, link))

    def add_characters(self, text: str, rpr, link, t_tag: str, controls: dict[str, str]) -> None:
        """`text`, with each character of `controls` ({"\\t": "tab"}) as an object of its own: a `t_tag`
        element of that one character, in a run of its own once written (HTML would read it as a space)."""
        start = 0
        for end, character in enumerate(text):
            if character in controls:
                if text[start:end]:
                    self.add_text(text[start:end], rpr, link)
                control = self.element.makeelement(t_tag, {})
                control.text = character
                self.items.append(("object", (rpr, control), controls[character], link))
                start = end + 1
        if text[start:]:
            self.add_text(text[start:], rpr, link)

    def fragment(self) -> str:
        """The paragraph as HTML: the most common formatting bare, others as <span class="sN">, links as
        <span class="hN">, objects as <img class="oN"> or <br class="oN">, and an object that shows a
        number as <span class="oN">7</span>: "Seite 7 von 9" translates, "Seite von" lost its "of"."""
        keys = list(self.properties)
        out, open_link = [], None
        for number, (kind, value, detail, link) in enumerate(self.items):
            if link != open_link:
                out.append(("</span>" if open_link is not None else "") +
                           (f'<span class="h{link}">' if link is not None else ""))
                open_link = link
            if kind == "object" and number in self.numbers:
                out.append(f'<span class="o{number}">{self.numbers[number]}</span>')
            elif kind == "object":
                tag, spacer = ("br", "") if detail == "br" else ("img", " " if detail == "tab" else "")
                out.append(f'{spacer}<{tag} class="o{number}">{spacer}')      # a tab parts words, as a space
            elif detail == self.base:
                out.append(html.escape(value, quote=False))
            else:
                out.append(f'<span class="s{keys.index(detail)}">{html.escape(value, quote=False)}</span>')
        out.append("</span>" if open_link is not None else "")
        return "".join(out)

    def rewrite(self, translation: str, locale: str) -> None:
        """The paragraph's content replaced by runs built from `translation` (what `fragment` became)."""
        pieces = self.pieces(translation)
        keys = list(self.properties)
        last = [child for child in self.element if child.tag in self.LAST]
        for child in list(self.element):
            if child.tag not in self.FIRST:
                self.element.remove(child)
        self.element.text = None                        # text between children is read: written anew
        holder, holder_link = self.element, None
        spaced = False              # what is written so far ends in a space, a tab or a line break
        for index, (text, number, link) in enumerate(pieces):
            if text is None:                            # an object, back where it landed
                _, value, kind, link = self.items[number]
            if link != holder_link:
                holder, holder_link = self.element, link
                if link is not None:
                    wrapper, holder = self.wrap(self.links[link])
                    self.element.append(wrapper)
            if text is None:
                for element in self._elements(value):
                    element.tail = None                 # the text after it was read, and is written anew
                    holder.append(element)
                spaced = kind in ("br", "tab") or (spaced and number not in self.numbers)   # a number is a word
                continue
            following = pieces[index + 1] if index + 1 < len(pieces) else (None, None, None)
            text = text.lstrip() if spaced else text           # one space between words, whatever lies between
            if following[0] is None and following[1] is not None and self.items[following[1]][2] in ("br", "tab"):
                text = text.rstrip()
            if text:
                holder.append(self.run(text, self.properties[keys[number] if number is not None else self.base]))
                spaced = text[-1].isspace()
        for child in last:
            self.element.append(child)
        self.relabel(self.element, locale)

    def pieces(self, translation: str) -> list[tuple]:
        """`translation` read back (translated_pieces), with every object the translation lost put after
        its words: nothing is left out."""
        pieces = translated_pieces(translation, len(self.items))
        seen = {number for text, number, _ in pieces if text is None}
        return pieces + [(None, number, None) for number, item in enumerate(self.items)
                         if item[0] == "object" and number not in seen]

    def _elements(self, value) -> list:
        """What an object puts back, made now, so that reading a paragraph changes nothing."""
        if isinstance(value, list):
            return value
        if isinstance(value, tuple):
            return [self.run_of(*value)]
        return [value]


def distinct_numbers(numbers: dict[int, str], text: str) -> dict[int, str]:
    """`numbers` with each made a number that neither the text nor another object shows, so that the
    word it becomes in the translation is its own (a field's last result is kept where it is one)."""
    if not numbers:
        return numbers
    taken = set(re.findall(r"\d+", text))
    fresh = (str(n) for n in itertools.count(1) if str(n) not in taken)
    out = {}
    for number, shown in numbers.items():
        out[number] = shown if shown.isdigit() and shown not in taken else next(fresh)
        taken.add(out[number])
    return out


def translated_pieces(translation: str, objects: int) -> list[tuple]:
    """What `Paragraph.fragment` became, read back: (text, properties number, link) for words and
    (None, object number, None) for each of the paragraph's `objects` found, in order."""
    reader = _Reader(objects)
    reader.feed(translation)
    reader.close()
    return reader.pieces


class PlainText(Paragraph):
    """A paragraph of plain text, `source`, whose line breaks stay; its translation in `translated`."""

    def __init__(self, element, source: str):
        self.source, self.translated = source, None
        super().__init__(element)

    def read_content(self) -> None:
        for number, line in enumerate(self.source.split("\n")):
            if number:
                self.items.append(("object", "\n", "br", None))
            if line:
                self.add_text(line, None, None)

    def rewrite(self, translation: str, locale: str) -> None:
        pieces = translated_pieces(translation, len(self.items))
        self.translated = "".join(self.items[number][1] if text is None else text
                                  for text, number, _ in pieces).strip(" ")


class PlainTexts(PlainText):
    """Short texts an element holds apart (a list's items, a paragraph's field results), one sentence
    each. A subclass names the element (TAGS) and writes each translation back (`write`)."""

    def __init__(self, element, sources: list[str]):
        self.sources = sources
        super().__init__(element, "\n".join(sources))

    def rewrite(self, translation: str, locale: str) -> None:
        super().rewrite(translation, locale)
        if len(texts := self.translated.split("\n")) == len(self.sources):
            self.write(texts)

    def write(self, translations: list[str]) -> None:
        raise NotImplementedError


class ElementText(PlainText):
    """The text of one element (a chart's cached label, an earlier PowerPoint's comment). A subclass
    names the elements (TAGS), and may read an element as having none (`read_text`)."""

    def __init__(self, element):
        super().__init__(element, self.read_text(element))

    def read_text(self, element) -> str:
        return element.text or ""

    def rewrite(self, translation: str, locale: str) -> None:
        super().rewrite(translation, locale)
        self.element.text = self.translated


class AttributeText(PlainText):
    """Text an element holds in an attribute (a picture's description, a list's item). A subclass names
    the elements (TAGS) and the attribute (ATTRIBUTE)."""

    ATTRIBUTE = ""

    def __init__(self, element):
        super().__init__(element, self.read_attribute(element))

    def read_attribute(self, element) -> str:
        return element.get(self.ATTRIBUTE) or ""

    def rewrite(self, translation: str, locale: str) -> None:
        super().rewrite(translation, locale)
        self.element.set(self.ATTRIBUTE, self.translated)


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
        if tag in ("img", "br") or (tag == "span" and kind == "o"):         # a span: a number it showed
            if kind == "o" and 0 <= number < self.objects and number not in self.seen:
                self.seen.add(number)
                self.pieces.append((None, number, None))
        if tag == "span":
            self.stack.append((kind, number) if kind in "sho" else None)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag == "span" and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if any(entry and entry[0] == "o" for entry in self.stack):
            return                                  # the number an object showed: the object stands for it
        style = next((entry[1] for entry in reversed(self.stack) if entry and entry[0] == "s"), None)
        link = next((entry[1] for entry in reversed(self.stack) if entry and entry[0] == "h"), None)
        self.pieces.append((data, style, link))
