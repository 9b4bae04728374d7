"""Markdown in, Markdown out (`mt-translate --markdown`, `Translator.translate_markdown`): the text of
headings, paragraphs, list items, quotes and table cells translated; code blocks, front matter, HTML
blocks, link targets and the document's layout kept.

markdown-it-py (CommonMark, as rich uses it) finds the inline text of each block and the source
lines it came from. That text goes through the HTML path (runtime/markup.py) with its emphasis and
links as inline elements, so they land around the words they covered, and its code spans and images
as spans the model never sees; then it is written back as Markdown in place of the block's text.
A paragraph written over several lines is wrapped again at the width of its widest line, each new
line with the prefix its second line had ("> " in a quote, the indent of a list item).
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

from .markup import VOID, translate_fragments

PAIRS = {"strong": "b", "em": "i", "s": "s"}         # Markdown emphasis -> the inline element it travels as
ESCAPE = re.compile(r"([\\`*_\[\]<>])")
ESCAPE_IN_TABLE = re.compile(r"([\\`*_\[\]<>|])")
# A word that would start a block (or end a paragraph) if a line began with it: a heading, a list item,
# a quote, a setext underline, a thematic break, a fence, an HTML block, a table row. Wrapping never
# puts one first on a line.
# Inline HTML that would make a parser take all that follows as its content (until its end tag, or
# "-->"): it travels whole, as written, as other syntax does.
RAW_TEXT_HTML = re.compile(r"</?(?:script|style|textarea|title)\b|<!", re.IGNORECASE)
FRONT_MATTER = {"---": ("---", "..."), "+++": ("+++",)}     # a front matter's first line -> its last's
BLOCK_START = re.compile(r"#{1,6}|[-+*]|\d{1,9}[.)]|[=_*-]+|[>`~<|].*")


def translate_markdown(translator, document: str, to=None, options=None, *, from_lang: str = "auto",
                       glossary=None, **overrides) -> str:
    """`document` (Markdown) with its text translated and its syntax, code and layout kept."""
    from markdown_it import MarkdownIt

    lines = document.splitlines(keepends=True)
    skip = _front_matter(lines)
    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse("".join(lines[skip:]))
    units, in_table = [], False
    for token in tokens:
        in_table = token.type in ("th_open", "td_open") or (in_table and token.type == "inline")
        if token.type == "inline" and token.map and token.content.strip():
            units.append(_Unit(token, skip, in_table))
    translated = translate_fragments(translator, [u.html for u in units], to, options, from_lang=from_lang,
                                     glossary=glossary, **overrides)
    for unit, body in zip(units, translated):
        unit.translation = unit.markdown(body)
    done: dict[int, int] = {}                           # line -> where to look for the next table cell
    for unit in units:
        unit.write_into(lines, done)
    return "".join(lines)


def _front_matter(lines: list[str]) -> int:
    """How many lines a leading front matter takes, 0 if there is none: YAML's (--- ... ---) or TOML's
    (+++ ... +++, Hugo's and Zola's, which Markdown would read as a paragraph)."""
    ends = FRONT_MATTER.get(lines[0].strip()) if lines else None
    for i, line in enumerate(lines[1:] if ends else [], start=1):
        if line.strip() in ends:
            return i + 1
    return 0


class _Unit:
    """One block's inline text: its source, its HTML for translation, and its Markdown translation."""

    def __init__(self, token, offset: int, in_table: bool):
        self.source = token.content
        self.first = token.map[0] + offset
        self.count = len(token.content.split("\n"))
        self.in_table = in_table
        self.markers: list[tuple[str, str]] = []        # per marker: (what opens it, what closes it), or whole
        self.translation: str | None = None
        self.html = self._to_html(token.children or [])

    def _marker(self, opening: str, closing: str = "") -> int:
        self.markers.append((opening, closing))
        return len(self.markers) - 1

    def _to_html(self, children) -> str:
        out, skipping = [], False
        for c in children:
            kind = c.type
            if skipping:
                skipping = kind != "link_close"
            elif kind == "text":
                out.append(html.escape(c.content, quote=False))
            elif kind == "softbreak":
                out.append(" ")
            elif kind == "hardbreak":
                out.append(f'<wbr data-m="{self._marker("<br>")}">')
            elif kind == "code_inline":
                pad = " " if c.content.startswith("`") or c.content.endswith("`") else ""
                out.append(f'<code data-m="{self._marker(c.markup + pad + c.content + pad + c.markup)}"></code>')
            elif kind == "image":                   # its alt text and title are translated as an <img>'s are
                out.append(f'<img alt="{html.escape(_plain(c.children or []))}"{_title_attribute(c)} '
                           f'data-m="{self._marker("![", c.attrs["src"])}">')
            elif kind == "link_open" and c.markup in ("autolink", "linkify"):
                out.append(f'<code data-m="{self._marker(self._raw_link(children, c))}"></code>')
                skipping = True
            elif kind == "link_open":               # its title is translated as an <a title> is
                out.append(f'<a{_title_attribute(c)} data-m="{self._marker("[", c.attrs["href"])}">')
            elif kind == "link_close":
                out.append("</a>")
            elif kind.endswith("_open") and kind[:-5] in PAIRS:
                out.append(f'<{PAIRS[kind[:-5]]} data-m="{self._marker(c.markup, c.markup)}">')
            elif kind.endswith("_close") and kind[:-6] in PAIRS:
                out.append(f"</{PAIRS[kind[:-6]]}>")
            elif kind == "html_inline" and not RAW_TEXT_HTML.match(c.content):
                out.append(c.content)
            else:                                   # anything else travels whole, as written
                out.append(f'<code data-m="{self._marker(c.content or c.markup)}"></code>')
        return "".join(out)

    def _raw_link(self, children, opening) -> str:
        """An autolink as written: "<https://...>" (or bare, as linkify finds them)."""
        text = []
        for c in children[children.index(opening) + 1:]:
            if c.type == "link_close":
                break
            text.append(c.content)
        url = "".join(text)
        return f"<{url}>" if f"<{url}>" in self.source else url

    def markdown(self, translated_html: str) -> str:
        """The translated HTML of this unit as Markdown: its markers back as they were written."""
        writer = _MarkdownWriter(self.markers, ESCAPE_IN_TABLE if self.in_table else ESCAPE)
        writer.feed(translated_html)
        writer.close()
        return "".join([*writer.out, writer.rawdata]).strip()     # rawdata: what the parser kept back

    def write_into(self, lines: list[str], cells: dict[int, int]) -> None:
        """Put the translation in place of the source text in `lines` (nothing, where the text cannot be
        found as written: the block stays as it was)."""
        if not self.translation:
            return
        parts = self.source.split("\n")
        line = lines[self.first]
        start = line.find(parts[0], cells.get(self.first, 0) if self.in_table else 0)
        if start < 0 or self.first + self.count > len(lines):
            return
        end = start + len(parts[0])
        if self.count == 1:
            lines[self.first] = line[:start] + self.translation + line[end:]
            cells[self.first] = start + len(self.translation)
            return
        following = lines[self.first + 1]
        prefix = following[:max(following.find(parts[1]), 0)]      # "> ", an item's indent, or none
        width = max(len(lines[i].rstrip("\r\n")) for i in range(self.first, self.first + self.count))
        wrapped = wrap(self.translation, width - start, width - len(prefix))
        eol = line[len(line.rstrip("\r\n")):]
        lines[self.first] = line[:start] + wrapped[0] + eol + "".join(prefix + w + eol for w in wrapped[1:])
        for i in range(self.first + 1, self.first + self.count):
            lines[i] = ""                           # the paragraph's other lines: now in the first's place


