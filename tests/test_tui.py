"""mt-tui, driven by Textual's Pilot.

Most tests run the app on `StandIn`, a translator defined here: the app loads it through its own
load worker (the stand-in replaces `mtkit.runtime.Translator`, which that worker imports), and
translates through its debounce timer, translate worker and generation checks, exactly as with a
real Translator. The stand-in's output is deterministic and names the target language, with a
settable delay, so these tests are instant and the same on every machine. Two end-to-end tests
run the real runtime on the committed fixture model (`fixture_bundle`), on sentences it
reproduces exactly on every CPU. Snapshot tests pin the layout in states with no model and no
timings.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import io
import os
import pty
import re
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from rich.console import Console
from textual.app import App, ComposeResult
from textual.widgets import Input, TextArea

import mtkit.runtime
from conftest import ENGLISH, GERMAN, PAIRS
from mtkit.runtime import (Alignment, BundleConfig, DecodeOptions, Hypothesis, ModelLoadError, ProviderError,
                           Translation, TranslationError, Translator)
from mtkit.runtime import language_id
from mtkit.runtime.sentences import split
from mtkit.tui.alignment_view import MAX_TOKENS, AlignmentView
from mtkit.tui.app import MTApp
from mtkit.tui.given_glossary import GivenGlossary
from mtkit.tui.pilot import settle as pilot_settle
from mtkit.tui.screens import HelpScreen, OpenModelScreen, help_text
from mtkit.tui.state import (MAX_INPUT_CHARS, SAMPLING_TEMPERATURE, SAMPLING_TOP_P, History, Outcome,
                             alignment_blocks)

SIZE = (120, 40)


def run_async(test):
    """Run an async test with asyncio.run (the suite has no async pytest plugin)."""
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        asyncio.run(test(*args, **kwargs))
    return wrapper


async def settle(pilot) -> None:
    await pilot_settle(pilot, checks=500)
    assert not pilot.app.busy


async def type_text(pilot, text: str) -> None:
    """Key by key, as a person types (slow under the Pilot: ~0.1 s a key on a busy machine)."""
    await pilot.click("#source")
    await pilot.press(*["space" if c == " " else c for c in text])


async def paste(pilot, text: str) -> None:
    """Insert at the cursor in one edit, as a paste does: the same Changed event as typing."""
    pilot.app.query_one("#source", TextArea).insert(text)
    await pilot.pause()


async def replace_source(pilot, text: str) -> None:
    """Replace the whole source (select all + paste): one Changed event."""
    pilot.app.query_one("#source", TextArea).load_text(text)
    await pilot.pause()


def shown(app, selector: str) -> str:
    """The plain text a Static widget shows (a string, rich Text or a rich Table)."""
    console = Console(width=200, file=io.StringIO(), record=True, color_system=None)
    console.print(app.query_one(selector).content, markup=False)
    return console.export_text()


# ----- the stand-in translator ------------------------------------------------------------------

STAND_IN = "stand-in-bundle"    # the only path StandIn opens; the real runtime would refuse it


@contextlib.asynccontextmanager
async def running_app(size=SIZE, model_path=STAND_IN, provider="cpu", debounce=0.05, **kwargs):
    """MTApp under the Pilot at `size`, settled (its model loaded, or failed to); kwargs are MTApp's."""
    app = MTApp(model_path=model_path, provider=provider, debounce=debounce, **kwargs)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        yield app, pilot


def fake(text: str, to: str) -> str:
    """StandIn's translation of one line: reversed, tagged with the target language."""
    return f"[{to}] {text[::-1]}"


@dataclass
class Call:
    texts: list[str]
    to: str | None
    options: DecodeOptions  # the options the app asked for (with any keyword overrides applied)
    from_lang: str = "auto"
    prefix: object = None   # translate's prefix: None, or one per text
    glossary: object = None  # translate's glossary


class StandIn:
    """Has what the TUI uses of `runtime.Translator`: the same constructor and `translate`
    signatures, `path`, `provider`, `provider_note`, `variant`, `config` (a real BundleConfig)
    and `languages`; returns the runtime's own Translation / Hypothesis / Alignment objects.
    `delay` (seconds) makes each translate call slow; `gate` (a threading.Event), when given, holds
    each call until the test sets it; `fail_with` makes it raise. CUDA never
    initializes, as on a machine without it. Every call is recorded in `calls`."""

    loads: list[tuple[str | None, str]] = []    # (path, provider) of every construction, per test

    def __init__(self, path=None, provider: str = "cpu", threads: int | None = None, variant: str = "auto"):
        type(self).loads.append((None if path is None else str(path), provider))
        if path is None or Path(str(path)).name != STAND_IN:
            raise ModelLoadError(f"{path}: no such file or directory")
        if provider == "cuda":
            raise ProviderError("CUDA was requested but this onnxruntime build has no CUDAExecutionProvider")
        self.path = Path(str(path))
        self.provider = "cpu"
        self.provider_note = "this onnxruntime build has no CUDA provider" if provider == "auto" else ""
        self.variant = "fp32" if variant == "auto" else variant
        self.config = BundleConfig(
            vocab_size=500, d_model=64, n_heads=4, head_dim=16, encoder_layers=2, decoder_layers=2,
            max_positions=64, special_ids={"pad": 0, "unk": 1, "bos": 2, "eos": 3},
            language_tags={"de": 4, "en": 5}, directions=[["de", "en"], ["en", "de"]],
            variants={"fp32": {"precision": "fp32"}})
        self.languages = self.source_languages = ["de", "en"]
        self.directions = [("de", "en"), ("en", "de")]
        self.delay = 0.0
        self.gate: threading.Event | None = None
        self.fail_with: Exception | None = None
        self.calls: list[Call] = []

    def translate(self, texts, to=None, options=None, *, from_lang="auto", prefix=None, glossary=None,
                  **overrides) -> list[Translation]:
        # Whatever the app passes must be something the real Translator.translate accepts.
        inspect.signature(Translator.translate).bind(self, texts, to, options, from_lang=from_lang, prefix=prefix,
                                                     glossary=glossary, **overrides)
        options = replace(options or DecodeOptions(), **overrides)      # checked as the runtime checks them
        self.calls.append(Call(list(texts), to, options, from_lang, prefix, glossary))
        time.sleep(self.delay)
        if self.gate is not None and not self.gate.wait(timeout=60):
            raise TimeoutError("the test never released the stand-in translator")
        if self.fail_with is not None:
            raise self.fail_with
        if to not in self.languages:
            raise TranslationError(f"this model cannot translate into {to!r}")
        prefixes = prefix if isinstance(prefix, list) else [prefix] * len(texts)
        return [self._translation(text, to, options.num_hypotheses, options.return_alignment, start)
                for text, start in zip(texts, prefixes)]

    @staticmethod
    def _translation(text: str, to: str, n: int, alignment: bool, prefix: str | None = None) -> Translation:
        best = fake(text, to)
        if prefix:               # the user's start, then the stand-in's translation from as far on
            best = prefix.rstrip() + best[len(prefix.rstrip()):]
        hyps = [Hypothesis(best if k == 0 else f"{best} (alternative {k + 1})",
                           ["▁" + w for w in best.split()], -0.25 * (k + 1)) for k in range(n)]
        source = [f"<2{to}>", *("▁" + w for w in text.split()), "</s>"]
        target = [*hyps[0].tokens, "</s>"]
        weights = [[1.0 if j == len(source) - 1 - min(i, len(source) - 1) else 0.0 for j in range(len(source))]
                   for i in range(len(target))]
        return Translation(best, hyps[0].tokens, hyps[0].score, hyps,
                           Alignment(source, target, weights) if alignment else None,
                           source=text, num_tokens=len(hyps[0].tokens), timings={"decode_ms": 0.0})


