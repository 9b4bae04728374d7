"""EPUB books (runtime/epub.py): `Translator.translate_epub` and `mt-translate --epub`. GERMAN[i] -> ENGLISH[i]
is what the fixture model reproduces on any CPU (greedy), so texts are asserted exactly; everything else
in the book must come back as it was."""

from __future__ import annotations

import io
import warnings
import zipfile

import pytest
from office_files import PNG

from conftest import ENGLISH, GERMAN, ORT_THREADS, invoke
from mtkit.runtime import TranslationError
from mtkit.runtime.cli import main

GREEDY = {"beam_size": 1}
CSS = b"p { text-indent: 1em }"


def chapter(*paragraphs: str, language: str = "de", title: str = GERMAN[9]) -> str:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html>\n'
            f'<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="{language}" lang="{language}">\n'
            f'<head><title>{title}</title><link rel="stylesheet" href="style.css"/></head>\n<body>\n'
            + "".join(f"  <p>{p}</p>\n" for p in paragraphs) + '  <img src="bild.png" alt=""/>\n</body>\n</html>\n')


def book(chapters: list[str], titles: list[str] = (), language: str = "de", encrypted: list[str] = ()) -> bytes:
    """An EPUB 2 book: its chapters (XHTML), a table of contents with `titles`, a stylesheet and a picture."""
    items = "".join(f'<item id="c{n}" href="kapitel{n}.xhtml" media-type="application/xhtml+xml"/>'
                    for n in range(len(chapters)))
    spine = "".join(f'<itemref idref="c{n}"/>' for n in range(len(chapters)))
    package = ('<?xml version="1.0" encoding="UTF-8"?>\n<package xmlns="http://www.idpf.org/2007/opf" version="2.0" '
               'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
               f'<dc:title>Ein Buch</dc:title><dc:language>{language}</dc:language><dc:identifier id="id">x'
               f'</dc:identifier></metadata><manifest>{items}'
               '<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
               '<item id="css" href="style.css" media-type="text/css"/>'
               '<item id="png" href="bild.png" media-type="image/png"/></manifest>'
               f'<spine toc="ncx">{spine}</spine>'
               '</package>')
    points = "".join(f'<navPoint id="n{n}" playOrder="{n + 1}"><navLabel><text>{t}</text></navLabel>'
                     f'<content src="kapitel{n}.xhtml"/></navPoint>' for n, t in enumerate(titles))
    ncx = ('<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><head/>'
           f'<docTitle><text>Ein Buch</text></docTitle><navMap>{points}</navMap></ncx>')
    entries = {"META-INF/container.xml": '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
                                         'version="1.0"><rootfiles><rootfile full-path="OEBPS/content.opf" '
                                         'media-type="application/oebps-package+xml"/></rootfiles></container>',
               "OEBPS/content.opf": package, "OEBPS/toc.ncx": ncx, "OEBPS/style.css": CSS, "OEBPS/bild.png": PNG,
               **{f"OEBPS/kapitel{n}.xhtml": c for n, c in enumerate(chapters)}}
    if encrypted:
        entries["META-INF/encryption.xml"] = (
            '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
            'xmlns:enc="http://www.w3.org/2001/04/xmlenc#">' + "".join(
                f'<enc:EncryptedData><enc:CipherData><enc:CipherReference URI="{u}"/></enc:CipherData>'
                '</enc:EncryptedData>' for u in encrypted) + "</encryption>")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        for name, data in entries.items():
            z.writestr(name, data)
    return out.getvalue()


def read(document: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(document)) as z:
        return {info.filename: z.read(info) for info in z.infolist()}