def wrap(text: str, first: int, width: int) -> list[str]:
    """`text` in lines of at most `first` characters, then `width` (a longer word has a line of its own),
    broken at spaces but never before a word that would start a Markdown block there."""
    lines, line = [], ""
    for word in text.split(" "):
        limit = width if lines else first
        if line and len(line) + 1 + len(word) > limit and not BLOCK_START.fullmatch(word):
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line]


def _plain(children) -> str:
    """Inline tokens as the plain text an HTML renderer gives an image's alt ("Bild *1*" -> "Bild 1")."""
    return "".join(" " if c.type in ("softbreak", "hardbreak") else c.content for c in children
                   if c.type in ("text", "code_inline", "softbreak", "hardbreak"))


def _title_attribute(token) -> str:
    """A link's or image's title as an HTML attribute, for translation: ' title="..."', or nothing."""
    return f' title="{html.escape(token.attrs["title"])}"' if token.attrs.get("title") else ""


def _target(url: str, title: str | None) -> str:
    """What closes a link or an image: '](url "Title")'."""
    return f"]({url}" + (' "{}"'.format(title.replace('"', '\\"')) if title else "") + ")"


class _MarkdownWriter(HTMLParser):
    """A unit's translated HTML back to Markdown: its markers as they were written, the document's own
    inline HTML as it is, the text escaped."""

    def __init__(self, markers: list[tuple[str, str]], escape: re.Pattern):
        super().__init__(convert_charrefs=True)
        self.markers, self.escape, self.out = markers, escape, []
        self.open: list[tuple[str, str]] = []           # (tag, what closes it)
        self.skip = 0                                   # inside a code span's placeholder element

    def handle_starttag(self, tag, attrs, empty: bool = False):
        if self.skip:
            self.skip += tag == "code" and not empty
            return
        attrs = dict(attrs)
        marker = attrs.get("data-m")
        if marker is not None and tag == "img":         # ![translated alt](src "translated title")
            opening, src = self.markers[int(marker)]
            self.out.append(opening + self.escape.sub(r"\\\1", attrs.get("alt") or "") + _target(src, attrs.get("title")))
            return
        self.out.append(self.get_starttag_text() if marker is None else self.markers[int(marker)][0])
        if empty or tag in VOID:                        # <br/>: nothing to close
            return
        if marker is not None and tag == "code":        # the span itself is in its marker
            self.skip = 1
        elif marker is not None and tag == "a":         # [text](href "translated title")
            self.open.append((tag, _target(self.markers[int(marker)][1], attrs.get("title"))))
        else:
            self.open.append((tag, f"</{tag}>" if marker is None else self.markers[int(marker)][1]))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs, empty=True)

    def handle_endtag(self, tag):
        if self.skip:
            self.skip -= tag == "code"
            return
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i][0] == tag:
                self.out.append(self.open.pop(i)[1])
                return
        self.out.append(f"</{tag}>")

    def handle_data(self, data):
        if not self.skip:
            self.out.append(self.escape.sub(r"\\\1", data))
