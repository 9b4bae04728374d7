"""XLIFF in, XLIFF out (`mt-translate --xliff`, `Translator.translate_xliff`): the exchange format of
translation tools (Xcode's .xcloc, Angular's messages.xlf, Okapi, memoQ, Trados), versions 1.2 and 2.x.

Each unit (1.2's trans-unit, 2.x's segment) whose target is missing or empty gets one, marked for a
translator to review: 1.2's state="needs-review-translation" with state-qualifier="mt-suggestion",
2.x's segment state="translated" (not "reviewed" or "final"). Units with a target, units marked
translate="no", notes, contexts and the rest are kept, and the file's indentation with them. `to`
defaults to the file's target language; the source is the language the file names, when the model
has it. Plain sources go as messages.py says (line by line, spaces kept), ICU plurals and selects
branch by branch (runtime/icu.py). Inline codes travel through markup.py: a paired element (g, pc,
mrk) follows its words as a <span> does, a placeholder (x, ph, bx, ex, sc, ec, bpt, ept, it) travels
as a span the model never sees, and each comes back once, as it was.
"""

from __future__ import annotations

import copy
import html
import re
import warnings
from html.parser import HTMLParser

from . import icu
from .errors import DocumentError
from .language_id import has_letters
from .messages import catalog_source, translate_messages, with_line_ends_of

PAIRED = {"g", "pc", "mrk"}                   # elements around words: they follow them
MT_STATE = {"1": {"state": "needs-review-translation", "state-qualifier": "mt-suggestion"},     # by major version
            "2": {"state": "translated"}}


class XliffWarning(UserWarning):
    """A unit kept untranslated (an ICU plural or select with inline codes, or one that cannot be read)."""


def translate_xliff(translator, document: str, to=None, options=None, *, from_lang: str = "auto", glossary=None,
                    **overrides) -> str:
    """`document` (XLIFF 1.2 or 2.x) with each unit without a target translated into `to` (by default the
    file's target language) and marked for review."""
    from lxml import etree

    if not document.strip():
        return document
    try:
        # `document` is text: the encoding its declaration names was the file's, and is not read again.
        root = etree.fromstring(document.encode("utf-8"), etree.XMLParser(resolve_entities=False, encoding="utf-8"))
    except (etree.XMLSyntaxError, ValueError) as e:
        raise DocumentError(f"not XLIFF: {e}") from None
    version = root.get("version", "")[:1]
    if etree.QName(root).localname != "xliff" or version not in MT_STATE:
        raise DocumentError(f"not XLIFF 1.x or 2.x: the root is <{etree.QName(root).localname}> "
                               f"version {root.get('version')!r}")
    files = [root] if version == "2" else [e for e in root.iter() if _local(e) == "file"]
    for file in files:
        target_attribute = "trgLang" if version == "2" else "target-language"
        language = _model_language(translator, to or file.get(target_attribute))
        if language is None:
            raise DocumentError("the file names no target language this model translates into: give the "
                                   f"target language ({', '.join(translator.languages)})")
        if not file.get(target_attribute):
            file.set(target_attribute, language)
        source = from_lang
        if from_lang == "auto":
            declared = _model_language(translator, file.get("srcLang" if version == "2" else "source-language"))
            source = declared if declared in translator.sources_into(language) else "auto"
        _translate_units(translator, _units(file, version), version, language, options, source, glossary, overrides)
    declaration = document[:document.index("?>") + 2] + "\n" if document.startswith("<?xml") else ""
    # The translation is text, written as UTF-8 (mt-translate, mt-serve): a declaration naming another
    # encoding would have readers take its letters beyond ASCII for others.
    declaration = re.sub(r"""(\sencoding\s*=\s*)(["'])[^"']*\2""", r"\1\2UTF-8\2", declaration)
    out = etree.tostring(root.getroottree(), encoding="unicode")       # with a DOCTYPE or comments around the root
    out = declaration + out + ("\n" if document.endswith("\n") else "")
    # XML reads every line's end as "\n" (lxml writes a "\r" in text as &#13;).
    return with_line_ends_of(document, out)


def _local(element) -> str:
    """An element's name without its namespace ("" for a comment or a processing instruction)."""
    return element.tag.rpartition("}")[2] if isinstance(element.tag, str) else ""


def _model_language(translator, code: str | None) -> str | None:
    """The model's language that `code` ("de-DE", "de_CH", "en") names, if it has it."""
    primary = (code or "").replace("_", "-").split("-")[0].lower()
    return primary if primary in translator.languages else None


def _units(file, version: str) -> list[tuple]:
    """(holder of the state, source, its target or None) of each unit to translate: not marked
    translate="no" (on itself or a group around it), with no target or an empty one."""
    units = []
    unit_tag, holder_tag = ("unit", "segment") if version == "2" else ("trans-unit", "trans-unit")
    for element in file.iter():
        if _local(element) != holder_tag:
            continue
        unit = element if unit_tag == holder_tag else element.getparent()
        if any(e.get("translate") == "no" for e in [unit, *unit.iterancestors()]):
            continue
        source = next((c for c in element if _local(c) == "source"), None)
        target = next((c for c in element if _local(c) == "target"), None)
        if source is None or (target is not None and (target.text or len(target))):
            continue
        units.append((element, source, target))
    return units


