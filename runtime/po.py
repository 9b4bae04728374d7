"""Gettext catalogs in, catalogs out (`mt-translate --po`, `Translator.translate_po`): each message
without a translation gets one, flagged "fuzzy" for a translator to review as gettext's tools and
translation platforms mark machine suggestions; messages already translated, comments, contexts,
flags and the header are kept. polib reads and writes the file.

A message is translated line by line (its "\\n" kept), with the spaces around it kept ("Error: " stays
followed by its space), and what a program fills in ("%s", "{name}", "%(count)d") comes through as
written (runtime/protect.py). A plural message fills every form the header's Plural-Forms asks for:
the first from msgid, the others from msgid_plural.
"""

from __future__ import annotations

import re

from .errors import TranslationError

FUZZY = "fuzzy"
NPLURALS = re.compile(r"nplurals\s*=\s*(\d+)")


def translate_po(translator, document: str, to=None, options=None, *, from_lang: str = "auto", glossary=None,
                 **overrides) -> str:
    """`document` (a .po or .pot file's text) with each untranslated message translated into `to` (by
    default the catalog's Language; a TranslationError if it names none the model has) and flagged fuzzy."""
    import polib

    if not document.strip():
        return document
    try:
        catalog = polib.pofile(document)
    except (OSError, ValueError) as e:           # polib reports a syntax error as an OSError
        raise TranslationError(f"not a gettext catalog: {e}") from None
    to = to or catalog_language(catalog, translator)
    if to is None:
        raise TranslationError("the catalog names no Language this model translates into: give the target "
                               f"language ({', '.join(translator.languages)})")
    if from_lang == "auto" and len(sources := {a for a, b in translator.directions if b == to}) == 1:
        from_lang = sources.pop()        # msgids are never in the target language: no detecting short ones
    entries = [e for e in catalog if e.msgid and not e.obsolete and not e.translated() and FUZZY not in e.flags]
    plurals = plural_count(catalog)
    texts = [text for e in entries for text in ([e.msgid, e.msgid_plural] if e.msgid_plural else [e.msgid])]
    lines = [line for text in texts for line in text.split("\n")]
    done = iter(translator.translate(lines, to, options, from_lang=from_lang, glossary=glossary, **overrides))
    translated = {}
    for text in texts:
        translated[text] = "\n".join(keep_spaces(line, next(done).text) for line in text.split("\n"))
    for e in entries:
        if e.msgid_plural:
            e.msgstr_plural = {0: translated[e.msgid], **{n: translated[e.msgid_plural] for n in range(1, plurals)}}
        else:
            e.msgstr = translated[e.msgid]
        e.flags.insert(0, FUZZY)                 # first, as msgmerge writes it
    if not catalog.metadata.get("Language"):
        catalog.metadata["Language"] = to
    return str(catalog) + "\n"


def catalog_language(catalog, translator) -> str | None:
    """The catalog's Language ("de", "de_DE" -> "de") if the model translates into it, else None."""
    language = catalog.metadata.get("Language", "").replace("-", "_").split("_")[0].lower()
    return language if language in translator.languages else None


def plural_count(catalog) -> int:
    """How many plural forms the header's Plural-Forms asks for (2 without one, as in English)."""
    found = NPLURALS.search(catalog.metadata.get("Plural-Forms", ""))
    return max(int(found.group(1)), 1) if found else 2


def keep_spaces(source: str, translation: str) -> str:
    """`translation` with the white space `source` had before and after it."""
    if not source.strip():
        return source
    lead, trail = source[: len(source) - len(source.lstrip())], source[len(source.rstrip()):]
    return lead + translation.strip() + trail
