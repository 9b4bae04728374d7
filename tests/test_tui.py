"""mt-tui, driven by Textual's Pilot on the real runtime and a real tiny bundle (`tiny_bundle`).

The tiny model's translations are poor but real: every check compares what the app shows with
what the runtime's Translator returns for the same text and settings, never with fixed strings.
Snapshot tests pin the layout in states that involve no model and no timings.
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import TextArea

from mtkit.runtime import Alignment, Translator
from mtkit.tui.alignment_view import AlignmentView
from mtkit.tui.app import MTApp
from mtkit.tui.screens import HelpScreen
from mtkit.tui.state import MAX_INPUT_CHARS, DecodeSettings, History, Outcome, alignment_blocks

SIZE = (120, 40)
GERMAN = "Wir treffen uns mit Tom."
FIXTURES = Path(__file__).parent / "fixtures" / "tatoeba"


def run_async(test):
    """Run an async test with asyncio.run (the suite has no async pytest plugin)."""
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        asyncio.run(test(*args, **kwargs))
    return wrapper


async def settle(pilot) -> None:
    """Wait until the debounce timer has fired and every worker (load, translate) has finished."""
    app = pilot.app
    for _ in range(500):
        await pilot.pause(0.02)
        if not app.busy:
            break
    await app.workers.wait_for_complete()
    await pilot.pause()
    assert not app.busy


async def type_text(pilot, text: str) -> None:
    """Key by key, as a person types (slow under the Pilot: ~0.1 s a key on a busy machine)."""
    await pilot.click("#source")
    await pilot.press(*["space" if c == " " else c for c in text])


async def paste(pilot, text: str) -> None:
    """Insert at the cursor in one edit, as a paste does: the same Changed event as typing."""
    pilot.app.query_one("#source", TextArea).insert(text)
    await pilot.pause()


@pytest.fixture(scope="module")
def reference(tiny_bundle):
    """The runtime itself, to check the app's output against."""
    return Translator(tiny_bundle, provider="cpu")


def expected(reference: Translator, text: str, to: str, settings: DecodeSettings = DecodeSettings()) -> str:
    return reference.translate([text], to=to, **settings.translate_kwargs())[0].text


@pytest.fixture(scope="module")
def distinct(reference) -> str:
    """A short German sentence that the tiny model translates differently into en and into de
    (a tiny model is degenerate on many inputs; this keeps "the output changes" checkable)."""
    lines = (FIXTURES / "train.de").read_text(encoding="utf-8").splitlines()
    for line in sorted(lines[:200], key=len):
        en, de = expected(reference, line, "en"), expected(reference, line, "de")
        if en.strip() and de.strip() and en != de:
            return line
    pytest.fail("the tiny model gives the same output into en and de for every sentence tried")


@run_async
async def test_typing_translates_live(tiny_bundle, reference, distinct):
    # The debounce outlasts a key press, so typing translates once, after the last key.
    app = MTApp(model_path=tiny_bundle, provider="cpu", debounce=0.4)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.translator is not None and app.translator.provider == "cpu"
        assert app.direction == ("de", "en")
        await type_text(pilot, distinct)
        assert app.query_one("#source", TextArea).text == distinct
        await settle(pilot)
        assert app.target_text.strip()
        assert app.target_text == expected(reference, distinct, "en")
        assert app.outcome.source == distinct and app.outcome.direction == ("de", "en")
        stats = str(app.query_one("#stats").render())
        assert "ms" in stats and "tokens/s" in stats
        # n-best: beam 4 shows up to 4 alternatives, best first, with scores.
        hyps = app.outcome.results[0].hypotheses
        assert 1 <= len(hyps) <= 4 and hyps[0].text == app.target_text
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)


@run_async
async def test_translate_key_and_stale_results(tiny_bundle, reference, distinct):
    # A debounce far beyond the test: only F5 can translate.
    app = MTApp(model_path=tiny_bundle, provider="cpu", debounce=600)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await paste(pilot, distinct)
        assert app.target_text == "" and app.busy          # waiting on the debounce timer
        await pilot.press("f5")
        await settle(pilot)
        shown = app.target_text
        assert shown == expected(reference, distinct, "en")
        # A result computed for an older generation never overwrites the one on screen.
        stale = Outcome(app.generation - 1, distinct, ("en", "de"), "beam 4", [distinct],
                        reference.translate([distinct], to="de"), 0.01)
        assert stale.text != shown
        app._show_result(stale)
        await pilot.pause()
        assert app.target_text == shown and app.outcome.direction == ("de", "en")