def test_chapters_and_contents_are_translated_and_all_else_kept(fixture_translator):
    source = book([chapter(GERMAN[0], f"{GERMAN[1]} {GERMAN[2]}"), chapter(GERMAN[3])], titles=[GERMAN[4], GERMAN[5]])
    out = fixture_translator.translate_epub(source, "en", **GREEDY)
    before, after = read(source), read(out)
    assert list(after) == list(before)
    with zipfile.ZipFile(io.BytesIO(out)) as z:
        first = z.infolist()[0]
        assert (first.filename, first.compress_type) == ("mimetype", zipfile.ZIP_STORED)   # as readers need it
    for name in ("OEBPS/style.css", "OEBPS/bild.png", "META-INF/container.xml", "mimetype"):
        assert after[name] == before[name]
    english = {"language": "en", "title": ENGLISH[9]}
    assert after["OEBPS/kapitel0.xhtml"].decode() == chapter(ENGLISH[0], f"{ENGLISH[1]} {ENGLISH[2]}", **english)
    assert after["OEBPS/kapitel1.xhtml"].decode() == chapter(ENGLISH[3], **english)
    contents = after["OEBPS/toc.ncx"].decode()
    assert f"<text>{ENGLISH[4]}</text>" in contents and f"<text>{ENGLISH[5]}</text>" in contents
    package = after["OEBPS/content.opf"].decode()
    assert "<dc:language>en</dc:language>" in package and "<dc:title>Ein Buch</dc:title>" in package


def test_the_books_language_is_the_source_of_every_chapter(fixture_translator):
    """A title of a word or two is hard to tell alone (GERMAN[6] reads as French or German): the book's
    dc:language says what it is, and nothing is left to detect."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = read(fixture_translator.translate_epub(book([chapter(GERMAN[6])]), "en", **GREEDY))
    assert ENGLISH[6] in out["OEBPS/kapitel0.xhtml"].decode() and not caught


def test_drm_is_refused_and_obfuscated_fonts_are_not(fixture_translator):
    with pytest.raises(TranslationError, match="encrypted \\(DRM\\)"):
        fixture_translator.translate_epub(book([chapter(GERMAN[0])], encrypted=["OEBPS/kapitel0.xhtml"]), "en")
    out = fixture_translator.translate_epub(book([chapter(GERMAN[0])], encrypted=["OEBPS/font.otf"]), "en", **GREEDY)
    assert ENGLISH[0] in read(out)["OEBPS/kapitel0.xhtml"].decode()


def test_what_is_not_an_epub_is_a_clear_error(fixture_translator):
    with pytest.raises(TranslationError, match="not an .epub"):
        fixture_translator.translate_epub(b"plain text", "en")
    entries = read(book([chapter(GERMAN[0])]))
    for missing, message in (("META-INF/container.xml", "no META-INF/container.xml"),
                             ("OEBPS/content.opf", "names no package document")):
        damaged = io.BytesIO()
        with zipfile.ZipFile(damaged, "w") as z:
            for name, data in entries.items():
                if name != missing:
                    z.writestr(name, data)
        with pytest.raises(TranslationError, match=message):
            fixture_translator.translate_epub(damaged.getvalue(), "en")
    entries = read(book([chapter(GERMAN[0])]))
    entries["OEBPS/kapitel0.xhtml"] = chapter("Grüße").encode("latin-1")
    damaged = io.BytesIO()
    with zipfile.ZipFile(damaged, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    with pytest.raises(TranslationError, match="kapitel0.xhtml: not UTF-8"):
        fixture_translator.translate_epub(damaged.getvalue(), "en")


def test_cli_translates_a_book(fixture_bundle, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("MT_MODEL", str(fixture_bundle))
    (tmp_path / "buch.epub").write_bytes(book([chapter(GERMAN[0])]))
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), "--beam-size", "1", "--epub", "-i",
                                   str(tmp_path / "buch.epub"), "-o", str(tmp_path / "book.epub")], capsys)
    assert (code, out, err) == (0, "", "")
    assert ENGLISH[0] in read((tmp_path / "book.epub").read_bytes())["OEBPS/kapitel0.xhtml"].decode()
