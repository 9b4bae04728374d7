"""Whole files by their name: which Translator method translates a file of each kind, and whether it
is read as bytes or as UTF-8 text (`mt-serve`'s /translate_file). A .txt file goes line by line, as
plain `mt-translate` reads it."""

from __future__ import annotations

from pathlib import PurePath

from .errors import DocumentError

METHODS = {
    ".txt": "lines", ".html": "translate_html", ".htm": "translate_html", ".xhtml": "translate_html",
    ".srt": "translate_subtitles", ".vtt": "translate_subtitles", ".md": "translate_markdown",
    ".po": "translate_po", ".pot": "translate_po", ".json": "translate_json", ".arb": "translate_json",
    ".xlf": "translate_xliff", ".xliff": "translate_xliff",
    ".docx": "translate_docx", ".pptx": "translate_pptx", ".xlsx": "translate_xlsx", ".epub": "translate_epub",
    ".odt": "translate_opendocument", ".odp": "translate_opendocument", ".ods": "translate_opendocument",
    ".pdf": "translate_pdf",
}
# The methods that need an extra's modules: without them, their kind is not offered (mt-serve's settings).
NEEDS = {"translate_pdf": ("pypdfium2", "reportlab")}
# The methods that take and give bytes; the others take and give str.
BYTES = {"translate_docx", "translate_pptx", "translate_xlsx", "translate_opendocument", "translate_epub",
         "translate_pdf"}


def supported() -> list[str]:
    """The kinds of file this installation translates: each in METHODS whose extra is installed."""
    import importlib.util
    return [kind for kind, method in METHODS.items()
            if all(importlib.util.find_spec(module) for module in NEEDS.get(method, ()))]


def suffix(name: str) -> str:
    return PurePath(name).suffix.lower()


def translate_file(translator, name: str, data: bytes, to=None, options=None, **settings) -> bytes:
    """The file `name` (its bytes) translated, as bytes of the same kind; a TranslationError for a kind
    not in METHODS, or text that is not UTF-8 (which the caller, knowing where the file came from,
    names, as it does a parser's error)."""
    kind = suffix(name)
    if kind not in METHODS:
        raise DocumentError(f"files of type {kind or '(no extension)'} are not supported; these are: "
                               f"{', '.join(METHODS)}")
    if METHODS[kind] in BYTES:
        return getattr(translator, METHODS[kind])(data, to, options, **settings)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DocumentError(f"not UTF-8 (byte {data[e.start]:#x} at offset {e.start})") from None
    if kind == ".txt":
        lines = text.removeprefix("\ufeff").split("\n")     # as mt-translate reads lines: a BOM dropped
        done = translator.translate([line.rstrip("\r") for line in lines], to, options, **settings)
        translated = "\n".join(tr.text + ("\r" if line.endswith("\r") else "") for tr, line in zip(done, lines))
    else:       # a document's method keeps its byte-order mark (Translator._document)
        translated = getattr(translator, METHODS[kind])(text, to, options, **settings)
    return translated.encode("utf-8")
