"""mt-tui's "translate a file" dialog (ctrl+t), on the real runtime and the committed fixture model,
greedy, on sentences it reproduces exactly on every CPU: real files in, real files out, stopping and
going on, and every refusal said in the dialog."""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from pathlib import Path

from office_files import docx, paragraph, texts
from textual.widgets import Input, Label

from conftest import ENGLISH, GERMAN
from mtkit.runtime import decode_cache
from mtkit.tui.app import MTApp
from mtkit.tui.file_screen import FileJob, TranslateFileScreen, default_target
from mtkit.tui.given_glossary import GivenGlossary
from mtkit.tui.pilot import settle
from mtkit.tui.state import DecodeSettings
from test_tui import run_async


@contextlib.asynccontextmanager
async def file_dialog(fixture_bundle, glossary: GivenGlossary | None = None):
    """The app on the fixture model, de → en, greedy, with the dialog open."""
    app = MTApp(model_path=fixture_bundle, provider="cpu", variant="fp32", debounce=0.05, direction=("de", "en"),
                glossary=glossary)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.settings = DecodeSettings(mode="greedy")
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert isinstance(app.screen, TranslateFileScreen)
        yield app, pilot


async def translate(pilot, source: Path, target: Path | None = None) -> str:
    """Give `source` (enter), the target if given (else the one proposed), enter; the status once done."""
    screen = pilot.app.screen
    screen.query_one("#file-source", Input).value = str(source)
    screen.query_one("#file-source", Input).focus()
    await pilot.press("enter")
    if target is not None:
        screen.query_one("#file-target", Input).value = str(target)
    await pilot.press("enter")
    await settle(pilot)
    return status(screen)


def status(screen) -> str:
    return str(screen.query_one("#file-status", Label).render())


@run_async
async def test_a_word_document_is_translated_into_a_file_beside_it(fixture_bundle, tmp_path):
    (tmp_path / "brief.de.docx").write_bytes(docx(paragraph(GERMAN[0]) + paragraph(GERMAN[1])))
    async with file_dialog(fixture_bundle) as (app, pilot):
        said = await translate(pilot, tmp_path / "brief.de.docx")
        assert app.screen.query_one("#file-target", Input).value == str(tmp_path / "brief.en.docx")
        assert re.fullmatch(rf"Wrote {re.escape(str(tmp_path / 'brief.en.docx'))} in \d+\.\d s\.", said)
        assert texts((tmp_path / "brief.en.docx").read_bytes()) == ENGLISH[:2]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["brief.de.docx", "brief.en.docx"]   # no cache left
        await pilot.press("escape")
        assert not isinstance(app.screen, TranslateFileScreen)


@run_async
async def test_a_file_is_translated_with_the_glossary_given(fixture_bundle, tmp_path):
    """mt-tui --glossary: a file translated with ctrl+t has the glossary's terms, as the live translation has."""
    (tmp_path / "terms.tsv").write_text("de\ten\nBananen\tplantains\n", encoding="utf-8")
    banana = GERMAN.index("Bananen sind lecker.")
    (tmp_path / "menu.docx").write_bytes(docx(paragraph(GERMAN[banana]) + paragraph(GERMAN[0])))
    async with file_dialog(fixture_bundle, GivenGlossary.read(str(tmp_path / "terms.tsv"))) as (app, pilot):
        assert "de → en, with the glossary:" in str(app.screen.query_one(Label).render())
        said = await translate(pilot, tmp_path / "menu.docx")
        # No count: it said "3 sentences" for 2, the banana sentence decoded twice (as it is, then, lacking
        # the term, with it behind a placeholder: Translator._decode_again)
        assert said.startswith(f"Wrote {tmp_path / 'menu.en.docx'} in ")
        first, second = texts((tmp_path / "menu.en.docx").read_bytes())
        assert "lantains" in first and "Banana" not in first and second == ENGLISH[0]


