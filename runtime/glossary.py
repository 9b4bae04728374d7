"""A glossary: terms that must be translated one way (a product's names, its UI words), for
`translate(..., glossary=...)` and `mt-translate --glossary FILE`.

A sentence with terms (found as whole words, their capitals as capitals: `pattern_of`) is translated as
it is first; where that translation lacks a term's translation (`holds`), it is translated again with
each term behind a placeholder name, as a URL is (runtime/protect.py), and the glossary's translation
takes the name's place (Translator._decode_again). A translation the model made around the term itself
fits it (articles, gender, inflection); one around a name may not: "Der Datei" where German wants "Die
Datei". One glossary serves both directions of a model: a German-English one also gives the German term
for the English one.

File format (UTF-8, tab-separated): a first line naming the two languages, then one term and its
translation per line; blank lines and lines starting with "#" are skipped.

    de	en
    Datei	file
    Speicherort	location
"""

from __future__ import annotations

import collections
import functools
import itertools
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from .errors import TranslationError


class GlossaryError(TranslationError):
    """An unreadable or malformed glossary; the message names the file and line."""

    def __init__(self, message: str, entry: int | None = None):
        super().__init__(message)
        self.entry = entry          # the number (from 0) of the pair at fault, for `read` to name its line


@dataclass(frozen=True)
class Terms:
    """A glossary's terms for one direction: each source term's translation (by its `key`), and the
    terms as written, whose capitals the text must have."""

    translations: dict[str, str]
    written: tuple[str, ...]
    pattern: re.Pattern = field(init=False, repr=False)
    capitals: frozenset[str] = field(init=False, repr=False)       # the keys of terms written in capitals

    def __post_init__(self):
        object.__setattr__(self, "capitals", frozenset(key(t) for t in self.written if in_capitals(t)))
        alternatives = "|".join(pattern_of(t) for t in sorted(self.written, key=len, reverse=True))
        object.__setattr__(self, "pattern", re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)"))

    def find(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, translation) of each term in `text`, longest first where terms overlap; a term the
        text writes in capitals, and the glossary does not, is translated in capitals ("SPEICHERN" -> "SAVE")."""
        found = []
        for m in self.pattern.finditer(text):
            translation = self.translation(m.group())
            if in_capitals(m.group()) and key(m.group()) not in self.capitals:
                translation = translation.upper()
            found.append((m.start(), m.end(), translation))
        return found

    def translation(self, found: str) -> str:
        """The translation of `found`, a match of the pattern: by its `key`, or else by the term that
        matches it. Either case also matches letters whose lower cases differ (Greek mu for the micro sign
        in "µm", "S" for the long s in "ſtraße"); it compares letter by letter, so the term is as long."""
        if (translation := self.translations.get(key(found))) is not None:
            return translation
        letters = len("".join(found.split()))
        return next(translation for term, translation in self.translations.items()
                    if len(term) - term.count(" ") == letters and re.fullmatch(pattern_of(term), found))


def in_capitals(text: str) -> bool:
    """Two letters or more, all capitals ("SPEICHERN", not "A" nor "iPhone")."""
    return text.isupper() and sum(c.isalpha() for c in text) > 1


def key(term: str) -> str:
    """A term as the glossary looks it up: lower-cased, its words parted by one space."""
    return " ".join(term.split()).lower()


def holds(translation: str, expected: list[str]) -> bool:
    """Whether `translation` has each of the glossary's translations in `expected` as often as listed (a term
    twice in the source, its translation twice), as whole words matched as terms are (`pattern_of`): their
    capitals as capitals ("Settings" is not in "Open the settings."), their other letters in either case
    ("file" is in "File was saved.")."""
    return all(len(re.findall(rf"(?<!\w){pattern_of(text)}(?!\w)", translation)) >= n
               for text, n in collections.Counter(expected).items())


def pattern_of(term: str) -> str:
    """A pattern for `term`: its capitals as capitals, its other letters in either case ("Speichern", the
    button, finds "SPEICHERN" but not the verb "speichern"; "file" finds "File"), as memoQ's
    "permissive" case does; its words parted by any spaces (a no-break space, two spaces, a line break
    of a wrapped paragraph)."""
    def word(w: str) -> str:
        return "".join(re.escape(run) if upper else f"(?i:{re.escape(run)})"
                       for upper, run in ((upper, "".join(run)) for upper, run in itertools.groupby(w, str.isupper)))
    return r"\s+".join(word(w) for w in term.split())


@dataclass(frozen=True)
class Glossary:
    source: str
    target: str
    entries: tuple[tuple[str, str], ...]
    path: str | None = field(default=None, compare=False)     # the file `read` read, as given: errors name it

    @classmethod
    def from_pairs(cls, source: str, target: str, pairs) -> Glossary:
        """A glossary from (term, translation) pairs in the languages `source` and `target`, or a dict of
        them (`{"Datei": "file"}`)."""
        if isinstance(pairs, Mapping):      # iterated, a dict gives its keys: a term would be split into letters
            pairs = pairs.items()
        pairs = list(pairs)
        for pair in pairs:
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(s, str) for s in pair)):
                raise GlossaryError(f"glossary entry {pair!r}: expected a (term, translation) pair of str")
        # composed (NFC), as the translator composes the text it searches
        entries = tuple((unicodedata.normalize("NFC", a.strip()), unicodedata.normalize("NFC", b.strip()))
                        for a, b in pairs)
        if not source or not target or source.lower() == target.lower():
            raise GlossaryError(f"a glossary needs two different languages, not {source!r} and {target!r}")
        for a, b in entries:
            if not a or not b:
                raise GlossaryError(f"glossary entry ({a!r}, {b!r}): a term and its translation must not be empty")
        seen: dict[str, str] = {}
        for i, (a, b) in enumerate(entries):
            if seen.setdefault(key(a), b) != b:
                raise GlossaryError(f"glossary: {a!r} is given two translations, {seen[key(a)]!r} and {b!r}", i)
        return cls(source.lower(), target.lower(), entries)

    @classmethod
    def read(cls, path: str | Path) -> Glossary:
        """A glossary file (the format above); a GlossaryError names the file and line at fault."""
        try:
            lines = Path(path).read_bytes().decode("utf-8-sig").splitlines()
        except OSError as e:
            raise GlossaryError(f"{path}: cannot read the glossary ({e.strerror or e})") from None
        except UnicodeDecodeError as e:
            raise GlossaryError(f"{path}: not UTF-8 (byte {e.object[e.start]:#x} at offset {e.start})") from None
        rows = [(n, line.split("\t")) for n, line in enumerate(lines, start=1)
                if line.strip() and not line.lstrip().startswith("#")]
        if not rows or len(rows[0][1]) != 2 or not all(re.fullmatch(r"[A-Za-z]{2,3}", c.strip()) for c in rows[0][1]):
            raise GlossaryError(f"{path}, line {rows[0][0] if rows else 1}: the first line must name the two languages, "
                                f"tab-separated (e.g. \"de<TAB>en\")")
        for n, fields in rows[1:]:
            if len(fields) != 2 or not all(f.strip() for f in fields):
                raise GlossaryError(f"{path}, line {n}: expected a term and its translation, separated by one tab")
        (_, (source, target)), pairs = rows[0], [fields for _, fields in rows[1:]]
        try:
            return replace(cls.from_pairs(source.strip(), target.strip(), pairs), path=str(path))
        except GlossaryError as e:
            if e.entry is None:
                raise GlossaryError(f"{path}: {e}") from None
            raise GlossaryError(f"{path}, line {rows[e.entry + 1][0]}: {str(e).removeprefix('glossary: ')}") from None

    def check_model(self, translator) -> None:
        """A GlossaryError unless `translator`'s model translates between the glossary's two languages,
        one way or the other: `terms` would give none for any sentence, and the glossary do nothing."""
        pairs = translator.directions or [(a, b) for a in translator.source_languages for b in translator.languages]
        if (self.source, self.target) not in pairs and (self.target, self.source) not in pairs:
            model = ", ".join(f"{a} -> {b}" for a, b in translator.directions) or ", ".join(translator.languages)
            raise GlossaryError(f"{f'{self.path}: ' if self.path else ''}the glossary is for {self.source} and "
                                f"{self.target}, but this model translates {model}")

    def terms(self, source: str | None, target: str) -> Terms | None:
        """The terms to apply to a sentence in `source` translated into `target`: the entries as given,
        reversed for the other direction (a translation given for two terms keeps the first), or None."""
        if (source, target) == (self.source, self.target):
            return self._forward
        if (source, target) == (self.target, self.source):
            return self._backward
        return None

    @functools.cached_property
    def _forward(self) -> Terms | None:
        return _terms(self.entries)

    @functools.cached_property
    def _backward(self) -> Terms | None:
        return _terms((b, a) for a, b in self.entries)


def _terms(pairs) -> Terms | None:
    translations: dict[str, str] = {}
    written: dict[str, None] = {}
    for a, b in pairs:
        translations.setdefault(key(a), b)
        written[" ".join(a.split())] = None
    return Terms(translations, tuple(written)) if translations else None
