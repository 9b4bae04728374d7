"""A sentence's text on its way into the model (`clean`) and out of it (`restore`)."""

from __future__ import annotations

import re
import unicodedata

from .protect import Masked, repair_copies, repair_ellipses, repair_emphasis, repair_numbers, unmask


# "ß" typed as Greek "β" after a lower-case Latin letter ("Maβnahme", "groβ"), as in WMT's German news.
SHARP_S_LOOKALIKE = re.compile(r"(?<=[a-zäöü])β")


def clean(text: str) -> str:
    """Control characters become spaces (tab and newline included); a BOM and lone surrogates go; letters
    written with combining marks are composed (NFC). Decomposed, "ä" is "a" and a diaeresis the vocabulary
    spells in bytes, which protect.mask took out and put back into the translation on its own. A "β" for
    "ß" (SHARP_S_LOOKALIKE) is read as "ß" ("Aβ", "IFN-β" keep theirs)."""
    if "β" in text:
        text = SHARP_S_LOOKALIKE.sub("ß", text)
    if not text.isprintable():
        text = "".join(" " if unicodedata.category(c) == "Cc" else c for c in text)
    text = text.replace("\ufeff", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:          # lone surrogates (e.g. from surrogateescape'd input)
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


# Line breaks other than "\n" (and "\r\n"), and tabs: an output line stays one input line, and in
# mt-translate's text output a tab separates the n-best.
ODD_SPACE = re.compile(r"\r(?!\n)|[\t\v\f\x1c-\x1f\x85\u2028\u2029]")


def clean_space(space: str) -> str:
    """The whitespace around a sentence, as written but for ODD_SPACE, which becomes spaces."""
    return ODD_SPACE.sub(" ", space)


def restore(translation: str, masked: Masked | None) -> str:
    """A sentence's translation with its numbers, ellipses and final marks repaired and its protected spans
    put back (protect.py)."""
    if masked is None:
        return translation
    for repair in (repair_numbers, repair_ellipses, repair_emphasis):
        translation = repair(masked.text, translation)
    return unmask(repair_copies(masked.copies, translation), masked.spans)


def restore_after(prefix: str, written: str, translation: str, masked: Masked | None) -> str:
    """`restore` for a translation that starts with `written`, its prefix as the model's pieces spell it
    (whitespace and Unicode normalised): that start goes back as the user wrote it, numbers and all."""
    restored = restore(translation, masked)
    if restored.startswith(written):
        return prefix.rstrip() + restored[len(written):]
    if translation.startswith(written):     # the number repair changed the user's numbers: not there
        rest = translation[len(written):]
        return prefix.rstrip() + (unmask(rest, masked.spans) if masked else rest)
    return restored