def _translate_units(translator, units: list[tuple], version: str, to: str, options, from_lang: str, glossary,
                     overrides: dict) -> None:
    from . import markup

    plain, coded, choices, texts = [], [], {}, []
    for unit in units:
        holder, source, target = unit
        words = "".join(source.itertext())
        if not has_letters(words):                          # codes, numbers or nothing: the target is a copy
            target = _write(holder, source, target, version, source.text)
            target.extend(copy.deepcopy(child) for child in source)
            continue
        if icu.has_choice(words):
            try:
                if len(source):
                    raise ValueError("inline codes inside it")
                choices[source.text] = icu.parse(source.text)
            except ValueError as e:
                warnings.warn(f"unit {_unit_id(source)}: kept untranslated: an ICU plural or select that cannot "
                              f"be read ({e})", XliffWarning, stacklevel=4)
                continue
        if len(source):
            coded.append(unit)
        else:
            plain.append(unit)
            texts += icu.texts(choices[source.text]) if source.text in choices else [source.text]
    done = translate_messages(translator, texts, to, options, from_lang=from_lang, glossary=glossary, **overrides)
    for holder, source, target in plain:
        translation = (icu.rebuild(choices[source.text], lambda t: done.get(t, t)) if source.text in choices
                       else done[source.text])
        _write(holder, source, target, version, translation)
    fragments, codes = [], []
    for _, source, _ in coded:
        codes.append([])
        fragments.append(_fragment(source, codes[-1]))
    if fragments:
        translated = markup.translate_fragments(translator, fragments, to, options,
                                                from_lang=catalog_source(translator, to, from_lang),
                                                glossary=glossary, **overrides)
        for (holder, source, target), html_text, elements in zip(coded, translated, codes):
            target = _write(holder, source, target, version, "")
            builder = _Builder(target, elements)
            builder.feed(html_text)
            builder.close()


def _unit_id(source) -> str:
    unit = source.getparent()
    while unit is not None and unit.get("id") is None:
        unit = unit.getparent()
    return unit.get("id") if unit is not None else "?"


def _write(holder, source, target, version: str, text: str):
    """The target of `source` (made after it if missing), holding `text`, and the unit marked as machine
    translated."""
    if target is None:
        target = source.makeelement(source.tag.replace("source", "target"), {})
        target.tail = source.tail
        source.addnext(target)
    target.text = text
    for name, value in MT_STATE[version].items():
        (target if version == "1" else holder).set(name, value)
    return target


def _fragment(element, codes: list) -> str:
    """`element`'s content as HTML for markup.py: paired codes as <span class="cN">, the others as <code
    class="cN">, each appended to `codes`; a line break as <br class="nl">."""
    out = [_escape(element.text)]
    for child in element:
        codes.append(child)
        number = len(codes) - 1
        if isinstance(child.tag, str) and child.tag.rpartition("}")[2] in PAIRED:
            out.append(f'<span class="c{number}">{_fragment(child, codes)}</span>')
        else:                                   # a placeholder, a comment, a processing instruction
            out.append(f'<code class="c{number}"></code>')
        out.append(_escape(child.tail))
    return "".join(out)


def _escape(text: str | None) -> str:
    return html.escape(text or "", quote=False).replace("\n", '<br class="nl">')


class _Builder(HTMLParser):
    """markup.py's output written into `target`: text, paired codes made again around their words, and
    each placeholder copied once where it landed."""

    def __init__(self, target, codes: list):
        super().__init__(convert_charrefs=True)
        self.stack, self.codes, self.used, self.inside_code = [target], codes, set(), False

    def handle_starttag(self, tag, attrs):
        name = dict(attrs).get("class") or ""
        if tag == "br":
            self._text("\n")
        elif name[:1] == "c" and name[1:].isdigit() and int(name[1:]) < len(self.codes):
            original, self.inside_code = self.codes[int(name[1:])], tag == "code"
            if int(name[1:]) in self.used:
                self.stack.append(self.stack[-1]) if tag == "span" else None
                return
            self.used.add(int(name[1:]))
            if tag == "span":
                element = original.makeelement(original.tag, dict(original.attrib))
                self.stack[-1].append(element)
                self.stack.append(element)
            else:
                element = copy.deepcopy(original)
                element.tail = None
                self.stack[-1].append(element)
        elif tag == "span":
            self.stack.append(self.stack[-1])

    def handle_endtag(self, tag):
        if tag == "span" and len(self.stack) > 1:
            self.stack.pop()
        elif tag == "code":
            self.inside_code = False

    def handle_data(self, data):
        if not self.inside_code:
            self._text(data)

    def _text(self, text: str) -> None:
        parent = self.stack[-1]
        if len(parent):
            parent[-1].tail = (parent[-1].tail or "") + text
        else:
            parent.text = (parent.text or "") + text