@run_async
async def test_a_stopped_translation_keeps_its_sentences_and_goes_on(fixture_bundle, tmp_path):
    """Stopped after its first batch (escape, here set before the start), a text file is not written;
    its sentences are kept beside it, and translating it again reads them instead of decoding."""
    source, target = tmp_path / "lines.txt", tmp_path / "lines.en.txt"
    source.write_text("\n".join(GERMAN[:6]) + "\n", encoding="utf-8")
    async with file_dialog(fixture_bundle) as (app, pilot):
        screen = app.screen
        stop = threading.Event()
        stop.set()
        await asyncio.to_thread(screen.translate, FileJob(source, target, ("de", "en"), screen.options, stop))
        await pilot.pause()
        kept = decode_cache.beside(target)
        assert status(screen).startswith("Stopped: the ") and not target.exists() and kept.exists()
        said = await translate(pilot, source, target)
        assert said.startswith(f"Wrote {target} in ") and re.search(r"going on from the \d sentences decoded before\.$", said)
        assert target.read_text(encoding="utf-8") == "\n".join(ENGLISH[:6]) + "\n"
        assert not kept.exists()


@run_async
async def test_what_cannot_be_translated_is_said_in_the_dialog(fixture_bundle, tmp_path):
    (tmp_path / "old.doc").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")
    (tmp_path / "broken.docx").write_bytes(b"PK\x03\x04 not a zip at all")
    (tmp_path / "latin1.txt").write_bytes("Grüße\n".encode("latin-1"))
    (tmp_path / "ok.txt").write_text(GERMAN[0], encoding="utf-8")
    cases = [(tmp_path / "missing.txt", None, "no such file"),
             (tmp_path, None, f"{tmp_path}: is a directory; name a file in it"),
             ("", "", "Name the file to translate."),
             (tmp_path / "ok.txt", "", "Name the file its translation goes to."),
             (tmp_path / "old.doc", None, "files of type .doc are not translated; these are: .txt, "),
             (tmp_path / "ok.txt", tmp_path / "ok.txt", "that is the file to translate"),
             (tmp_path / "ok.txt", tmp_path / "ok.docx", "the translation is a .txt file"),
             (tmp_path / "ok.txt", tmp_path / "no" / "ok.en.txt", "cannot write"),
             (tmp_path / "broken.docx", None, "broken.docx: not a .docx (a Word document is a zip file)"),
             (tmp_path / "latin1.txt", None, "latin1.txt: not UTF-8 (byte 0xfc at offset 2)")]
    async with file_dialog(fixture_bundle) as (app, pilot):
        for source, target, message in cases:
            said = await translate(pilot, source, target)
            assert message in said and said.count(Path(source).name or "-") <= 1, (source, said)
            assert app.screen.query_one("#file-status", Label).has_class("error")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.docx", "latin1.txt", "ok.txt", "old.doc"]


@run_async
async def test_an_existing_file_is_replaced_only_on_a_second_enter(fixture_bundle, tmp_path):
    """The proposed name may be a translation corrected by hand: enter, enter wrote over it unasked."""
    source, target = tmp_path / "lines.txt", tmp_path / "lines.en.txt"
    source.write_text(GERMAN[0] + "\n", encoding="utf-8")
    target.write_text("corrected by hand\n", encoding="utf-8")
    async with file_dialog(fixture_bundle) as (app, pilot):
        said = await translate(pilot, source)
        assert said == f"{target} exists: enter again replaces it."
        assert target.read_text(encoding="utf-8") == "corrected by hand\n"
        await pilot.press("enter")
        await settle(pilot)
        assert status(app.screen).startswith(f"Wrote {target} in ")
        assert target.read_text(encoding="utf-8") == ENGLISH[0] + "\n"


@run_async
async def test_without_a_model_the_key_says_so(tmp_path):
    app = MTApp(model_path=None, load_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert not isinstance(app.screen, TranslateFileScreen)
        assert any("No model loaded" in str(n.message) for n in app._notifications)


def test_the_translation_is_named_after_its_source():
    languages = {"de", "en"}
    assert default_target(Path("a/bericht.docx"), "en", languages) == Path("a/bericht.en.docx")
    assert default_target(Path("bericht.de.docx"), "en", languages) == Path("bericht.en.docx")
    assert default_target(Path("v1.2.txt"), "de", languages) == Path("v1.2.de.txt")
    assert default_target(Path("notes"), "de", languages) == Path("notes.de")
