"""mt-tui: an interactive translator in the terminal, on the torch-free runtime.

Typing re-translates after a short pause (a debounce timer); decoding runs in a thread worker so
the UI never blocks, and every request carries a generation number so that a slow, stale result
never overwrites a newer one. Each source line is translated on its own; the panels below the
editors show the line under the cursor.
"""

from __future__ import annotations

import threading
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, VerticalScroll
from textual.timer import Timer
from textual.validation import Integer, Number
from textual.widgets import Footer, Header, Input, Label, Select, Static, TabbedContent, TabPane, TextArea
from textual.worker import WorkerState, get_current_worker

from mtkit.runtime.cli_options import model_options
from mtkit.runtime.cli_support import command, require
from mtkit.runtime.decode_options import DecodeOptions, OptionError, field_help

from .alignment_view import AlignmentView
from .alternatives import Alternatives
from .history_list import HistoryList
from .model_info import ModelInfo
from .screens import HelpScreen, OpenModelScreen
from .state import (MAX_INPUT_CHARS, DecodeSettings, History, Outcome, bundle_directions, current_block,
                    direction_label, language_name, split_segments)

DEBOUNCE_SECONDS = 0.4
PROVIDERS = [("auto", "auto"), ("CPU", "cpu"), ("CUDA", "cuda")]
MODES = [("Greedy", "greedy"), ("Beam search", "beam"), ("Sampling", "sampling")]
# The toolbar inputs: the DecodeOptions field each sets, its type and its name in messages.
SETTINGS_INPUTS = {"beam": ("beam_size", int, "Beam size"), "temperature": ("temperature", float, "Temperature")}


@dataclass
class Request:
    generation: int
    translator: object
    text: str
    segments: list[str]
    direction: tuple[str, str]
    settings: DecodeSettings


class MTApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "mt-tui"
    BINDINGS = [
        Binding("f1", "help", "Help"),
        Binding("f2", "next_direction", "Direction", priority=True),
        Binding("f3", "swap", "Swap", priority=True),
        Binding("f4", "copy_result", "Copy", priority=True),
        Binding("f5,ctrl+enter", "translate_now", "Translate", priority=True),
        Binding("ctrl+o", "open_model", "Open model", priority=True),
        Binding("ctrl+l", "clear", "Clear", priority=True),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(self, model_path: str | Path | None = None, provider: str = "auto", variant: str = "auto",
                 threads: int | None = None, debounce: float = DEBOUNCE_SECONDS, load_model: bool = True,
                 direction: tuple[str | None, str | None] = (None, None)) -> None:
        super().__init__()
        self.model_path = None if model_path is None else str(model_path)
        self.requested_direction = direction    # (--from, --to), either may be None: used at the first load
        self.provider_request = provider
        self.variant = variant
        self.threads = threads
        self.debounce = debounce
        self.load_on_start = load_model     # False: start model-less (the layout snapshots)
        self.translator = None
        self.direction: tuple[str, str] | None = None
        self.directions: list[tuple[str, str]] = []     # what the loaded bundle supports
        self.settings = DecodeSettings()
        self.generation = 0                 # bumped by every change that makes the shown result stale
        self.outcome: Outcome | None = None  # the result on screen
        self.history = History()
        self._errors: dict[str, str] = {}
        self._result_stats = ""
        self._timer: Timer | None = None
        self._load_id = 0
        self._loading = False
        self._decode_lock = threading.Lock()  # one decode at a time: a cancelled thread cannot be stopped

    # ----- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="toolbar"):
            yield Label("To", classes="tb-label")
            yield Select([], prompt="no model", compact=True, id="direction")
            yield Label("Decoding", classes="tb-label")
            yield Select(MODES, value=self.settings.mode, allow_blank=False, compact=True, id="mode")
            yield Label("beam", classes="tb-label")
            # Beyond the toolbar's maximum, DecodeOptions checks the values (as it checks the CLIs' flags).
            yield Input(str(self.settings.beam_size), type="integer", compact=True, id="beam",
                        validators=[Integer(maximum=16)], tooltip=f"{field_help('beam_size')} At most 16 here.")
            yield Label("temp", classes="tb-label")
            yield Input(f"{self.settings.temperature:g}", type="number", compact=True, id="temperature",
                        validators=[Number(maximum=5.0)], tooltip=f"{field_help('temperature')} At most 5 here.",
                        disabled=True)
            yield Label("Provider", classes="tb-label")
            yield Select(PROVIDERS, value=self.provider_request, allow_blank=False, compact=True, id="provider")
            yield Static("", id="in-use")
        with Horizontal(id="editors"):
            yield TextArea(id="source", placeholder="Type or paste text to translate…")
            yield TextArea(id="target", read_only=True, placeholder="The translation appears here.")
        yield Static("", id="stats")
        yield Static("", id="error")
        with TabbedContent(id="panels"):
            with TabPane("Alternatives", id="tab-alternatives"):
                with VerticalScroll():
                    yield Alternatives(id="alternatives")
            with TabPane("Alignment", id="tab-alignment"):
                yield Label("", id="alignment-caption")
                with ScrollableContainer(id="alignment-scroll"):
                    yield AlignmentView(id="alignment")
            with TabPane("History", id="tab-history"):
                yield HistoryList(id="history")
            with TabPane("Model", id="tab-model"):
                with VerticalScroll():
                    yield ModelInfo(id="model-info")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#source", TextArea).border_title = "Source"
        self.query_one("#target", TextArea).border_title = "Translation"
        self._show_details()
        self.query_one("#model-info", ModelInfo).show_message("No model loaded. ctrl+o opens a bundle.")
        self.query_one("#source").focus()
        if self.load_on_start:
            self.load(self.model_path, self.provider_request)
        else:
            self.set_error("model", "No model loaded. ctrl+o opens a bundle.")

    # ----- small helpers ------------------------------------------------------------------------
    @property
    def source_text(self) -> str:
        return self.query_one("#source", TextArea).text

    @property
    def target_text(self) -> str:
        return self.query_one("#target", TextArea).text

    @property
    def busy(self) -> bool:
        """A translation is waiting on the debounce timer or a worker is still running (for tests)."""
        return self._timer is not None or any(
            w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in self.workers)

    def set_error(self, source: str, message: str) -> None:
        """Show (or, with "", clear) the error from one source: "model", "translation" or a
        settings input; each clears only its own."""
        self._errors[source] = message
        shown = [m for m in self._errors.values() if m]
        error = self.query_one("#error", Static)
        error.update("\n".join(shown))
        error.display = bool(shown)

    def set_stats(self, message: str) -> None:
        self.query_one("#stats", Static).update(message)

    # ----- loading a model ----------------------------------------------------------------------
    def load(self, path: str | None, provider: str) -> None:
        self._load_id += 1
        self._loading = True
        self.set_stats(f"Loading {path or 'the default model'} ({provider})…")
        self._load_worker(self._load_id, path, provider)

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _load_worker(self, load_id: int, path: str | None, provider: str) -> None:
        from mtkit.runtime import Translator   # imported here so the UI is up before ONNX Runtime loads

        try:
            translator = Translator(path=path, provider=provider, threads=self.threads, variant=self.variant)
        except Exception as e:    # BundleError, TranslationError (CUDA), or anything unexpected: show it
            self.call_from_thread(self._load_failed, load_id, path, provider, e)
            return
        self.call_from_thread(self._model_ready, load_id, path, provider, translator)

    def _model_ready(self, load_id: int, path: str | None, provider: str, translator) -> None:
        if load_id != self._load_id:
            return
        self._loading = False
        self.translator, self.model_path, self.provider_request = translator, path, provider
        self.sub_title = f"{Path(str(translator.path)).name} · {translator.variant}"
        directions = self.directions = bundle_directions(translator.config)
        select = self.query_one("#direction", Select)
        keep = self.direction if self.direction in directions else self._first_direction(directions)
        with select.prevent(Select.Changed):
            select.set_options([(direction_label(d), d) for d in directions])
            if keep is not None:
                select.value = keep
        self._set_direction(keep)
        self._set_provider_select(provider)
        actual = str(translator.provider)
        in_use = self.query_one("#in-use", Static)
        in_use.update(f"in use: {actual.upper()}")
        in_use.tooltip = getattr(translator, "provider_note", "") or None
        self.query_one("#model-info", ModelInfo).show_translator(translator)
        self.set_error("model", "")
        self.set_stats(f"Loaded {Path(str(translator.path)).name} ({translator.variant}, {actual.upper()}).")
        if provider == "cuda" and actual != "cuda":
            self.notify(f"CUDA was asked for, but the runtime runs on {actual.upper()}.", severity="warning")
        self._invalidate(delay=0)

    def _first_direction(self, directions: list[tuple[str, str]]) -> tuple[str, str] | None:
        """The direction asked for with --from / --to (once), else the bundle's first."""
        source, target = self.requested_direction
        self.requested_direction = (None, None)
        wanted = [d for d in directions if source in (None, d[0]) and target in (None, d[1])]
        if (source or target) and not wanted:
            self.notify(f"This model does not translate {source or '*'} → {target or '*'}; its directions: "
                        f"{', '.join(map(direction_label, directions))}.", severity="warning", timeout=8)
        return (wanted or directions or [None])[0]

    def _load_failed(self, load_id: int, path: str | None, provider: str, error: Exception) -> None:
        if load_id != self._load_id:
            return
        self._loading = False
        message = str(error) or type(error).__name__
        if self.translator is not None and path == self.model_path:
            # A provider switch failed: the model already loaded keeps working.
            self._set_provider_select(self.provider_request)
            title = f"Provider {provider!r} not available"
            self.set_error("model", f"Cannot use provider {provider!r}: {message}. "
                                    f"Still running on {str(self.translator.provider).upper()}.")
        elif self.translator is not None:
            title = "Model not opened"
            self.set_error("model", f"Cannot open that model: {message}. The previous model stays loaded.")
        else:
            title = "Model not loaded"
            self.set_error("model", f"Cannot load the model: {message}\nctrl+o opens another bundle.")
            self.set_stats("No model loaded.")
            self.query_one("#in-use", Static).update("")
        if self.translator is not None:
            self.set_stats(self._result_stats if self.outcome else "")
        self.notify(message, title=title, severity="error", timeout=8)

    def _set_provider_select(self, provider: str) -> None:
        select = self.query_one("#provider", Select)
        if select.value != provider:
            with select.prevent(Select.Changed):
                select.value = provider

    def _set_direction(self, direction: tuple[str, str] | None) -> None:
        self.direction = direction
        source, target = self.query_one("#source", TextArea), self.query_one("#target", TextArea)
        if direction is None:
            source.border_title, target.border_title = "Source", "Translation"
        else:
            source.border_title = f"{language_name(direction[0])} ({direction[0]})"
            target.border_title = f"{language_name(direction[1])} ({direction[1]})"

    # ----- requesting translations --------------------------------------------------------------
    def _invalidate(self, delay: float) -> None:
        """Something changed: the shown result is stale. Translate after `delay` seconds (0: now)."""
        self.generation += 1
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if delay > 0:
            self._timer = self.set_timer(delay, self._request)
        else:
            self._request()

    def _request(self) -> None:
        self._timer = None
        text = self.source_text
        if not text.strip():
            self._show_outcome(None)
            self.set_error("translation", "")
            if not self._loading:
                self.set_stats("")
            return
        if len(text) > MAX_INPUT_CHARS:
            self._show_outcome(None)
            self.set_stats("")
            self.set_error("translation", f"Input too long: {len(text):,} characters (the limit is {MAX_INPUT_CHARS:,}). "
                           "Translate long documents with mt-translate.")
            return
        if self.translator is None or self.direction is None:
            if not self._loading:
                self.set_stats("No model loaded: ctrl+o opens a bundle.")
            return
        self.set_stats("Translating…")
        self._translate_worker(Request(self.generation, self.translator, text, split_segments(text),
                                       self.direction, replace(self.settings)))

    @work(thread=True, exclusive=True, group="translate", exit_on_error=False)
    def _translate_worker(self, request: Request) -> None:
        worker = get_current_worker()
        with self._decode_lock:
            # Exclusive workers cancel their predecessors, but a running decode cannot be
            # interrupted: skip the work entirely if it went stale while waiting for the lock.
            if worker.is_cancelled or request.generation != self.generation:
                return
            texts = [s for s in request.segments if s.strip()]
            start = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    # An over-long sentence warns on stderr, which would scribble over the screen;
                    # the same message comes back in Translation.warnings and is shown in the UI.
                    warnings.simplefilter("ignore")
                    translations = request.translator.translate(texts, to=request.direction[1],
                                                                options=request.settings.options())
            except Exception as e:   # TranslationError, a CUDA failure, ...: shown, never a crash
                self.call_from_thread(self._translation_failed, request.generation, e)
                return
            seconds = time.perf_counter() - start
        found = iter(translations)
        results = [next(found) if s.strip() else None for s in request.segments]
        outcome = Outcome(request.generation, request.text, request.direction, request.settings.describe(),
                          request.segments, results, seconds)
        self.call_from_thread(self._show_result, outcome)

    def _show_result(self, outcome: Outcome) -> None:
        if outcome.generation != self.generation:
            return          # stale: the text or settings changed while it was decoding
        self._show_outcome(outcome)
        notes = [w for r in outcome.results if r is not None for w in getattr(r, "warnings", [])]
        self.set_error("translation", "Note: " + "; ".join(notes) if notes else "")
        tokens = outcome.target_tokens
        rate = tokens / outcome.seconds if outcome.seconds > 0 else 0.0
        provider = str(getattr(self.translator, "provider", "")).upper()
        self._result_stats = (f"{outcome.seconds * 1000:.0f} ms · {rate:.0f} tokens/s · {tokens} tokens · "
                              f"{outcome.settings} · {provider}")
        self.set_stats(self._result_stats)
        if self.history.record(outcome):
            self.query_one("#history", HistoryList).show_entries(self.history.entries)

    def _translation_failed(self, generation: int, error: Exception) -> None:
        if generation != self.generation:
            return
        self._show_outcome(None)
        self.set_stats("")
        self.set_error("translation", f"Translation failed: {error}")
        self.notify(str(error), title="Translation failed", severity="error")

    # ----- showing results ----------------------------------------------------------------------
    def _show_outcome(self, outcome: Outcome | None) -> None:
        self.outcome = outcome
        self.query_one("#target", TextArea).load_text(outcome.text if outcome else "")
        self._show_details()

    def _show_details(self) -> None:
        """Alternatives and alignment of the line under the source cursor."""
        alternatives = self.query_one("#alternatives", Alternatives)
        alignment = self.query_one("#alignment", AlignmentView)
        caption = self.query_one("#alignment-caption", Label)
        row, column = self.query_one("#source", TextArea).cursor_location
        found = self.outcome.segment(row) if self.outcome else None
        if found is None:
            alternatives.show_message("Alternatives of the current line appear here.")
            alignment.show_message("The alignment of the current line appears here.")
            caption.update("")
            return
        line, source, translation = found
        alternatives.show_translation(translation)
        if translation.alignment is None:
            alignment.show_message("This translation has no alignment.")
            caption.update("")
            return
        k, count, (rows, cols) = current_block(translation.alignment, source, column if line == row else 0)
        alignment.show_alignment(translation.alignment, rows, cols)
        where = f"Line {line + 1}" + (f", sentence {k + 1} of {count}" if count > 1 else "")
        caption.update(f"{where}: decoder cross-attention (last layer, heads averaged); "
                       "source across, translation down")

    # ----- events -------------------------------------------------------------------------------
    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area.id == "source":
            self._invalidate(delay=self.debounce)

    def on_text_area_selection_changed(self, event: TextArea.SelectionChanged) -> None:
        if event.text_area.id == "source":
            self._show_details()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.value is Select.NULL:
            return
        if event.select.id == "direction":
            self._set_direction(event.value)
            self._invalidate(delay=0)
        elif event.select.id == "mode":
            self.settings.mode = event.value
            self.query_one("#beam", Input).disabled = event.value != "beam"
            self.query_one("#temperature", Input).disabled = event.value != "sampling"
            self._invalidate(delay=0)
        elif event.select.id == "provider" and event.value != self.provider_request:
            if self.translator is None and self.model_path is None and not self.load_on_start:
                self.provider_request = event.value
                return
            self.load(self.model_path, event.value)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id not in SETTINGS_INPUTS:
            return
        name, kind, label = SETTINGS_INPUTS[event.input.id]
        if event.validation_result is not None and not event.validation_result.is_valid:
            self.set_error(event.input.id, f"{label}: {' '.join(event.validation_result.failure_descriptions)}")
            return
        try:
            DecodeOptions(**{name: kind(event.value)})          # the runtime's rule for this value
        except OptionError as e:
            self.set_error(event.input.id, e.message(lambda field: label if field == name else field))
            return
        self.set_error(event.input.id, "")
        setattr(self.settings, name, kind(event.value))
        self._invalidate(delay=self.debounce)

    def on_option_list_option_selected(self, event: HistoryList.OptionSelected) -> None:
        if event.option_list.id == "history":
            self.restore(event.option_index)

    # ----- actions ------------------------------------------------------------------------------
    def restore(self, index: int) -> None:
        """Put history entry `index` back on screen, without translating it again."""
        entry = self.history.entries[index]
        self.generation += 1            # whatever is in flight is now stale
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        select = self.query_one("#direction", Select)
        if entry.direction in self.directions and select.value != entry.direction:
            with select.prevent(Select.Changed):
                select.value = entry.direction
        self._set_direction(entry.direction)
        source = self.query_one("#source", TextArea)
        with source.prevent(TextArea.Changed):
            source.load_text(entry.source)
        self._show_outcome(replace(entry, generation=self.generation))
        self.set_error("translation", "")
        self.set_stats(f"Restored from history ({entry.settings}).")

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_translate_now(self) -> None:
        self._invalidate(delay=0)

    def action_next_direction(self) -> None:
        select = self.query_one("#direction", Select)
        if self.directions:
            i = self.directions.index(self.direction) if self.direction in self.directions else -1
            select.value = self.directions[(i + 1) % len(self.directions)]

    def action_swap(self) -> None:
        """Reverse the direction and make the translation the new source."""
        if self.direction is None:
            return
        select = self.query_one("#direction", Select)
        reverse = (self.direction[1], self.direction[0])
        if reverse not in self.directions:
            self.notify(f"This model does not translate {direction_label(reverse)}.", severity="warning")
            return
        output = self.target_text
        if output.strip():
            source = self.query_one("#source", TextArea)
            with source.prevent(TextArea.Changed):
                source.load_text(output)
        select.value = reverse      # its Changed event translates the new source

    def action_copy_result(self) -> None:
        text = self.target_text
        if not text.strip():
            self.notify("Nothing to copy yet.", severity="warning")
            return
        self.copy_to_clipboard(text)
        self.notify(f"Copied {len(text)} characters to the clipboard.")

    def action_clear(self) -> None:
        self.query_one("#source", TextArea).load_text("")
        self.query_one("#source").focus()

    def action_open_model(self) -> None:
        current = str(self.translator.path) if self.translator is not None else (self.model_path or "")

        def opened(path: str | None) -> None:
            if path:
                self.load(path, self.provider_request)

        self.push_screen(OpenModelScreen(current), opened)


@command("mt-tui")
@model_options
def main(model: str | None, from_lang: str | None, to: str | None, provider: str, variant: str,
         threads: int | None) -> None:
    """Translate interactively in the terminal: live as you type, fully offline."""
    require("onnxruntime")          # one line now rather than an error inside the app (imported later, in a worker)
    MTApp(model_path=model, provider=provider, variant=variant, threads=threads, direction=(from_lang, to)).run()


if __name__ == "__main__":
    main()
