"""HTML in, HTML out: a page's text translated, its markup kept (`Translator.translate_html`,
`mt-translate --html`).

The page is cut into blocks at every tag that is not inline (p, li, td, br, title, ...). A block's
text is translated sentence by sentence, and its inline elements (b, a, span, ...) are put back
around the words they covered, carried over by the cross-attention alignment: each output word
takes the elements of the source word it attends to most, as Bergamot does. Content that must not
be translated (script, style, pre, code, kbd, translate="no", class="notranslate") comes through
byte for byte. Inside a sentence, such an element stands for words: it travels as a protected span
(`inline code`, runtime/protect.py), a name the model copies, and goes back where that name lands.
Markup that stands for no words (img, wbr, a tag that does not pair up in its block) stays out of
the model's way: it goes back after the translation of the word it followed. Only sentences whose
words differ in their elements ask for the alignment, which costs about twice the decoding time.
The attributes people read (title, alt, placeholder, aria-label, a button's value) are translated
too, as Firefox's translations do; the rest of a tag stays as written.
"""

from __future__ import annotations

import html
import itertools
import re
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser

import numpy as np

from .sentences import split
from .vocab import EOS_PIECE

# Inline elements: their words belong to the sentence around them. A button is not: it is a control of
# its own, whose label is translated alone (four buttons' words in one "sentence" lost one button).
INLINE = frozenset("a abbr acronym b bdi bdo big cite data del dfn em font i ins label mark q s small span "
                   "strike strong sub sup time tt u".split())
SILENT = frozenset("img input wbr embed svg".split())           # inline, never translated, no words
ATOMS = frozenset("code kbd samp var math".split())               # inline, never translated, words
VERBATIM = frozenset("script style pre textarea template code kbd samp var svg math".split())
VOID = frozenset("area base br col embed hr img input keygen link meta param source track wbr".split())
ATOM_REF = re.compile(r"`(\d+)`")
LITERAL_REF = re.compile(r"(`\d+`)")
PUNCTUATION = re.compile(r"""([(\[{"'„“‚‘«»¿¡]*)(.*?)([)\]}"'“”‘’«».,;:!?…]*)""", re.S)   # around a word
LETTER = re.compile(r"[^\W\d_]")
TEXT_ATTRIBUTES = ("title", "alt", "placeholder", "aria-label")      # and a button's value: what people read


def translate_html(translator, page: str, to=None, options=None, **settings) -> str:
    """`page` (a document or a fragment) with its text translated by `translator` and its markup kept."""
    return translate_fragments(translator, [page], to, options, **settings)[0]


def translate_fragments(translator, fragments: list[str], to=None, options=None, *, from_lang: str = "auto",
                        split_sentences: bool = True, glossary=None, **overrides) -> list[str]:
    """Each HTML fragment translated, all in one call (a Markdown file's blocks, a subtitle file's cues).
    Each is read on its own, so that none runs into the next: an unclosed comment or a <script> in one
    would otherwise take in all that follow."""
    overrides.pop("return_alignment", None)         # asked for where a sentence's markup needs it
    pages = _translate_attributes(translator, [_events(f) for f in fragments], to, options, from_lang, glossary,
                                  overrides)
    pages = [_chunks(events) for events in pages]
    blocks = [_Block(c) for chunks in pages for c in chunks if isinstance(c, list)]
    units = [(block, words) for block in blocks for words in block.units(split_sentences)]
    texts = [" ".join(w.text for w in words) for _, words in units]
    results = {}
    for align in (False, True):
        wanted = [i for i, (text, (_, words)) in enumerate(zip(texts, units))
                  if LETTER.search(ATOM_REF.sub("", text)) and _needs_alignment(words) == align]   # words: not only
        if wanted:                                                                              # markup, numbers
            found = translator.translate([texts[i] for i in wanted], to, options, from_lang=from_lang,
                                         split_sentences=False, glossary=glossary, return_alignment=align,
                                         **overrides)
            results.update(zip(wanted, found))
    for i, (block, words) in enumerate(units):
        block.targets += _carry_over(words, results.get(i))
    for block in blocks:
        block.restore_lost()
    out = iter(blocks)
    language = (to or translator.default_language).lower()
    return ["".join(next(out).render() if isinstance(c, list) else _relabel(c, language) for c in chunks)
            for chunks in pages]


