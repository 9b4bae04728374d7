"""Gettext catalogs in, catalogs out (`mt-translate --po`, `Translator.translate_po`): each message
without a translation gets one, flagged "fuzzy" for a translator to review as gettext's tools and
translation platforms mark machine suggestions; messages already translated, comments, contexts,
flags and the header are kept. polib reads and writes the file.

Messages are translated as messages.py says (line by line, their spaces kept), and what a program
fills in ("%s", "{name}", "%(count)d") comes through as written (runtime/protect.py). A plural
message fills every form the header's Plural-Forms asks for: the first from msgid, the others from
msgid_plural.
"""

from __future__ import annotations

import re

from .errors import DocumentError
from .messages import translate_messages, with_line_ends_of

FUZZY = "fuzzy"
NPLURALS = re.compile(r"nplurals\s*=\s*(\d+)")
# A line with a string: an obsolete message's (#~) or a previous msgid's (#|) marker, if any, a keyword,
# if any (none: a string that continues the one before), then the string in double quotes.
MARKER = re.compile(r"#[~|]\s+")
KEYWORD = re.compile(r"(?:msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?)\s*")
QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
ESCAPES = 'ntrvbf"\\'          # what polib reads after a backslash


def translate_po(translator, document: str, to=None, options=None, *, from_lang: str = "auto", glossary=None,
                 **overrides) -> str:
    """`document` (a .po or .pot file's text) with each untranslated message translated into `to` (by
    default the catalog's Language; a TranslationError if it names none the model has) and flagged fuzzy."""
    import polib

    if not document.strip():
        return document
    check_strings(document)
    try:
        # polib opens a string that names an existing file: with a new line, the text is never taken
        # for a path (an upload that says "/srv/app/secret.po" must not return the server's file).
        catalog = polib.pofile(document + "\n")
    except (OSError, ValueError) as e:           # polib reports a syntax error as an OSError
        raise DocumentError(f"not a gettext catalog: {e}") from None
    to = to or catalog_language(catalog, translator)
    if to is None:
        raise DocumentError("the catalog names no Language this model translates into: give the target "
                               f"language ({', '.join(translator.languages)})")
    entries = [e for e in catalog if e.msgid and not e.obsolete and not e.translated() and FUZZY not in e.flags]
    plurals = plural_count(catalog)
    texts = [text for e in entries for text in ([e.msgid, e.msgid_plural] if e.msgid_plural else [e.msgid])]
    translated = translate_messages(translator, texts, to, options, from_lang=from_lang, glossary=glossary,
                                    **overrides)
    for e in entries:
        if e.msgid_plural:
            e.msgstr_plural = {0: translated[e.msgid], **{n: translated[e.msgid_plural] for n in range(1, plurals)}}
        else:
            e.msgstr = translated[e.msgid]
        e.flags.insert(0, FUZZY)                 # first, as msgmerge writes it
    if header_language(catalog) != to:          # none, or another's (a catalog copied from another language)
        catalog.metadata["Language"] = to
    if "Content-Type" in catalog.metadata:      # written in UTF-8: a Latin-1 label would garble its letters
        catalog.metadata["Content-Type"] = re.sub(r"charset=[\w.:-]+", "charset=UTF-8", catalog.metadata["Content-Type"])
    out = str(catalog).rstrip("\n") + "\n"
    return with_line_ends_of(document, out)


def catalog_language(catalog, translator) -> str | None:
    """The catalog's Language if the model translates into it, else None."""
    language = header_language(catalog)
    return language if language in translator.languages else None


def header_language(catalog) -> str:
    """The language the header's Language names ("de", "de_DE" -> "de"; none: "")."""
    return catalog.metadata.get("Language", "").replace("-", "_").split("_")[0].lower()


def plural_count(catalog) -> int:
    """How many plural forms the header's Plural-Forms asks for (2 without one, as in English)."""
    found = NPLURALS.search(catalog.metadata.get("Plural-Forms", ""))
    return max(int(found.group(1)), 1) if found else 2


def check_strings(document: str) -> None:
    """A DocumentError for the first string polib would misread, without an error of its own: it takes
    a string's text as what lies between its first and last characters, quotes or not (`msgid "Guten
    Morgen` would be the message "Guten Morge"), and keeps an escape it does not know as its two
    characters (written back as another string). Comments are free text."""
    for number, line in enumerate(document.removeprefix("\ufeff").splitlines(), 1):     # the lines polib reads
        line = line.strip()
        shown = line if len(line) <= 80 else line[:77] + "..."
        marker = MARKER.match(line)
        text = line[marker.end():] if marker else line
        if not text or text.startswith("#"):
            continue
        keyword = KEYWORD.match(text)
        string = text[keyword.end():] if keyword else text
        if not QUOTED.fullmatch(string):
            raise DocumentError(f"not a gettext catalog: line {number}: a string must be in double quotes: {shown}")
        for escape in re.findall(r"\\(.)", string):
            if escape not in ESCAPES:
                raise DocumentError(f"not a gettext catalog: line {number}: unknown escape \\{escape} in: {shown}")