@run_async
async def test_direction_switch(tiny_bundle, reference, distinct):
    app = MTApp(model_path=tiny_bundle, provider="cpu", debounce=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert set(app.directions) == {("de", "en"), ("en", "de")}
        await paste(pilot, distinct)
        await settle(pilot)
        to_english = app.target_text
        assert to_english == expected(reference, distinct, "en")
        await pilot.press("f2")           # next direction: en -> de
        await settle(pilot)
        assert app.direction == ("en", "de")
        assert app.outcome.direction == ("en", "de")
        assert app.query_one("#target", TextArea).border_title == "German (de)"
        assert app.target_text == expected(reference, distinct, "de") != to_english
        # Swap: the translation becomes the source and the direction reverses.
        german_output = app.target_text
        await pilot.press("f3")
        await settle(pilot)
        assert app.direction == ("de", "en")
        assert app.source_text == german_output
        assert app.target_text == expected(reference, german_output, "en")


@run_async
async def test_alignment_view_renders_current_sentence(tiny_bundle):
    app = MTApp(model_path=tiny_bundle, provider="cpu", debounce=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await paste(pilot, "Tom ist hier. Wo ist Tom?")
        await settle(pilot)
        app.query_one("#panels").active = "tab-alignment"
        await pilot.pause()
        view = app.query_one("#alignment", AlignmentView)
        translation = app.outcome.results[0]
        alignment = translation.alignment
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
async def test_history_restores(tiny_bundle, reference):
    app = MTApp(model_path=tiny_bundle, provider="cpu", debounce=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await paste(pilot, "Tom ist hier.")
        await settle(pilot)
        first = app.target_text
        await pilot.press("ctrl+l")
        await pilot.pause()
        await paste(pilot, GERMAN)
        await settle(pilot)
        assert [e.source for e in app.history.entries] == [GERMAN, "Tom ist hier."]
        # Restore the older entry from the History tab with the keyboard.
        app.query_one("#panels").active = "tab-history"
        await pilot.pause()
        app.query_one("#history").focus()
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.source_text == "Tom ist hier."
        assert app.target_text == first == expected(reference, "Tom ist hier.", "en")
        await settle(pilot)                 # restoring does not translate again
        assert app.target_text == first and len(app.history.entries) == 2


@run_async
async def test_bad_bundle_shows_error(tmp_path, tiny_bundle):
    broken = tmp_path / "broken"
    shutil.copytree(tiny_bundle, broken)
    (broken / "config.json").write_text("{ not json", encoding="utf-8")
    for path, needle in ((tmp_path / "no-such-model", "no-such-model"), (broken, "config.json")):
        app = MTApp(model_path=path, provider="cpu", debounce=0.05)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            error = app.query_one("#error")
            assert error.display and needle in str(error.render())
            assert app.translator is None
            await paste(pilot, "Hallo")      # typing without a model: no crash, no output
            await settle(pilot)
            assert app.target_text == "" and app.is_running


@run_async
async def test_cuda_failure_and_bad_settings_show_errors(tiny_bundle, distinct):
    import onnxruntime as ort

    app = MTApp(model_path=tiny_bundle, provider="cpu", debounce=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await paste(pilot, GERMAN)
        await settle(pilot)
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            app.query_one("#provider").value = "cuda"
            await settle(pilot)
            assert "cuda" in str(app.query_one("#error").render()).lower()
            assert app.translator.provider == "cpu" and app.query_one("#provider").value == "cpu"
        # Overlong input: refused with a message, nothing decoded.
        app.query_one("#source", TextArea).load_text("Tom. " * (MAX_INPUT_CHARS // 5 + 1))
        await settle(pilot)
        assert "too long" in str(app.query_one("#error").render()) and app.target_text == ""
        app.query_one("#source", TextArea).load_text(distinct)
        await settle(pilot)
        assert app.target_text and "too long" not in str(app.query_one("#error").render())
        # An invalid beam size is reported next to the settings; greedy and sampling decode.
        app.query_one("#beam").value = "0"
        await settle(pilot)
        assert "Beam size" in str(app.query_one("#error").render())
        app.query_one("#beam").value = "2"
        app.query_one("#mode").value = "greedy"
        await settle(pilot)
        assert app.outcome.settings == "greedy" and len(app.outcome.results[0].hypotheses) == 1
        app.query_one("#mode").value = "sampling"
        app.query_one("#temperature").value = "0.7"
        await settle(pilot)
        # A tiny model may sample EOS first, so the text can be empty; the sample itself must exist.
        assert app.outcome.settings == "sampling T=0.7" and app.outcome.results[0].hypotheses


@run_async
async def test_copy_and_help(tiny_bundle, distinct):
    app = MTApp(model_path=tiny_bundle, provider="cpu", debounce=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await paste(pilot, distinct)
        await settle(pilot)
        await pilot.press("f4")
        assert app.clipboard == app.target_text != ""
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


def test_tui_never_imports_torch():
    code = ("import sys; import mtkit.tui.app; from mtkit.runtime import Translator; "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


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


# ----- snapshots: layout only, no model, no timings ---------------------------------------------

async def steady_cursor(pilot) -> None:
    """A blinking cursor would make the screenshot depend on when it is taken."""
    pilot.app.query_one("#source", TextArea).cursor_blink = False
    await pilot.pause()


def test_snapshot_no_model(snap_compare):
    app = MTApp(model_path=None, load_model=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=steady_cursor)


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
