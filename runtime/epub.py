"""EPUB books in, books out (`mt-translate --epub`, `Translator.translate_epub`).

An EPUB is a zip whose container names its package document (the OPF), whose manifest lists the
book's XHTML documents. Each is translated as `--html` translates a page (markup.py), all in one
call, and EPUB 2's table of contents (the NCX) gets its titles translated too. The book's language,
from the package's dc:language, is the source when the model has it (a chapter title alone is hard
to tell), and becomes the target's. Everything else (images, styles, fonts, the mimetype first and
uncompressed) is copied byte for byte. A book with DRM cannot be read, and is refused.
"""

from __future__ import annotations

import posixpath
from urllib.parse import unquote

from .errors import DocumentError
from .messages import keep_spaces
from .office import parse_part, serialize, unzip, write_package

CONTAINER = "META-INF/container.xml"
ENCRYPTION = "META-INF/encryption.xml"
DC = "http://purl.org/dc/elements/1.1/"
OPF = "http://www.idpf.org/2007/opf"
NCX = "http://www.daisy.org/z3986/2005/ncx/"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
PAGES = {"application/xhtml+xml", "text/html"}


def translate_epub(translator, document: bytes, to=None, options=None, *, from_lang: str = "auto", glossary=None,
                   **overrides) -> bytes:
    """`document`, an .epub file's bytes, with the text of its chapters and table of contents translated
    into `to` and all else kept."""
    from . import markup

    entries = unzip(document, "not an .epub (a book is a zip file)")
    package_name = _package_name(entries)
    package = parse_part(package_name, entries[package_name])
    folder = posixpath.dirname(package_name)
    manifest = {posixpath.normpath(posixpath.join(folder, unquote(item.get("href", "")))): item.get("media-type")
                for item in package.iter(f"{{{OPF}}}item")}
    pages = [name for name, kind in manifest.items() if kind in PAGES and name in entries]
    _refuse_drm(entries, pages)
    to = (to or translator.default_language).lower()
    languages = list(package.iter(f"{{{DC}}}language"))
    book = (languages[0].text or "").strip().replace("_", "-").split("-")[0].lower() if languages else ""
    source = book if from_lang == "auto" and book in translator.sources_into(to) else from_lang

    texts = []
    for name in pages:
        try:
            texts.append(entries[name].decode("utf-8"))
        except UnicodeDecodeError as e:
            raise DocumentError(f"{name}: not UTF-8 (byte {e.object[e.start]:#x})") from None
    done = markup.translate_fragments(translator, texts, to, options, from_lang=source, glossary=glossary,
                                      **overrides)
    changed = {name: text.encode("utf-8") for name, text in zip(pages, done)}
    for name, kind in manifest.items():
        if kind == "application/x-dtbncx+xml" and name in entries:
            changed[name] = _contents(translator, parse_part(name, entries[name]), to, options, source, glossary,
                                      overrides)
    for language in languages:
        language.text = to
    if package.get(XML_LANG):
        package.set(XML_LANG, to)
    changed[package_name] = serialize(package)
    return write_package(document, changed)


def _package_name(entries: dict[str, bytes]) -> str:
    """The package document's name, as the container gives it."""
    if CONTAINER not in entries:
        raise DocumentError(f"not an EPUB: the zip has no {CONTAINER}")
    container = parse_part(CONTAINER, entries[CONTAINER])
    names = [r.get("full-path") for r in container.iter() if isinstance(r.tag, str) and r.tag.endswith("rootfile")]
    if not names or names[0] not in entries:
        raise DocumentError(f"not an EPUB: {CONTAINER} names no package document in the zip")
    return names[0]


def _refuse_drm(entries: dict[str, bytes], pages: list[str]) -> None:
    """A TranslationError if a chapter is encrypted (fonts may be: that is only obfuscation)."""
    if ENCRYPTION not in entries:
        return
    encrypted = {unquote(r.get("URI", "")) for r in parse_part(ENCRYPTION, entries[ENCRYPTION]).iter()
                 if isinstance(r.tag, str) and r.tag.endswith("CipherReference")}
    if encrypted & set(pages):
        raise DocumentError("the book is encrypted (DRM): its text cannot be read")


def _contents(translator, ncx, to: str, options, source: str, glossary, overrides: dict) -> bytes:
    """EPUB 2's table of contents with its titles translated."""
    titles = [t for t in ncx.iter(f"{{{NCX}}}text") if (t.text or "").strip()]
    done = translator.translate([t.text for t in titles], to, options, from_lang=source, glossary=glossary,
                                **overrides)
    for title, translation in zip(titles, done):
        title.text = keep_spaces(title.text, translation.text)
    if ncx.get(XML_LANG):
        ncx.set(XML_LANG, to)
    return serialize(ncx)