@pytest.fixture
def stand_in(monkeypatch):
    """The app's load worker builds a StandIn wherever it would build a runtime Translator."""
    monkeypatch.setattr(StandIn, "loads", [])
    monkeypatch.setattr(mtkit.runtime, "Translator", StandIn)
    return StandIn


# ----- behaviour, on the stand-in ---------------------------------------------------------------

@run_async
async def test_typing_translates_once_after_the_pause(stand_in):
    # Every key restarts the debounce timer: typing translates once, after the last key.
    async with running_app(debounce=1.0) as (app, pilot):
        translator = app.translator
        assert isinstance(translator, StandIn) and stand_in.loads == [(STAND_IN, "cpu")]
        # No --from: the source language is detected (from_lang "auto"), as by mt-translate.
        assert app.direction == ("auto", "en") and "in use: CPU" in shown(app, "#in-use")
        await type_text(pilot, "Hallo Welt")
        assert app.source_text == "Hallo Welt"
        assert translator.calls == [] and app.busy and app.target_text == ""    # still within the pause
        await settle(pilot)
        assert translator.calls == [Call(["Hallo Welt"], "en",
                                         DecodeOptions(beam_size=4, num_hypotheses=4, return_alignment=True))]
        assert app.target_text == fake("Hallo Welt", "en")
        assert app.outcome.source == "Hallo Welt" and app.outcome.direction == ("auto", "en")
        stats = shown(app, "#stats")
        assert "ms" in stats and "tokens/s" in stats and "3 tokens" in stats and "beam 4 · CPU" in stats
        # n-best: beam 4 lists 4 alternatives of the line under the cursor, best first, with scores.
        panel = shown(app, "#alternatives")
        hyps = app.outcome.results[0].hypotheses
        assert len(hyps) == 4 and hyps[0].text == app.target_text
        assert all(h.text in panel and f"{h.score:.3f}" in panel for h in hyps)


@run_async
async def test_translate_key_and_stale_results(stand_in):
    # A debounce far beyond the test: only F5 can translate.
    async with running_app(debounce=600) as (app, pilot):
        translator = app.translator
        await paste(pilot, "Hallo Welt")
        assert app.target_text == "" and app.busy and translator.calls == []   # waiting on the timer
        await pilot.press("f5")
        await settle(pilot)
        assert app.target_text == fake("Hallo Welt", "en") and len(translator.calls) == 1
        # Slow decoding: while "Erster Satz" decodes, the text changes twice. Its result comes
        # back stale and is dropped; "Zweiter Satz" goes stale waiting for the decoder and is
        # never decoded; only the newest text is translated and shown.
        translator.gate = threading.Event()     # decoding holds until the edits below have landed
        await replace_source(pilot, "Erster Satz")
        await pilot.press("f5")
        for _ in range(250):
            if len(translator.calls) == 2:
                break
            await pilot.pause(0.02)
        assert translator.calls[-1].texts == ["Erster Satz"]           # decoding now
        await replace_source(pilot, "Zweiter Satz")
        await pilot.press("f5")
        await replace_source(pilot, "Dritter Satz")
        await pilot.press("f5")
        translator.gate.set()
        await settle(pilot)
        assert [c.texts for c in translator.calls] == [["Hallo Welt"], ["Erster Satz"], ["Dritter Satz"]]
        assert app.target_text == fake("Dritter Satz", "en") and app.outcome.source == "Dritter Satz"
        # Had the stale result been shown, even briefly, the history would have recorded it.
        assert [e.source for e in app.history.entries] == ["Dritter Satz", "Hallo Welt"]


@run_async
async def test_direction_switch(stand_in):
    async with running_app(direction=("de", None)) as (app, pilot):
        translator = app.translator
        assert app.directions == [("auto", "en"), ("auto", "de"), ("de", "en"), ("en", "de")]
        assert app.direction == ("de", "en")
        await paste(pilot, "Wir treffen uns.")
        await settle(pilot)
        assert app.target_text == fake("Wir treffen uns.", "en") and translator.calls[-1].from_lang == "de"
        await pilot.press("f3")           # next direction: en -> de, the text stays, translated again at once
        await settle(pilot)
        assert app.direction == ("en", "de") and app.outcome.direction == ("en", "de")
        assert app.query_one("#source", TextArea).border_title == "English (en)"
        assert app.query_one("#target", TextArea).border_title == "German (de)"
        assert translator.calls[-1].to == "de" and translator.calls[-1].from_lang == "en" and len(translator.calls) == 2
        assert app.target_text == fake("Wir treffen uns.", "de")
        # Swap: the translation becomes the source and the direction reverses (one translation).
        german_output = app.target_text
        await pilot.press("f2")
        await settle(pilot)
        assert app.direction == ("de", "en")
        assert app.source_text == german_output
        assert translator.calls[-1] == Call([german_output], "en", translator.calls[0].options, "de")
        assert len(translator.calls) == 3
        assert app.target_text == fake(german_output, "en")


@run_async
async def test_history_restores(stand_in):
    async with running_app() as (app, pilot):
        translator = app.translator
        await paste(pilot, "Tom ist hier.")
        await settle(pilot)
        await pilot.press("ctrl+l")
        await settle(pilot)
        assert app.source_text == "" and app.target_text == ""
        await pilot.press("f3")             # the second entry goes the other way: auto -> de
        await paste(pilot, "Where is Tom?")
        await settle(pilot)
        assert app.target_text == fake("Where is Tom?", "de")
        assert [(e.source, e.direction) for e in app.history.entries] == [
            ("Where is Tom?", ("auto", "de")), ("Tom ist hier.", ("auto", "en"))]
        calls = len(translator.calls)
        # Restore the older entry from the History tab with the keyboard: text, result and direction.
        app.query_one("#panels").active = "tab-history"
        await pilot.pause()
        app.query_one("#history").focus()
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.source_text == "Tom ist hier."
        assert app.target_text == fake("Tom ist hier.", "en")
        assert app.direction == ("auto", "en") and app.query_one("#direction").value == ("auto", "en")
        assert app.query_one("#target", TextArea).border_title == "English (en)"
        await settle(pilot)                 # restoring does not translate again
        assert len(translator.calls) == calls
        assert app.target_text == fake("Tom ist hier.", "en") and len(app.history.entries) == 2
        # ctrl+z takes the restore back as a whole: the text, the direction and the translation before it.
        app.query_one("#source").focus()
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert app.source_text == "Where is Tom?" and app.direction == ("auto", "de")
        assert app.target_text == fake("Where is Tom?", "de") and len(translator.calls) == calls


