"""Checks on the arguments of `Translator`'s calls (mt-serve and mt-tui use some too): a clear error,
never a traceback from deep inside a batch."""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping

from .errors import TranslationError


def as_texts(texts: Iterable[str] | str) -> Iterable[str]:
    """The texts of a call: a str is one text; bytes are refused (iterated, they would be numbers)."""
    if isinstance(texts, str):
        return [texts]
    if isinstance(texts, (bytes, bytearray)):
        raise TranslationError(f"texts must be str, not {type(texts).__name__} (decode them first)")
    if isinstance(texts, Mapping) or not isinstance(texts, Iterable):     # a dict would give its keys
        raise TranslationError(f"texts must be a str or an iterable of str, not {type(texts).__name__}")
    return texts


def language_code(code: str | None) -> str | None:
    """Language codes are case-insensitive: "DE" is "de", as bundles spell them."""
    return code.lower() if isinstance(code, str) else code


def check_glossary(glossary) -> None:
    if glossary is None:
        return
    from .glossary import Glossary          # only with a glossary: off the start-up path
    if not isinstance(glossary, Glossary):
        raise TypeError(f"glossary must be a Glossary (Glossary.read(path) or Glossary.from_pairs(...)), "
                        f"not {type(glossary).__name__}")


def prefixes_for(prefix: str | list[str | None] | None, n: int, first: int = 1) -> list[str | None]:
    """`translate`'s `prefix`, one per text: a str for every text, a list of one each, None for none.
    `first`: the number of the first text, in messages."""
    if prefix is None or isinstance(prefix, str):
        return [prefix] * n
    if not isinstance(prefix, (list, tuple)):
        raise TranslationError(f"prefix must be a str, a list of one per text, or None, not {type(prefix).__name__}")
    if len(prefix) != n:
        raise TranslationError(f"prefix has {len(prefix)} entries for {n} texts: give one per text (None for none)")
    for i, p in enumerate(prefix):
        if p is not None and not isinstance(p, str):
            raise TranslationError(f"the prefix of text {first + i} is a {type(p).__name__}, not a str")
    return list(prefix)


def check_flag(name: str, value) -> None:
    """A TypeError unless `value` is True or False: a string such as "false" would count as true."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {type(value).__name__} ({value!r})")


def check_count(name: str, value, optional: bool = False, most: int | None = None) -> None:
    """A TypeError unless `value` is an int (or None, when optional), a TranslationError if under 1 or
    over `most`."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 1:
        raise TranslationError(f"{name} must be at least 1, not {value}")
    if most is not None and value > most:
        raise TranslationError(f"{name} must be at most {most}, not {value}")