def _relabel(raw: str, language: str) -> str:
    """The page's own language (`<html lang="de">`, and XHTML's `xml:lang`) becomes the one it was
    translated into, and the encoding it declares (a <meta> charset, XHTML's XML declaration) UTF-8, which
    the page is written in: a Latin-1 label over a translation's UTF-8 letters shows them garbled."""
    start = raw[:5].lower()
    if start == "<html":
        return re.sub(r"""(\s(?:xml:)?lang\s*=\s*["']?)[A-Za-z-]+""", lambda m: m.group(1) + language, raw)
    if start in ("<meta", "<?xml"):
        return re.sub(r"""((?:charset|encoding)\s*=\s*["']?)[\w.:-]+""", r"\1UTF-8", raw, flags=re.I)
    return raw


# ----- reading: events, then blocks --------------------------------------------------------------

class _Reader(HTMLParser):
    """Every piece of the page, in order, as (kind, tag, raw text, attributes): nothing is dropped, and
    end tags and references come back as written ("</P>", "&nbsp" without its semicolon)."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=False)
        self.page = page
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", page)]
        self.events: list[tuple[str, str, str, dict]] = []

    def _written(self, pattern: re.Pattern, fallback: str) -> str:
        """The page's own text of the construct being read (HTMLParser passes only its parts)."""
        line, column = self.getpos()
        found = pattern.match(self.page, self.line_starts[line - 1] + column)
        return found.group() if found else fallback

    def handle_starttag(self, tag, attrs):
        self.events.append(("void" if tag in VOID else "start", tag, self.get_starttag_text(), dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.events.append(("void", tag, self.get_starttag_text(), dict(attrs)))

    def handle_endtag(self, tag):
        self.events.append(("end", tag, self._written(END_TAG, f"</{tag}>"), {}))

    def handle_data(self, data):
        self.events.append(("text", "", data, {}))

    def handle_entityref(self, name):
        self.events.append(("text", "", self._written(REFERENCE, f"&{name};"), {}))

    def handle_charref(self, name):
        self.events.append(("text", "", self._written(REFERENCE, f"&#{name};"), {}))

    def handle_comment(self, data):
        self.events.append(("other", "", f"<!--{data}-->", {}))

    def handle_decl(self, decl):
        self.events.append(("other", "", f"<!{decl}>", {}))

    def parse_html_declaration(self, i):
        # A DOCTYPE with an internal subset (XHTML's entity declarations) ends at "]>", not at its first ">":
        # HTMLParser's end would leave "]>" as text, written back as "]&gt;", which no XML parser reads.
        if subset := DOCTYPE_SUBSET.match(self.rawdata, i):
            self.handle_decl(subset.group()[2:-1])
            return subset.end()
        return super().parse_html_declaration(i)

    def handle_pi(self, data):
        self.events.append(("other", "", f"<?{data}>", {}))

    def unknown_decl(self, data):          # "CDATA[x" of <![CDATA[x]]>; "if IE" of <![if IE]>
        close = "]>" if data.lower().startswith(("if", "else", "endif")) else "]]>"
        self.events.append(("other", "", f"<![{data}{close}", {}))


END_TAG = re.compile(r"</[^>]*>")
DOCTYPE_SUBSET = re.compile(r"<!DOCTYPE[^>\[]*\[.*?\]\s*>", re.IGNORECASE | re.DOTALL)
REFERENCE = re.compile(r"&#?[\w]+;?")


def _events(page: str) -> list[tuple[str, str, str, dict]]:
    reader = _Reader(page)
    reader.feed(page)
    reader.close()
    if reader.rawdata:          # what an unclosed <script> or <style> holds: the parser keeps it back
        reader.events.append(("other", "", reader.rawdata, {}))
    return reader.events


def _untranslated(tag: str, attrs: dict) -> bool:
    return (tag in VERBATIM or (attrs.get("translate") or "").lower() == "no"
            or "notranslate" in (attrs.get("class") or "").split())


def _glued_mark(events, start: int, most: int = 8) -> bool:
    """Whether the inline element at `start` is a mark glued to a word: text with no letter (a page
    number, a footnote's mark, a comma in italics) with no space between it and the word
    ("snow.<span id=p5>5</span>"), found within `most` events. It then travels whole, as code does: it would else make a word of its
    own in the model's input, or follow the glued word (whole, a footnote's mark in superscript)."""
    kind, tag = events[start][:2]
    if kind != "start" or tag not in INLINE:
        return False
    text, depth = "", 0
    for end, (kind, inner, raw, _) in enumerate(events[start:start + most], start=start + 1):
        if kind == "text":
            text += html.unescape(raw)
        elif kind not in ("start", "end") or inner not in INLINE:
            return False                                # a block, a comment, an atom: not a mark
        depth += 1 if kind == "start" else -1
        if depth == 0:
            return bool(text.strip()) and not LETTER.search(text) and (_touches(events, start - 1, -1) or
                                                                        _touches(events, end, 1))
    return False


def _touches(events, i: int, step: int) -> bool:
    """Whether the nearest text from event `i` on (going `step`), past inline tags, has no space on the
    side that faces the element: "Pepys</em></span><em>,</em>" is one word."""
    while 0 <= i < len(events) and events[i][0] in ("start", "end") and events[i][1] in INLINE:
        i += step
    if not 0 <= i < len(events) or events[i][0] != "text" or not events[i][2]:
        return False
    return not (events[i][2][-1] if step < 0 else events[i][2][0]).isspace()


def _element_end(events, start: int) -> int:
    """The index after the element that starts at `start`: past its own end tag (a void one: itself)."""
    kind, tag = events[start][:2]
    depth, i = kind == "start", start + 1
    while depth and i < len(events):
        depth += {"start": 1, "end": -1}.get(events[i][0], 0) if events[i][1] == tag else 0
        i += 1
    return i


def _translated_tags(events) -> list[int]:
    """The start tags whose attributes are the page's text: all but those inside what stays as it is."""
    found, i = [], 0
    while i < len(events):
        kind, tag, _, attrs = events[i]
        if kind in ("start", "void") and _untranslated(tag, attrs):
            i = _element_end(events, i)
            continue
        if kind in ("start", "void"):
            found.append(i)
        i += 1
    return found


def _attribute_texts(attrs: dict, tag: str) -> list[str]:
    """The attributes of a tag that people read: a tooltip, an image's text, a field's hint, a button's label."""
    names = [n for n in TEXT_ATTRIBUTES if attrs.get(n)]
    if tag == "input" and (attrs.get("type") or "").lower() in ("submit", "button", "reset") and attrs.get("value"):
        names.append("value")
    return names


def _with_attribute(raw: str, name: str, value: str) -> str:
    """The start tag `raw` with attribute `name` set to `value` (escaped, double-quoted); the rest as written."""
    pattern = re.compile(rf"""(\s{name}\s*=\s*)("[^"]*"|'[^']*'|[^\s"'=<>`]+)""", re.IGNORECASE)
    return pattern.sub(lambda m: m.group(1) + '"' + html.escape(value, quote=True) + '"', raw, count=1)


def _translate_attributes(translator, pages: list[list], to, options, from_lang, glossary, overrides) -> list[list]:
    """Each page's events with the readable attributes of its tags (TEXT_ATTRIBUTES) translated in place,
    all pages' in one call."""
    wanted = [(page, i, name) for page, events in enumerate(pages) for i in _translated_tags(events)
              for name in _attribute_texts(events[i][3], events[i][1]) if LETTER.search(events[i][3][name])]
    if not wanted:
        return pages
    found = translator.translate([pages[page][i][3][name] for page, i, name in wanted], to, options,
                                 from_lang=from_lang, glossary=glossary, **overrides)
    pages = [list(events) for events in pages]
    for (page, i, name), tr in zip(wanted, found):
        kind, tag, raw, attrs = pages[page][i]
        pages[page][i] = (kind, tag, _with_attribute(raw, name, tr.text), {**attrs, name: tr.text})
    return pages


def _chunks(events) -> list[str | list]:
    """The page as raw strings (kept as they are) and blocks: lists of (kind, tag, raw) items, where
    kind is "text", "start", "end" (inline tags), "atom" (untranslated words that travel whole) or
    "silent" (markup that stands for no words)."""
    chunks: list[str | list] = []
    block: list = []
    i = 0
    while i < len(events):
        kind, tag, raw, attrs = events[i]
        i += 1
        if kind in ("start", "void") and (_untranslated(tag, attrs) or _glued_mark(events, i - 1)):
            end = _element_end(events, i - 1)
            raw += "".join(e[2] for e in events[i:end])
            i = end
            inline = "silent" if tag in SILENT else "atom" if tag in ATOMS | INLINE else ""
        elif kind == "text" or (kind in ("start", "end") and tag in INLINE):
            block.append((kind, tag, raw))
            continue
        else:
            inline = "silent" if kind == "void" and tag in SILENT else ""
        if inline:
            block.append((inline, tag, raw))
            continue
        if block:
            chunks.append(block)
            block = []
        chunks.append(raw)
    if block:
        chunks.append(block)
    return chunks


# A unit's words at most. The translator cuts a longer sentence into parts anyway (CLAUSE_TOKENS), and a
# unit's alignment is words x words: a paragraph with no sentence end took 4.9 GB at 8,000 words.
MAX_UNIT_WORDS = 100


def _cut(words: list) -> list[list]:
    """`words` in runs of at most MAX_UNIT_WORDS, each ending at a clause mark (, ; :) where its second
    half has one."""
    runs = []
    while len(words) > MAX_UNIT_WORDS:
        marks = [i for i in range(MAX_UNIT_WORDS // 2, MAX_UNIT_WORDS) if words[i].text.endswith((",", ";", ":"))]
        end = marks[-1] + 1 if marks else MAX_UNIT_WORDS
        runs.append(words[:end])
        words = words[end:]
    return runs + [words] if words else runs


def _has_words(kind: str, raw: str) -> bool:
    """Whether a block item holds words: text that is not only space, or an atom (words kept whole)."""
    return kind == "atom" or (kind == "text" and bool(html.unescape(raw).strip()))


@dataclass
class _Word:
    text: str
    path: tuple[int, ...]          # the inline elements around it, outermost first (their start items)
    after: str = ""                # markup that stands for no words, which followed it


@dataclass
class _Block:
    """One block's items, read into words that know their elements, and its translated words."""

    items: list
    partner: dict[int, int] = field(default_factory=dict)      # start item <-> end item, for pairs
    atoms: list[str] = field(default_factory=list)             # raw markup behind each `k` in the text
    prefix: str = ""
    suffix: str = ""
    words: list[_Word] = field(default_factory=list)
    targets: list[_Word] = field(default_factory=list)
    end_path: tuple[int, ...] = ()                             # the elements around the block's last character

    def __post_init__(self):
        self._pair_tags()
        content = [k for k, (kind, _, raw) in enumerate(self.items)
                   if _has_words(kind, raw)]
        if not content:
            self.prefix = "".join(raw for _, _, raw in self.items)
            return
        first, last = content[0], content[-1]
        chars: list[str] = []
        paths: list[tuple[int, ...]] = []
        stack: list[int] = []
        silent: list[tuple[int, str]] = []               # (position in the text, markup)

        def add(text: str) -> None:
            for ch in text:
                if ch.isspace():
                    if not chars or chars[-1] == " ":
                        continue
                    ch = " "
                chars.append(ch)
                paths.append(tuple(stack))

        for k, (kind, _, raw) in enumerate(self.items):
            if k in self.partner:
                stack.append(k) if kind == "start" else stack.remove(self.partner[k])
            elif k < first or k > last:                 # around the words: kept in place, outside them
                if k < first:
                    self.prefix += raw
                else:
                    self.suffix += raw
            elif kind == "text":
                text = html.unescape(raw)
                if k == first:
                    self.prefix += raw[:len(raw) - len(raw.lstrip())]
                if k == last:
                    self.suffix = raw[len(raw.rstrip()):] + self.suffix
                for piece in LITERAL_REF.split(text):   # a `3` of the page's own would read as atom 3's reference
                    if ATOM_REF.fullmatch(piece):
                        add(f" `{len(self.atoms)}` ")
                        self.atoms.append(html.escape(piece, quote=False))
                    else:
                        add(piece)
            elif kind == "atom":
                add(f" `{len(self.atoms)}` ")
                self.atoms.append(raw)
            else:                                       # silent, and tags without a partner in the block
                silent.append((len(chars), raw))
        while chars and chars[-1] == " ":
            chars.pop()
            paths.pop()
        text = "".join(chars)
        self.end_path = paths[-1] if paths else ()
        for match in re.finditer(r"\S+", text):
            counts = Counter(paths[match.start():match.end()])    # the deepest elements win: none is lost
            self.words.append(_Word(match.group(), max(counts, key=lambda path: (len(path), counts[path]))))
            while silent and silent[0][0] <= match.end() + 1:   # up to the space after it
                position, raw = silent.pop(0)
                self.words[-1].after += (" " if position > match.end() else "") + raw
        self.words[-1].after += "".join(raw for _, raw in silent)

    def _pair_tags(self) -> None:
        """Pair each inline start tag with its end tag; an element with no words inside is left unpaired,
        so that it travels whole."""
        open_tags: list[int] = []                   # start tags not closed yet, innermost last
        open_by_tag: dict[str, list[int]] = {}      # the same by tag name, so that no end tag scans them all
        for k, (kind, tag, _) in enumerate(self.items):
            if kind == "start":
                open_tags.append(k)
                open_by_tag.setdefault(tag, []).append(k)
            elif kind == "end" and open_by_tag.get(tag):
                start = open_by_tag[tag][-1]
                self.partner[start], self.partner[k] = k, start
                while True:                         # it closes, and so does every element left open inside it
                    inner = open_tags.pop()
                    open_by_tag[self.items[inner][1]].pop()
                    if inner == start:
                        break
        # items with words before each index: one pass, not a scan of each element (nested ones: O(n ** 2))
        words_before = list(itertools.accumulate((_has_words(kind, raw) for kind, _, raw in self.items), initial=0))
        for start, end in list(self.partner.items()):
            if start < end and words_before[end] == words_before[start + 1]:
                del self.partner[start], self.partner[end]

    def restore_lost(self) -> None:
        """Elements the alignment could not place (two sibling elements whose words became one word)
        come back empty after the block's words, so that no link target or id is lost."""
        kept = {k for word in self.targets for k in word.path}
        lost = [k for k in sorted(self.partner) if k < self.partner[k] and k not in kept]    # paired: had words
        self.suffix = "".join(self.items[k][2] + self.items[self.partner[k]][2] for k in lost) + self.suffix

    def units(self, split_sentences: bool) -> list[list[_Word]]:
        """The words of each sentence (or of the whole block)."""
        if not self.words:
            return []
        if not split_sentences:
            return _cut(self.words)
        units, next_word = [], 0
        for sentence, _ in split(" ".join(w.text for w in self.words)):
            count = len(sentence.split())
            units.append(self.words[next_word:next_word + count])
            next_word += count
        units[-1] += self.words[next_word:]         # nothing, unless the splitter and str.split disagree
        return [run for unit in units for run in _cut(unit)]

    def render(self) -> str:
        out, current = [self.prefix], ()
        for text, path, space in self._pieces():
            if text is None:                                    # markup that followed the word: `space` holds it
                out.append(space)
                continue
            common = len(_common(current, path))
            out += [self.items[self.partner[k]][2] for k in reversed(current[common:])]
            out += [" "] if space else []
            out += [self.items[k][2] for k in path[common:]]
            out.append(self._html(text))
            current = path
        out += [self.items[self.partner[k]][2] for k in reversed(current)]
        return "".join(out) + self.suffix

    def _pieces(self) -> list[tuple[str, tuple[int, ...], bool]]:
        """The translated words as (text, elements, space before), with the punctuation around a word
        inside only the elements it shares with its neighbour: "<a>here</a>." rather than "<a>here.</a>"."""
        pieces = []
        paths = [w.path for w in self.targets]
        for n, word in enumerate(self.targets):
            before = paths[n - 1] if n else ()
            after = paths[n + 1] if n + 1 < len(paths) else self.end_path
            lead, core, tail = PUNCTUATION.fullmatch(word.text).groups()
            if core:
                pieces += [(lead, _common(word.path, before), bool(n)), (core, word.path, bool(n) and not lead),
                           (tail, _common(word.path, after), False)]
            else:               # punctuation alone ("order !", "›" a link holds): spaced and wrapped as it is
                pieces.append((word.text, word.path, bool(n)))
            if word.after:
                pieces.append((None, word.path, word.after))
        return [piece for piece in pieces if piece[0] != ""]

    def _html(self, text: str) -> str:
        """A translated word as HTML: escaped, with the markup of its `k` references put back."""
        pieces, position = [], 0
        for match in ATOM_REF.finditer(text):
            k = int(match.group(1))
            if k < len(self.atoms) and self.atoms[k] is not None:
                pieces += [html.escape(text[position:match.start()], quote=False), self.atoms[k]]
                self.atoms[k] = None                     # each goes back once
                position = match.end()
        return "".join(pieces) + html.escape(text[position:], quote=False)


# ----- carrying the markup over --------------------------------------------------------------------

def _needs_alignment(words: list[_Word]) -> bool:
    """Whether a unit's markup has to follow its words: some differ in their elements, or some carry
    markup after them (elsewhere than after the last)."""
    return len({w.path for w in words}) > 1 or any(w.after for w in words[:-1])


def _carry_over(source: list[_Word], translation) -> list[_Word]:
    """The translated words of one unit, each with the elements of the source word it attends to most,
    and the markup that followed a source word after the translated word that attends to it most."""
    if translation is None or not translation.translated or translation.alignment is None:
        texts = translation.text.split() if translation is not None else [w.text for w in source]
        texts = texts or [""]
        targets = [_Word(t, source[min(i * len(source) // len(texts), len(source) - 1)].path)
                   for i, t in enumerate(texts)]
        for i, word in enumerate(source):
            targets[-1 if i == len(source) - 1 else min(i * len(texts) // len(source), len(texts) - 1)].after += word.after
        return targets
    texts = translation.text.split() or [""]
    a = translation.alignment
    scores = word_alignment(a.source_tokens, a.target_tokens, np.asarray(a.weights, dtype=np.float32),
                            len(source), len(texts))
    targets = [_Word(t, p) for t, p in zip(texts, carry_paths([w.path for w in source], scores))]
    atoms = {k: w.path for w in source for k in ATOM_REF.findall(w.text)}
    for word in targets:        # code keeps the elements it was in: inside a link, its own link would nest
        if (found := ATOM_REF.search(word.text)) and found.group(1) in atoms:
            word.path = atoms[found.group(1)]
    targets += [_Word(f"`{k}`", source[-1].path) for k in _lost_atoms(source, texts)]
    for i, word in enumerate(source):
        if word.after:       # the last word's markup stays last: it closed the sentence
            targets[-1 if i == len(source) - 1 else int(np.argmax(scores[:, i]))].after += word.after
    return targets


def _lost_atoms(source: list[_Word], texts: list[str]) -> list[int]:
    """Atoms of the source that the translation lost: they go back at its end, so that no markup is lost."""
    kept = {int(m) for t in texts for m in ATOM_REF.findall(t)}
    return [int(m) for w in source for m in ATOM_REF.findall(w.text) if int(m) not in kept]


def _word_index(tokens: list[str], skip_first_of_part: bool) -> list[int]:
    """Each SentencePiece token's word (a piece starting with ▁ starts one), -1 for tags and </s>."""
    index, word, part_start = [], -1, True
    for token in tokens:
        if token == EOS_PIECE:
            index.append(-1)
            part_start = True
            continue
        if part_start and skip_first_of_part:           # the language tag that starts each source part
            index.append(-1)
            part_start = False
            continue
        part_start = False
        if token.startswith("▁") or word < 0:
            word += 1
        index.append(word)
    return index


def _membership(index: list[int], words: int) -> np.ndarray:
    """tokens × words, 1 where a token belongs to a word; spread evenly over all of them if the pieces
    do not count the same words as the text (a span the model never saw, such as an emoji)."""
    index = np.asarray(index)
    found = int(index.max()) + 1 if len(index) else 0
    member = np.zeros((len(index), words), dtype=np.float32)
    if found == words:
        rows = np.flatnonzero(index >= 0)
        member[rows, index[rows]] = 1.0
    else:
        rows = np.flatnonzero(index >= 0)
        member[rows, (index[rows] * words) // max(found, 1)] = 1.0
    return member


def word_alignment(source_tokens: list[str], target_tokens: list[str], weights: np.ndarray,
                   source_words: int, target_words: int) -> np.ndarray:
    """target words × source words: the attention of each target word's pieces on each source word's."""
    s = _membership(_word_index(source_tokens, True), source_words)
    t = _membership(_word_index(target_tokens, False), target_words)
    return t.T @ weights @ s


def carry_paths(source_paths: list[tuple[int, ...]], scores: np.ndarray) -> list[tuple[int, ...]]:
    """The elements of each target word: those of the source word it attends to most. An element no
    target word got goes to the word that attends to its words most among those it can join without
    taking another element's place, so none is lost."""
    if not source_paths or not len(scores):
        return [()] * len(scores)
    paths = [source_paths[i] for i in scores.argmax(axis=1)]
    holders: dict[int, list[int]] = {}                    # element -> the source words inside it
    for i, path in enumerate(source_paths):
        for element in path:
            holders.setdefault(element, []).append(i)
    for element in dict.fromkeys(k for p in paths for k in p):
        _keep_one_run(paths, element, scores, holders[element])
    for element in holders:                               # outer elements first
        if any(element in p for p in paths):
            continue
        inside = scores[:, holders[element]]
        order = np.argsort(-inside.sum(axis=1), kind="stable")
        choices = np.asarray(holders[element])[inside.argmax(axis=1)]     # each target word's best source word
        target, new, below = None, None, None
        for t in order:
            candidate = source_paths[choices[t]]
            if paths[t] == candidate[:candidate.index(element)]:          # its parents, no more
                target, new = t, candidate
                break
            if below is None and candidate[:len(paths[t])] == paths[t]:   # fewer: only adds
                below = (t, candidate)
        if target is None:
            target, new = below or (order[0], source_paths[choices[order[0]]])
        paths[target] = new
    return paths


def _keep_one_run(paths: list[tuple[int, ...]], element: int, scores: np.ndarray, inside: list[int]) -> None:
    """An element the alignment scattered over several runs of target words stays on the run that
    attends to its source words most: one link, not two copies of it around unrelated words."""
    runs, start = [], None
    for i, path in enumerate(paths + [()]):
        if element in path and start is None:
            start = i
        elif element not in path and start is not None:
            runs.append((start, i))
            start = None
    if len(runs) < 2:
        return
    best = max(runs, key=lambda run: scores[run[0]:run[1], inside].sum())
    for begin, end in runs:
        if (begin, end) != best:
            for i in range(begin, end):
                paths[i] = paths[i][:paths[i].index(element)]


def _common(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]
