"""JSON string files in, JSON out (`mt-translate --json`, `Translator.translate_json`): the string
values of a locale file (i18next, vue-i18n, a Chrome or VS Code extension's messages, Flutter's ARB)
translated, and its keys, nesting, order, other values and indentation kept.

Keys starting with "@" hold metadata (ARB's "@key": {"description": ...}) and are kept as they
are, but for ARB's "@@locale", which becomes the target language. Values are translated as
messages.py says (line by line, their spaces kept), and what a program fills in ("{{count}}",
"{name}", "%s") comes through as written (runtime/protect.py). ICU MessageFormat's plural and select
("{n, plural, one {# file} other {# files}}") are translated branch by branch, each as a whole
sentence (runtime/icu.py); one whose braces do not match is kept and named in a warning.
"""

from __future__ import annotations

import json
import math
import re
import warnings

from . import icu
from .errors import DocumentError
from .language_id import has_letters
from .messages import translate_messages, with_line_ends_of

MAX_DEPTH = 200         # levels of nesting read: a locale file has a few, and the walks below recurse


class JsonWarning(UserWarning):
    """A string value kept untranslated (an ICU plural or select that cannot be read)."""


def translate_json(translator, document: str, to=None, options=None, *, from_lang: str = "auto", glossary=None,
                   **overrides) -> str:
    """`document` (JSON) with its string values translated into `to` and all else kept."""
    if not document.strip():
        return document
    too_deep = DocumentError(f"JSON nested more than {MAX_DEPTH} levels deep is not read")
    try:
        data = json.loads(document, object_pairs_hook=_object, parse_float=_float)
    except json.JSONDecodeError as e:
        raise DocumentError(f"not JSON: {e}") from None
    except RecursionError:                       # json's own parser gives up near 1,000 levels
        raise too_deep from None
    if _depth(data) > MAX_DEPTH:
        raise too_deep
    to = to or translator.default_language
    found: list[str] = []
    choices: dict[str, icu.Message] = {}
    _strings(data, found, choices, "")
    translated = translate_messages(translator, found, to, options, from_lang=from_lang, glossary=glossary,
                                    **overrides)
    data = _replaced(data, translated, choices)
    if isinstance(data, dict) and isinstance(data.get("@@locale"), str):
        data["@@locale"] = to                    # an ARB file names its language
    # Every "\n" json writes is between values (one in a string is escaped): each ends as the file's lines do.
    out = json.dumps(data, ensure_ascii=False, indent=indentation(document))
    return with_line_ends_of(document, out + ("\n" if document.endswith("\n") else ""))


def _object(pairs: list[tuple[str, object]]) -> dict:
    """An object read, refused if a key is written twice in it: json keeps the last value and the
    first would be gone from the translation, unsaid."""
    data = dict(pairs)
    if len(data) < len(pairs):
        twice = next(key for i, (key, _) in enumerate(pairs) if key in (k for k, _ in pairs[:i]))
        raise DocumentError(f"the key {json.dumps(twice, ensure_ascii=False)} is written twice in one object: "
                            f"only one of its values could be written back")
    return data


def _float(text: str) -> float:
    """A number read, refused if too large for a float: written back as Infinity, it is no longer JSON."""
    value = float(text)
    if math.isinf(value):
        raise DocumentError(f"the number {text} is too large to be written back (it would become Infinity)")
    return value


def _depth(value) -> int:
    """How many levels of lists and objects `value` nests, counted without recursing."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, depth)
            stack += [(item, depth + 1) for item in (value.values() if isinstance(value, dict) else value)]
    return deepest


def _strings(value, found: list[str], choices: dict[str, icu.Message], path: str) -> None:
    """The texts to translate under `value`, into `found`, and each ICU choice read, into `choices`; a
    warning for each string kept."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not key.startswith("@"):
                _strings(item, found, choices, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _strings(item, found, choices, f"{path}[{i}]")
    elif isinstance(value, str) and has_letters(value):
        if not icu.has_choice(value):
            found.append(value)
            return
        try:
            choices[value] = icu.parse(value)
            found += icu.texts(choices[value])
        except ValueError as e:
            warnings.warn(f"{path}: kept untranslated: an ICU plural or select that cannot be read ({e})",
                          JsonWarning, stacklevel=2)


def _replaced(value, translated: dict[str, str], choices: dict[str, icu.Message]):
    """`value` with each string in `translated` replaced, and each choice in `choices` written again with
    its texts translated (keys starting with "@" as they are)."""
    if isinstance(value, dict):
        return {k: v if k.startswith("@") else _replaced(v, translated, choices) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, translated, choices) for v in value]
    if not isinstance(value, str):
        return value
    if value in choices:
        return icu.rebuild(choices[value], lambda text: translated.get(text, text))
    return translated.get(value, value)


def indentation(document: str) -> int | str | None:
    """The indent of the document's first indented line (spaces counted, or a tab); None for JSON on
    one line."""
    found = re.search(r"\n([ \t]+)\S", document)
    if not found:
        return None
    indent = found.group(1)
    return "\t" if indent.startswith("\t") else len(indent)