@run_async
async def test_bad_bundle_shows_error(tmp_path):
    # The real runtime's loader: it fails on these before any model is read, on any machine.
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{ not json", encoding="utf-8")
    for path, needle in ((tmp_path / "no-such-model", "no-such-model"), (broken, "config.json")):
        async with running_app(model_path=path) as (app, pilot):
            error = app.query_one("#error")
            assert error.display and needle in str(error.render())
            assert "Cannot load the model" in str(error.render())
            assert app.translator is None
            await paste(pilot, "Hallo")      # typing without a model: no crash, no output
            await settle(pilot)
            assert app.target_text == "" and app.is_running
            assert "No model loaded" in shown(app, "#stats")


@run_async
async def test_opening_a_bad_bundle_keeps_the_loaded_model(stand_in, tmp_path):
    async with running_app() as (app, pilot):
        translator = app.translator
        await pilot.press("ctrl+o")
        assert isinstance(app.screen, OpenModelScreen)
        app.screen.query_one("#open-path", Input).value = str(tmp_path / "elsewhere")
        await pilot.press("enter")
        await settle(pilot)
        assert stand_in.loads[-1] == (str(tmp_path / "elsewhere"), "cpu")
        error = str(app.query_one("#error").render())
        assert "elsewhere" in error and "The previous model stays loaded" in error
        assert app.translator is translator
        await paste(pilot, "Hallo")
        await settle(pilot)
        assert app.target_text == fake("Hallo", "en")


@run_async
async def test_cuda_failure_shows_error(stand_in):
    async with running_app() as (app, pilot):
        translator = app.translator
        await paste(pilot, "Hallo")
        await settle(pilot)
        app.query_one("#provider").value = "cuda"
        await settle(pilot)
        assert stand_in.loads == [(STAND_IN, "cpu"), (STAND_IN, "cuda")]
        error = str(app.query_one("#error").render())
        assert "Cannot use provider 'cuda'" in error and "CUDAExecutionProvider" in error
        assert "Still running on CPU" in error
        # The model already loaded keeps working, and the switch shows what is in use.
        assert app.translator is translator and app.query_one("#provider").value == "cpu"
        assert app.target_text == fake("Hallo", "en")
        await paste(pilot, " Welt")
        await settle(pilot)
        assert app.target_text == fake("Hallo Welt", "en")


@run_async
async def test_the_provider_note_shows_literally_in_its_tooltip(stand_in, monkeypatch):
    """With provider auto and CUDA failing, the note quotes a graph's path: its tooltip read it as markup,
    so hovering 'in use: CPU' dropped '[v2]' from the path, and a '[/x]' in it ended the app in MarkupError."""
    from textual.widgets import Tooltip

    note = ("CUDA did not initialize: CUDA was requested, but ONNX Runtime could not initialize it for "
            "/models/de-en [v2]/run[/x]/decoder.int8.onnx (it fell back to CPUExecutionProvider)")

    class CudaFailed(StandIn):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.provider_note = note

    monkeypatch.setattr(mtkit.runtime, "Translator", CudaFailed)
    app = MTApp(model_path=STAND_IN, provider="auto")
    async with app.run_test(size=SIZE, tooltips=True) as pilot:
        await settle(pilot)
        await pilot.hover("#in-use")
        await pilot.pause(app.TOOLTIP_DELAY)
        for _ in range(100):                # shown after its delay, later on a slow machine
            if (tooltip := app.screen.query_one(Tooltip)).display:
                break
            await pilot.pause(0.1)
        assert tooltip.display and note in str(tooltip.render())


@run_async
async def test_bad_settings_and_failed_translations_show_errors(stand_in):
    async with running_app() as (app, pilot):
        translator = app.translator
        source = app.query_one("#source", TextArea)
        # Overlong input: refused with a message, nothing decoded.
        source.load_text("Tom. " * (MAX_INPUT_CHARS // 5 + 1))
        await settle(pilot)
        assert "too long" in str(app.query_one("#error").render()) and app.target_text == ""
        assert translator.calls == []
        source.load_text("Hallo Welt")
        await settle(pilot)
        assert app.target_text == fake("Hallo Welt", "en")
        assert not app.query_one("#error").display
        # An invalid beam size is reported next to the settings, and nothing is decoded for it.
        app.query_one("#beam").value = "0"
        await settle(pilot)
        # (the rule is DecodeOptions', as for mt-translate's --beam-size, named as the toolbar names it)
        assert "Beam size must be from 1 to 256, not 0" in str(app.query_one("#error").render())
        assert len(translator.calls) == 1
        app.query_one("#beam").value = "2"
        await settle(pilot)
        assert not app.query_one("#error").display
        assert translator.calls[-1].options == DecodeOptions(beam_size=2, num_hypotheses=2, return_alignment=True)
        assert app.outcome.settings == "beam 2" and len(app.outcome.results[0].hypotheses) == 2
        app.query_one("#mode").value = "greedy"
        await settle(pilot)
        assert translator.calls[-1].options == DecodeOptions(beam_size=1, num_hypotheses=1, return_alignment=True)
        assert app.outcome.settings == "greedy" and len(app.outcome.results[0].hypotheses) == 1
        app.query_one("#mode").value = "sampling"
        app.query_one("#temperature").value = "0.5"
        app.query_one("#top-p").value = "0.8"
        await settle(pilot)
        assert translator.calls[-1].options == DecodeOptions(beam_size=1, sampling=True, temperature=0.5,
                                                             top_p=0.8, return_alignment=True)
        assert app.outcome.settings == "sampling T=0.5 top-p 0.8" and app.outcome.results[0].hypotheses
        assert "sampling T=0.5 top-p 0.8" in shown(app, "#stats")
        # A translation that fails is reported; the app keeps running and recovers.
        translator.fail_with = TranslationError("the decoder ran out of memory")
        source.load_text("Noch ein Satz")
        await settle(pilot)
        assert "Translation failed: the decoder ran out of memory" in str(app.query_one("#error").render())
        assert app.target_text == "" and app.outcome is None and app.is_running
        translator.fail_with = None
        await pilot.press("f5")
        await settle(pilot)
        assert app.target_text == fake("Noch ein Satz", "en") and not app.query_one("#error").display


@run_async
async def test_from_and_to_pick_the_first_direction(stand_in):
    """mt-tui --from / --to: the direction shown once the model is loaded; one the model lacks is
    reported and the first direction (auto → en) used."""
    async with running_app(direction=("en", None)) as (app, pilot):
        assert app.direction == ("en", "de") and app.query_one("#direction").value == ("en", "de")
        await paste(pilot, "Wie geht es dir?")
        await settle(pilot)
        # The source language is given, not detected: as `mt-translate --from en`.
        assert app.translator.calls[-1] == Call(["Wie geht es dir?"], "de", app.settings.options(), "en")
    async with running_app(direction=("fr", "de")) as (app, pilot):
        assert app.direction == ("auto", "en")
        assert any("does not translate fr → de" in str(n.message) for n in app._notifications)


@run_async
async def test_copy_and_help(stand_in):
    async with running_app() as (app, pilot):
        await pilot.press("f4")             # nothing to copy yet
        assert app.clipboard == ""
        await paste(pilot, "Hallo Welt")
        await settle(pilot)
        await pilot.press("f4")
        assert app.clipboard == app.target_text == fake("Hallo Welt", "en")
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


@run_async
async def test_errors_show_literally_and_clear_on_the_next_success(stand_in):
    async with running_app() as (app, pilot):
        translator = app.translator
        # Library errors quote [brackets], which Rich markup would take for styles and drop.
        failure = "decoder.onnx: not a usable ONNX model ([ONNXRuntimeError] : 7 : INVALID_PROTOBUF : [b]x[/b])"
        translator.fail_with = TranslationError(failure)
        await paste(pilot, "Hallo")
        await settle(pilot)
        assert f"Translation failed: {failure}" in str(app.query_one("#error").render())
        notes = [n for n in app._notifications if failure in n.message]
        assert notes and not any(n.markup for n in notes)
        # The next translation that works clears it.
        translator.fail_with = None
        await paste(pilot, " Welt")
        await settle(pilot)
        assert app.target_text == fake("Hallo Welt", "en") and not app.query_one("#error").display
        # So it does for a model error: here a switch to a provider this machine lacks.
        app.query_one("#provider").value = "cuda"
        await settle(pilot)
        assert "Cannot use provider 'cuda'" in str(app.query_one("#error").render())
        assert "tokens/s" in shown(app, "#stats")        # the last result's figures, back after "Loading…"
        await paste(pilot, "!")
        await settle(pilot)
        assert app.target_text == fake("Hallo Welt!", "en") and not app.query_one("#error").display


@run_async
async def test_each_panel_has_a_key(stand_in):
    async with running_app() as (app, pilot):
        await paste(pilot, "Hallo Welt")
        await settle(pilot)
        tabs = app.query_one("#panels")
        for key, tab in (("alt+2", "tab-alignment"), ("alt+4", "tab-model"), ("alt+1", "tab-alternatives"),
                         ("alt+3", "tab-history")):
            await pilot.press(key)
            await pilot.pause()
            assert tabs.active == tab, key
        assert app.focused is app.query_one("#history")     # the list to pick from: enter restores
        assert app.source_text == "Hallo Welt"               # the keys typed nothing into the editor
        # The footer names the keys once; help lists each.
        shown_keys = [b.binding for b in app.screen.active_bindings.values() if b.binding.show]
        assert any(b.description == "Panels" and b.key_display == "alt+1…4" for b in shown_keys)
        console = Console(width=200, file=io.StringIO(), record=True, color_system=None)
        console.print(help_text())
        page = console.export_text()
        for key, title in (("alt+1", "Alternatives"), ("alt+2", "Alignment"), ("alt+3", "History"),
                           ("alt+4", "Model")):
            assert re.search(rf"^{re.escape(key)} +{title} panel", page, re.MULTILINE), key


@run_async
async def test_swap_moves_the_translation_and_next_direction_keeps_the_text(stand_in):
    async with running_app() as (app, pilot):
        await pilot.press("f2")             # nothing translated yet: only the direction reverses
        await settle(pilot)
        assert app.direction == ("en", "de") and app.source_text == ""
        await paste(pilot, "Good morning")
        await settle(pilot)
        german = app.target_text
        await pilot.press("f2")             # the German translation moves into the German pane
        await settle(pilot)
        assert app.direction == ("de", "en") and app.source_text == german
        assert app.query_one("#source", TextArea).border_title == "German (de)"
        assert app.target_text == fake(german, "en")
        await pilot.press("f3")             # the text stays, the direction changes
        await settle(pilot)
        assert app.direction == ("en", "de") and app.source_text == german
        assert app.target_text == fake(german, "de")


@run_async
async def test_undo_takes_a_swap_back_as_a_whole(stand_in):
    # ctrl+z right after F2 brings back the text swapped out with its direction and translation; it
    # used to bring back only the text, German under en → de, translated from English as it stood.
    async with running_app() as (app, pilot):
        translator = app.translator
        typed = "Ich habe heute keine Zeit."
        await paste(pilot, typed)
        await settle(pilot)
        english = fake(typed, "en")
        assert app.direction == ("auto", "en") and app.target_text == english
        await pilot.press("f2")
        await settle(pilot)
        assert app.direction == ("en", "de") and app.source_text == english
        assert app.target_text == fake(english, "de")
        calls = len(translator.calls)
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert app.source_text == typed and app.direction == ("auto", "en") and app.target_text == english
        assert app.query_one("#source", TextArea).border_title == "Detect language"
        assert app.query_one("#target", TextArea).border_title == "English (en)"
        assert app.query_one("#direction").value == ("auto", "en")
        assert len(translator.calls) == calls           # shown as it was, not translated again
        await pilot.press("f4")                         # and it counts as the translation of the text
        assert app.clipboard == english
        # ctrl+y does the swap again, direction and all.
        await pilot.press("ctrl+y")
        await settle(pilot)
        assert app.direction == ("en", "de") and app.source_text == english
        assert app.target_text == fake(english, "de") and translator.calls[-1].from_lang == "en"
        # Typing after a swap is an undo step of its own; the undo after it takes the swap back.
        await pilot.press("end", "space", "x")
        await settle(pilot)
        assert app.source_text == english + " x" and app.target_text == fake(english + " x", "de")
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert app.source_text == english and app.direction == ("en", "de")
        assert app.target_text == fake(english, "de")
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert app.source_text == typed and app.direction == ("auto", "en") and app.target_text == english


@run_async
async def test_sampling_starts_from_sensible_settings(stand_in):
    async with running_app() as (app, pilot):
        translator = app.translator
        await paste(pilot, "Hallo Welt")
        await settle(pilot)
        assert not app.query_one("#temperature").parent.display        # beam search: no sampling numbers
        app.query_one("#mode").value = "sampling"
        await settle(pilot)
        # Not DecodeOptions' neutral T = 1 without a nucleus cut, which reads as noise.
        assert (SAMPLING_TEMPERATURE, SAMPLING_TOP_P) == (0.7, 0.9)
        assert translator.calls[-1].options == DecodeOptions(beam_size=1, sampling=True, temperature=0.7, top_p=0.9,
                                                             return_alignment=True)
        assert app.query_one("#temperature").value == "0.7" and app.query_one("#top-p").value == "0.9"
        assert app.query_one("#temperature").parent.display and not app.query_one("#beam").parent.display
        # The bar checks top-p by DecodeOptions' rule, and names it as the bar does.
        app.query_one("#top-p").value = "1.5"
        await settle(pilot)
        assert "Top-p must be in (0, 1], not 1.5" in str(app.query_one("#error").render())
        assert translator.calls[-1].options.top_p == 0.9


@run_async
async def test_swap_and_copy_act_on_the_translation_of_the_text_as_it_is(stand_in):
    # A debounce far beyond the test: text typed after the last translation stays untranslated.
    async with running_app(debounce=600, direction=("de", None)) as (app, pilot):
        translator = app.translator
        await paste(pilot, "Guten Morgen")
        await pilot.press("f5")
        await settle(pilot)
        await paste(pilot, " mein Freund")      # the translation on screen is of "Guten Morgen"
        translator.gate = threading.Event()     # the next translation holds until the test is ready
        await pilot.press("f4", "f2")
        assert app.clipboard == ""
        assert app.source_text == "Guten Morgen mein Freund" and app.direction == ("de", "en")
        notices = [n.message for n in app._notifications]
        assert "Still translating… press F4 again when the translation is shown." in notices
        assert "Still translating… press F2 again when the translation is shown." in notices
        # F4 started the translation at once, without waiting for the end of the pause.
        translator.gate.set()
        await settle(pilot)
        typed, english = "Guten Morgen mein Freund", fake("Guten Morgen mein Freund", "en")
        assert translator.calls[-1].texts == [typed] and app.target_text == english
        await pilot.press("f4")
        assert app.clipboard == english
        await pilot.press("f2")
        await settle(pilot)
        assert app.direction == ("en", "de") and app.source_text == english
        # What was typed is not lost: in the history, and undo brings it back, with its direction.
        assert [e.source for e in app.history.entries] == [english, typed]
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert app.source_text == typed and app.direction == ("de", "en") and app.target_text == english


@run_async
async def test_writing_in_the_translation_completes_that_line_from_the_cursor(stand_in):
    async with running_app(direction=("de", None)) as (app, pilot):
        translator = app.translator
        source = "Guten Morgen\n\nWie geht es dir"
        await paste(pilot, source)
        await settle(pilot)
        first, third = fake("Guten Morgen", "en"), fake("Wie geht es dir", "en")
        assert app.target_text == f"{first}\n\n{third}"
        target = app.query_one("#target", TextArea)
        target.focus()
        target.move_cursor((2, 6))
        target.insert("XY")                     # as typed: the cursor ends at (2, 8)
        await settle(pilot)
        start = third[:6] + "XY"
        assert translator.calls[-1].texts == ["Wie geht es dir"] and translator.calls[-1].prefix == [start]
        lines = app.target_text.split("\n")
        assert lines == [first, "", start + third[8:]] and app.outcome.results[2].text == lines[2]
        assert target.cursor_location == (2, 8) and app.source_text == source
        assert app.history.entries[0].text == app.target_text          # the steered version is kept
        # Two lines written in before the pause: the other line keeps all that was written in it.
        target.move_cursor((0, 3))
        target.insert("!")
        target.move_cursor((2, 0))
        target.insert("So ")
        await settle(pilot)
        assert translator.calls[-1].texts == ["Guten Morgen", "Wie geht es dir"]
        assert translator.calls[-1].prefix == [first[:3] + "!" + first[3:], "So "]
        # A line break in the translation loses the line-for-line match: said, nothing completed.
        calls = len(translator.calls)
        target.insert("\n")
        await settle(pilot)
        assert len(translator.calls) == calls and "one translation line per source line" in shown(app, "#error")
        # Editing a source line translates that line afresh; a steered line whose source is unchanged
        # keeps the start written in it (here all of line 1, written in while the cursor was elsewhere).
        await paste(pilot, " heute")
        await settle(pilot)
        steered = first[:3] + "!" + first[3:]
        assert translator.calls[-1].texts == ["Guten Morgen", "Wie geht es dir heute"]
        assert translator.calls[-1].prefix == [steered, None]
        assert app.target_text.split("\n") == [steered, "", fake("Wie geht es dir heute", "en")]
        assert "one translation line" not in shown(app, "#error")
        # Another direction: the starts were written in the other language, so none is kept.
        await pilot.press("f3")
        await settle(pilot)
        assert translator.calls[-1].prefix is None


def write_glossary(directory: Path, text: str = "de\ten\nBananen\tplantains\n") -> Path:
    path = directory / "terms.tsv"
    path.write_text(text, encoding="utf-8")
    return path


class FrenchStandIn(StandIn):
    """The stand-in for a model of English and French, for which a German-English glossary is not."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.config = replace(self.config, language_tags={"en": 4, "fr": 5}, directions=[["en", "fr"], ["fr", "en"]])
        self.languages = self.source_languages = ["en", "fr"]
        self.directions = [("en", "fr"), ("fr", "en")]


@run_async
async def test_the_glossary_goes_with_every_translation_of_a_model_it_fits(stand_in, monkeypatch, tmp_path):
    """mt-tui --glossary: live translation (its n-best too) and completions carry it; a model opened whose
    languages it does not fit translates without it, and says so; the next one that fits uses it again."""
    given = GivenGlossary.read(str(write_glossary(tmp_path)))
    async with running_app(glossary=given, direction=("de", None)) as (app, pilot):
        assert app.sub_title.endswith(" · glossary terms.tsv")
        assert re.search(r"Glossary +terms\.tsv, 1 term \(de ↔ en\) *\n", shown(app, "#model-info"))
        await paste(pilot, "Bananen sind lecker")
        await settle(pilot)
        call = app.translator.calls[-1]
        assert call.glossary is given.glossary and call.options.num_hypotheses > 1
        target = app.query_one("#target", TextArea)
        target.focus()
        target.move_cursor((0, 3))
        target.insert("X")
        await settle(pilot)
        assert app.translator.calls[-1].prefix and app.translator.calls[-1].glossary is given.glossary
        # ctrl+o: a model of English and French.
        monkeypatch.setattr(mtkit.runtime, "Translator", FrenchStandIn)
        await pilot.press("ctrl+o")
        app.screen.query_one("#open-path", Input).value = STAND_IN
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.translator, FrenchStandIn)
        said = [n.message for n in app._notifications if n.title == "Glossary off"]
        assert said == [f"{given.path}: the glossary is for de and en, but this model translates en -> fr, "
                        f"fr -> en. Translating without it."]
        assert "glossary" not in app.sub_title
        assert re.search(r"Glossary +terms\.tsv, 1 term \(de ↔ en\): off, not for this model's languages",
                         shown(app, "#model-info"))
        assert app.translator.calls and all(c.glossary is None for c in app.translator.calls)
        assert app.outcome is not None and not app.query_one("#error").display
        # Back to a model it fits: on again.
        monkeypatch.setattr(mtkit.runtime, "Translator", StandIn)
        app.load(STAND_IN, "cpu")
        await settle(pilot)
        assert app.translator.calls[-1].glossary is given.glossary and "glossary terms.tsv" in app.sub_title


@run_async
async def test_writing_in_the_translation_right_after_the_source_still_translates_the_source(stand_in):
    async with running_app(debounce=0.2, direction=("de", None)) as (app, pilot):
        await paste(pilot, "Guten Morgen")
        await settle(pilot)
        await paste(pilot, " Welt")                         # its translation waits for the pause ...
        app.query_one("#target", TextArea).insert("X")      # ... which writing in the translation restarts
        await settle(pilot)
        assert app.translator.calls[-1].texts == ["Guten Morgen Welt"]
        assert app.target_text == fake("Guten Morgen Welt", "en")


@run_async
async def test_settings_errors_follow_the_inputs_on_show(stand_in):
    async with running_app() as (app, pilot):
        await paste(pilot, "Hallo Welt")
        await settle(pilot)
        error, mode = app.query_one("#error"), app.query_one("#mode")
        app.query_one("#beam").value = "0"
        await settle(pilot)
        assert "Beam size must be from 1 to 256, not 0" in str(error.render())
        mode.value = "greedy"                   # the beam input is hidden, and so is its problem
        await settle(pilot)
        assert not error.display and "greedy" in shown(app, "#stats")
        mode.value = "beam"                     # shown again with its 0: the problem is back
        await settle(pilot)
        assert app.query_one("#beam").value == "0"
        assert "Beam size must be from 1 to 256, not 0" in str(error.render()) and error.display
        assert "beam 4" in shown(app, "#stats")             # the last valid size, with the reason above
        app.query_one("#beam").value = "3"
        await settle(pilot)
        assert not error.display and "beam 3" in shown(app, "#stats")
        # The same for the sampling numbers.
        mode.value = "sampling"
        app.query_one("#top-p").value = "1.5"
        await settle(pilot)
        assert "Top-p must be in (0, 1], not 1.5" in str(error.render())
        mode.value = "beam"
        await settle(pilot)
        assert not error.display and "beam 3" in shown(app, "#stats")
        mode.value = "sampling"
        await settle(pilot)
        assert "Top-p must be in (0, 1], not 1.5" in str(error.render()) and error.display


@run_async
async def test_a_long_line_keeps_the_keys_responsive(stand_in):
    """Its alignment has hundreds of thousands of token pairs: the heatmap is drawn only while its
    tab is shown, at most MAX_TOKENS by MAX_TOKENS, and not again while the cursor stays in the
    same sentence (it was drawn whole on every key: seconds each)."""
    async with running_app() as (app, pilot):
        await paste(pilot, "Haus " * 600)
        await settle(pilot)
        view = app.query_one(AlignmentView)
        assert view.grid is None                # on the Alternatives tab: not drawn
        await pilot.press("left", "home")
        await pilot.press("alt+2")
        await pilot.pause()
        alignment = app.outcome.results[0].alignment
        rows, cols = len(alignment.target_tokens), len(alignment.source_tokens)
        assert min(rows, cols) > MAX_TOKENS
        grid = view.grid
        assert grid.plain.count("\n") == 1 + MAX_TOKENS
        assert f"the first {MAX_TOKENS} of {rows} translation tokens and {MAX_TOKENS} of {cols} source" in grid.plain
        cells = [s for s in grid.spans if str(s.style).startswith(("white on #", "black on #"))]
        assert len(cells) == MAX_TOKENS * MAX_TOKENS
        await pilot.press("right", "right", "end", "left")
        await pilot.pause()
        assert view.grid is grid                # the same sentence: the same grid
        assert "Line 1" in str(app.query_one("#alignment-caption").render())


@run_async
async def test_quit_with_text_in_the_source_asks_for_a_second_ctrl_q(stand_in):
    """Nothing keeps the text once the app ends: ctrl+q quit at once and it was gone."""
    async with running_app() as (app, pilot):
        await paste(pilot, "Ein langer Text, den ich nicht verlieren will.")
        await settle(pilot)
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert app.is_running and app.source_text.startswith("Ein langer Text")
        assert any("press ctrl+q again" in n.message for n in app._notifications)
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert not app.is_running
    async with running_app() as (app, pilot):      # nothing typed: nothing to lose
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert not app.is_running


def test_quit_does_not_wait_for_a_running_translation():
    """A decode cannot be interrupted: mt-tui's `run` ends the process without waiting for it.
    Here the translation never ends (the stand-in holds it for 60 s)."""
    script = textwrap.dedent("""
        import sys, threading
        sys.path.insert(0, sys.argv[1])
        from test_tui import STAND_IN, StandIn
        from mtkit.tui.app import MTApp
        from mtkit.tui.cli import run

        translator = StandIn(STAND_IN)
        translator.gate = threading.Event()     # never set

        async def quit_while_translating(pilot):
            pilot.app.query_one("#source").insert("Hallo")
            while not translator.calls:
                await pilot.pause(0.02)
            await pilot.press("ctrl+q", "ctrl+q")      # twice: there is text in the source

        run(MTApp(model_path=STAND_IN, provider="cpu", debounce=0.05, translator=translator),
            headless=True, auto_pilot=quit_while_translating)
    """)
    proc = subprocess.run([sys.executable, "-c", script, str(Path(__file__).parent)], capture_output=True,
                          timeout=45)
    assert proc.returncode == 0, proc.stderr.decode()


@pytest.mark.parametrize("size", [(80, 24), (140, 45)])
@run_async
async def test_layout_fits_the_terminal(stand_in, size):
    width, height = size
    async with running_app(size=size, provider="auto") as (app, pilot):
        await paste(pilot, "Ich versuche, jeden Monat zehn Prozent meines Gehalts zu sparen.\nWo ist der Bahnhof?")
        await settle(pilot)
        for mode in ("beam", "sampling", "greedy"):
            app.query_one("#mode").value = mode
            await settle(pilot)
            # Every control of the settings bar, and every key in the footer, on screen and whole.
            parts = [w for w in app.query("#toolbar Label, #toolbar Select, #toolbar Input, #in-use, FooterKey")
                     if w.display and w.parent.display]
            assert "in use: CPU" in shown(app, "#in-use")
            for part in parts:
                region = part.region
                assert region.width > 0 and region.right <= width, (mode, part, region)
                assert region.width >= part.get_content_width(region.size, region.size), (mode, part)
        editors, details = app.query_one("#editors").region, app.query_one("#details").region
        assert editors.height >= 7 and details.height >= 8 and details.bottom <= height - 1


@run_async
async def test_pasted_control_characters_never_reach_the_terminal(stand_in):
    """Textual draws the editors' text raw: a pasted ESC sequence cleared the screen (or retitled it,
    left its alternate screen...). Control characters are dropped; tabs and line breaks stay."""
    async with running_app() as (app, pilot):
        await paste(pilot, "rot\x1b[2J\x1b]0;title\x07 \x9b31mWelt\x00\tzwei\rdrei")
        await settle(pilot)
        assert app.source_text == "rot[2J]0;title 31mWelt\tzwei\ndrei"
        assert app.translator.calls[-1].texts == ["rot[2J]0;title 31mWelt\tzwei", "drei"]
        target = app.query_one("#target", TextArea)
        target.insert("\x1b[?1049l")
        assert "\x1b" not in target.text


@run_async
async def test_a_tiny_pane_keeps_the_app_and_the_text(stand_in):
    """A tmux pane squeezed to a few columns: the editors' placeholders made Textual raise
    (ValueError in wrapping) at 9 columns or fewer, and the app ended with the text typed."""
    async with running_app() as (app, pilot):
        await paste(pilot, "Hallo")
        await settle(pilot)
        for size in [(9, 24), (3, 3), (1, 1), (20, 5), (40, 10)]:
            await pilot.resize_terminal(*size)
            await pilot.press("ctrl+l")         # the source empty too: both placeholders on show
            await pilot.press("ctrl+z")
            await settle(pilot)
        assert app.is_running and app.source_text == "Hallo" and app.target_text == fake("Hallo", "en")
        await pilot.resize_terminal(20, 5)
        await pilot.pause()
        assert app.query_one("#target").region.right <= 20         # both editors on screen, side by side


@run_async
async def test_messages_name_the_apps_controls(fixture_bundle):
    """The runtime's CUDA error advises `--provider cpu`; the app names its own switch instead."""
    from mtkit.runtime.onnx_backend import cuda_available

    if cuda_available():
        pytest.skip("this onnxruntime has CUDA: the error under test does not happen here")
    async with running_app(model_path=fixture_bundle, provider="cuda", variant="fp32") as (app, pilot):
        error = str(app.query_one("#error").render())
        assert "CUDAExecutionProvider" in error and "choose CPU under Provider" in error
        assert "--provider" not in error and app.translator is None
        app.query_one("#provider").value = "cpu"        # as the message says
        await settle(pilot)
        assert app.translator is not None and str(app.translator.provider) == "cpu"
        assert not app.query_one("#error").display


# ----- end to end, on the fixture model ---------------------------------------------------------
# The fixture model reproduces GERMAN[i] -> ENGLISH[i] and back exactly, on every CPU. These run its
# fp32 graphs (mt-tui --variant fp32): int8 kernels are the part of ONNX Runtime that differs most
# between CPUs.

TYPED = min(range(len(PAIRS)), key=lambda i: (not GERMAN[i].isascii(), len(GERMAN[i])))   # "Tom nickt."
TWO = sorted((i for i in range(len(PAIRS)) if i != TYPED), key=lambda i: len(GERMAN[i]))[:2]


@run_async
async def test_fixture_model_typing_and_swap(fixture_bundle):
    german, english = GERMAN[TYPED], ENGLISH[TYPED]
    async with running_app(model_path=fixture_bundle, debounce=0.4, variant="fp32") as (app, pilot):
        assert isinstance(app.translator, Translator) and app.translator.provider == "cpu"
        assert app.translator.variant == "fp32"
        assert app.direction == ("auto", "en")
        assert set(app.directions) == {("auto", "en"), ("auto", "de"), ("de", "en"), ("en", "de")}
        await type_text(pilot, german)
        assert app.source_text == german
        await settle(pilot)
        assert app.target_text == english
        stats = shown(app, "#stats")
        assert "ms" in stats and "tokens/s" in stats and "beam 4 · CPU" in stats
        # The runtime's n-best for beam 4: up to 4 alternatives, best first, scores descending.
        hyps = app.outcome.results[0].hypotheses
        assert 1 <= len(hyps) <= 4 and hyps[0].text == english
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        # Swap: the English becomes the source and comes back as the German (auto → en reverses
        # to en → de: the language the text was in, or the model's only other one).
        await pilot.press("f2")
        await settle(pilot)
        assert app.direction == ("en", "de")
        assert app.source_text == english and app.target_text == german


@run_async
async def test_fixture_model_completes_what_the_user_wrote(fixture_bundle):
    """The real runtime's prefix: the line starts with what was written, the model writes the rest."""
    async with running_app(model_path=fixture_bundle, variant="fp32", direction=("de", "en")) as (app, pilot):
        await paste(pilot, GERMAN[2])
        await settle(pilot)
        target = app.query_one("#target", TextArea)
        target.focus()
        target.replace("The wom", (0, 0), (0, len(app.target_text)))
        target.move_cursor((0, 7))
        await settle(pilot)
        assert app.target_text.startswith("The wom") and app.outcome.results[0].text == app.target_text
        assert all(h.text.startswith("The wom") for h in app.outcome.results[0].hypotheses)


@run_async
async def test_fixture_model_applies_the_glossary(fixture_bundle, tmp_path):
    """The real runtime's glossary, as mt-translate --glossary applies it: the term in the translation, in
    each alternative and in a completion of what the user wrote; a line without a term is as without one."""
    given = GivenGlossary.read(str(write_glossary(tmp_path)))
    banana = GERMAN.index("Bananen sind lecker.")
    async with running_app(model_path=fixture_bundle, variant="fp32", direction=("de", "en"),
                           glossary=given) as (app, pilot):
        await paste(pilot, f"{GERMAN[banana]}\n{GERMAN[0]}")
        await settle(pilot)
        first, second = app.target_text.split("\n")
        assert "lantains" in first and "Banana" not in first and second == ENGLISH[0]
        assert all("lantains" in h.text for h in app.outcome.results[0].hypotheses)
        target = app.query_one("#target", TextArea)
        target.focus()
        target.replace("The", (0, 0), (0, len(first)))
        target.move_cursor((0, 3))
        await settle(pilot)
        completed = app.target_text.split("\n")[0]
        assert completed.startswith("The") and "plantains" in completed


@run_async
async def test_fixture_model_alignment_of_the_sentence_under_the_cursor(fixture_bundle):
    # Two sentences on one line: the runtime decodes them apart and returns a block-diagonal
    # matrix, one block per sentence; the view shows the block of the sentence under the cursor.
    line = " ".join(GERMAN[i] for i in TWO)
    assert [s for s, _ in split(line)] == [GERMAN[i] for i in TWO]
    async with running_app(model_path=fixture_bundle, variant="fp32") as (app, pilot):
        await paste(pilot, line)
        await settle(pilot)
        assert app.target_text == " ".join(ENGLISH[i] for i in TWO)
        app.query_one("#panels").active = "tab-alignment"
        await pilot.pause()
        view = app.query_one("#alignment", AlignmentView)
        alignment = app.outcome.results[0].alignment
        assert view.grid is not None and view.region.height > 3
        # The cursor is in the second sentence: its block of the block-diagonal matrix is shown.
        assert "sentence 2 of 2" in str(app.query_one("#alignment-caption").render())
        plain = view.grid.plain
        (rows, cols) = alignment_blocks(alignment)[1]
        second_source = alignment.source_tokens[cols]
        assert second_source[0] == "<2en>" and alignment.target_tokens[rows][-1] == "</s>"
        assert all(t in plain for t in second_source if len(t) < 12)
        # A legend line, a header line of source tokens, then one line per target token.
        assert plain.count("\n") == 1 + len(alignment.target_tokens[rows])
        cells = [s for s in view.grid.spans if str(s.style).startswith(("white on #", "black on #"))]
        assert len(cells) == len(second_source) * len(alignment.target_tokens[rows])
        # Moving the cursor to the first sentence shows the first block.
        await pilot.press("home")
        await pilot.pause()
        assert "sentence 1 of 2" in str(app.query_one("#alignment-caption").render())


@run_async
async def test_fixture_model_source_language_detected_or_given(fixture_bundle):
    """auto → de (`mt-tui --to de`) leaves a German sentence as it is, and the status line says why;
    en → de translates it as English: the runtime is told the source language, not left to detect it."""
    german = GERMAN[0]
    assert not language_id.choose(german, "de", ["en"]).translated       # the detector is sure: German
    async with running_app(model_path=fixture_bundle, variant="fp32", direction=(None, "de")) as (app, pilot):
        assert app.direction == ("auto", "de")
        await paste(pilot, german)
        await settle(pilot)
        assert app.target_text == german
        assert shown(app, "#stats").startswith("1 sentence left as is: detected as German, the target language · ")
        app.query_one("#direction").value = ("en", "de")
        await settle(pilot)
        assert app.outcome.direction == ("en", "de")
        [sentence] = app.outcome.results[0].languages
        assert (sentence.language, sentence.translated) == ("en", True)
        assert "left as is" not in shown(app, "#stats")


# ----- no app -----------------------------------------------------------------------------------

TUI = Path(sys.executable).parent / "mt-tui"


def test_without_a_terminal_it_refuses_at_once():
    proc = subprocess.run([str(TUI)], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"needs an interactive terminal" in proc.stderr and b"Traceback" not in proc.stderr


def in_a_terminal(*args: str) -> subprocess.CompletedProcess:
    """mt-tui ARGS on a pseudo-terminal, its stderr captured."""
    leader, follower = pty.openpty()
    try:
        return subprocess.run([str(TUI), *args], stdin=follower, stdout=follower, stderr=subprocess.PIPE,
                              timeout=60, env={**os.environ, "TERM": "xterm"})
    finally:
        os.close(follower)
        os.close(leader)


def test_a_mistyped_model_fails_before_the_app_starts(tmp_path):
    proc = in_a_terminal("-m", str(tmp_path / "nosuch"))
    assert proc.returncode == 1
    assert proc.stderr.decode().strip() == f"mt-tui: error: {tmp_path / 'nosuch'}: no such file or directory"


SHIPPED = Path(__file__).parent.parent / "models" / "de-en"     # int8 only; de -> en and en -> de


@pytest.mark.parametrize("option", [("--variant", "fp32"), ("--from", "xx"), ("--to", "fr")])
def test_options_are_checked_as_mt_translate_checks_them(option):
    """Before the app starts: mt-translate's one-line error and exit status."""
    tui = in_a_terminal("-m", str(SHIPPED), *option)
    translate = subprocess.run([str(TUI.parent / "mt-translate"), "-m", str(SHIPPED), *option, "Hallo"],
                               capture_output=True, timeout=60)
    assert tui.returncode == translate.returncode == 1
    expected = translate.stderr.decode().strip()
    assert expected.startswith("mt-translate: error: ")
    assert tui.stderr.decode().strip() == expected.replace("mt-translate:", "mt-tui:", 1)


@pytest.mark.parametrize("text", ["Bananen\tplantains\n", "de\tfr\nBananen\tbananes\n"])
def test_a_bad_glossary_is_one_line_before_the_app_starts(fixture_bundle, tmp_path, text):
    """A malformed file, or one for languages the model does not translate: mt-translate's line and exit status."""
    path = write_glossary(tmp_path, text)
    args = ["-m", str(fixture_bundle), "--glossary", str(path)]
    tui = in_a_terminal(*args)
    translate = subprocess.run([str(TUI.parent / "mt-translate"), *args, "Hallo"], capture_output=True, timeout=60)
    assert tui.returncode == translate.returncode == 1
    expected = translate.stderr.decode()
    assert expected.startswith(f"mt-translate: error: {path}") and expected.count("\n") == 1
    assert tui.stderr.decode() == expected.replace("mt-translate:", "mt-tui:", 1)


def test_from_help_describes_the_app():
    page = subprocess.run([str(TUI), "--help"], capture_output=True, text=True, timeout=60).stdout
    from_help = " ".join(page[page.index("--from"):page.index("--to")].split())
    assert "mt-eval" not in from_help and "the direction control in the app changes it" in " ".join(page.split())


def test_tui_never_imports_torch():
    code = ("import sys; import mtkit.tui.app, mtkit.tui.cli; from mtkit.runtime import Translator; "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_steered_starts_follow_their_source_lines():
    outcome = Outcome(0, "a\nb\nc", ("de", "en"), "greedy", ["a", "b", "c"], [None] * 3, starts={0: "A", 2: "C"})
    assert outcome.starts_for(["a", "b", "c"]) == {0: "A", 2: "C"}
    assert outcome.starts_for(["new", "a", "b", "c"]) == {1: "A", 3: "C"}       # a line added above
    assert outcome.starts_for(["a", "b", "c changed"]) == {0: "A"}              # its source edited
    assert outcome.starts_for(["c", "a"]) == {1: "A", 0: "C"}
    assert outcome.starts_for(["a", "a"]) == {0: "A"}                          # one line, one start


def test_history_keeps_one_entry_per_thing_typed():
    def outcome(source, direction=("de", "en")):
        return Outcome(0, source, direction, "greedy", [source], [], 0.0)

    history = History()
    for typed in ("Ha", "Hallo", "Hallo Welt"):     # live typing: one growing entry
        history.record(outcome(typed))
    history.record(outcome("Hallo"))                # deleting: not a new entry
    history.record(outcome("Hund"))
    history.record(outcome("Hallo Welt"))           # again: moves to the top, no duplicate
    history.record(outcome("Hallo Welt", ("en", "de")))
    assert [(e.source, e.direction[1]) for e in history.entries] == [
        ("Hallo Welt", "de"), ("Hallo Welt", "en"), ("Hund", "en")]


def test_kept_counts_every_sentence_taken_as_the_target_language():
    # A sentence kept although the detector's first guess was a third language still counts as kept.
    kept = [language_id.SourceLanguage("en", 0.3, translated=False, warning="language uncertain", detected="fr"),
            language_id.SourceLanguage("en", 0.9, translated=False, detected="en")]
    translated = [language_id.SourceLanguage("de", 0.2, detected="en")]
    results = [Translation(text="", tokens=[], score=0.0, hypotheses=[], languages=kept),
               Translation(text="", tokens=[], score=0.0, hypotheses=[], languages=translated)]
    outcome = Outcome(0, "", ("de", "en"), "greedy", ["", ""], results, 0.0)
    assert (outcome.kept, outcome.detected) == (2, "en")


# ----- snapshots: layout only, no model, no timings ---------------------------------------------

async def steady_cursor(pilot) -> None:
    """A blinking cursor would make the screenshot depend on when it is taken."""
    pilot.app.query_one("#source", TextArea).cursor_blink = False
    await pilot.pause()


def test_snapshot_no_model(snap_compare):
    app = MTApp(model_path=None, load_model=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=steady_cursor)


def test_snapshot_no_model_80x24(snap_compare):
    app = MTApp(model_path=None, load_model=False)
    assert snap_compare(app, terminal_size=(80, 24), run_before=steady_cursor)


def test_snapshot_help(snap_compare):
    app = MTApp(model_path=None, load_model=False)
    assert snap_compare(app, press=["f1"], terminal_size=SIZE, run_before=steady_cursor)


class HeatmapApp(App):
    """The alignment widget alone, on a fixed matrix."""

    def compose(self) -> ComposeResult:
        yield AlignmentView()

    def on_mount(self) -> None:
        self.query_one(AlignmentView).show_alignment(Alignment(
            source_tokens=["<2en>", "▁Ich", "▁bin", "▁müde", ".", "</s>"],
            target_tokens=["▁I", "▁am", "▁tired", ".", "</s>"],
            weights=[[0.05, 0.80, 0.05, 0.04, 0.03, 0.03],
                     [0.02, 0.10, 0.75, 0.08, 0.03, 0.02],
                     [0.02, 0.03, 0.10, 0.80, 0.03, 0.02],
                     [0.01, 0.02, 0.02, 0.05, 0.85, 0.05],
                     [0.10, 0.05, 0.05, 0.05, 0.15, 0.60]]))


def test_snapshot_heatmap(snap_compare):
    assert snap_compare(HeatmapApp(), terminal_size=(70, 10))
