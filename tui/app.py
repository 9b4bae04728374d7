"""mt-tui: an interactive translator in the terminal, on the torch-free runtime.

The app holds the state (the model, its directions, the direction in use, the result on screen)
as reactive attributes; the widgets bound to them redraw themselves. Typing re-translates after a
pause; the request pipeline (debounce, thread workers, stale results) is in `controller.py`, the
command line in `cli.py`. Each source line is translated on its own; the panels below the editors
show the line under the cursor. Writing in the translation steers it: after the same pause, the
line is translated again from what the user wrote before the cursor (the runtime's target prefix),
and keeps that start while its source line stays as it is. A glossary given (mt-tui --glossary) goes
with every translation, as long as the model loaded translates between its languages.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.reactive import var
from textual.widgets import Footer, Header, OptionList, TextArea
from textual.worker import WorkerState

from .controller import Loads, Requests
from .editors import Editors, SourceArea
from .file_screen import TranslateFileScreen
from .given_glossary import GivenGlossary
from .panels import PANELS, Panels
from .screens import HelpScreen, OpenModelScreen
from .settings_bar import SettingsBar
from .state import (AUTO, MAX_INPUT_CHARS, DecodeSettings, History, Outcome, bundle_directions, direction_choices,
                    direction_label, language_name, split_segments)
from .status import ErrorBar, StatusLine

DEBOUNCE_SECONDS = 0.4
NARROW = 100            # columns: below, the screen is -narrow and the footer compact
NO_MODEL = "No model loaded. ctrl+o opens a bundle."
QUIT_AGAIN_SECONDS = 4  # with text in the source, ctrl+q quits when pressed again within this


@dataclass(frozen=True)
class Scene:
    """A direction and the translation shown in it (None: none yet). A swap or a history restore
    marks its edit of the source with the scenes before and after it: undoing (redoing) the edit
    brings back the one before (after), so the text never stands under another direction."""
    direction: tuple[str, str] | None
    outcome: Outcome | None = None


class MTApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "mt-tui"
    # The screen gets -narrow below NARROW columns: app.tcss tightens the settings bar and the footer.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW, "-wide")]
    BINDINGS = [
        Binding("f1", "help", "Help"),
        Binding("f2", "swap", "Swap", priority=True),
        Binding("f3", "next_direction", "Direction", priority=True, show=False),
        Binding("f4", "copy_result", "Copy", priority=True),
        Binding("f5,ctrl+enter", "translate_now", "Translate", priority=True),
        # One footer entry for the four panel keys; help lists each.
        *(Binding(key, f"open_panel('{name}')", "Panels" if i == 0 else title, priority=True, show=i == 0,
                  key_display="alt+1…4" if i == 0 else None) for i, (name, (_, title, key)) in enumerate(PANELS.items())),
        Binding("ctrl+o", "open_model", "Open", priority=True),
        Binding("ctrl+t", "translate_file", "File", priority=True),
        Binding("ctrl+l", "clear", "Clear", priority=True, show=False),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    translator = var(None, init=False)                          # a runtime Translator, once loaded
    directions: var[list[tuple[str, str]]] = var(list)          # what the loaded model supports, and auto → X
    direction: var[tuple[str, str] | None] = var(None)          # the direction in use; source AUTO: detected
    provider = var("auto")                                      # the provider asked for
    in_use = var("")                                            # the provider really in use
    provider_note = var("")                                     # why, when it differs from the one asked for
    outcome: var[Outcome | None] = var(None, init=False)        # the result on screen

    def __init__(self, model_path: str | Path | None = None, provider: str = "auto", variant: str = "auto",
                 threads: int | None = None, debounce: float = DEBOUNCE_SECONDS, load_model: bool = True,
                 direction: tuple[str | None, str | None] = (None, None), translator=None,
                 glossary: GivenGlossary | None = None) -> None:
        """`translator`: the model of `model_path`, already loaded (mt-tui loads it first, to check
        its options as mt-translate does); else the app loads it. `glossary`: applied to every
        translation of a model whose languages it fits."""
        super().__init__()
        self.given_glossary = glossary
        self.glossary = None        # the runtime Glossary in use: the one given, if it fits the model loaded
        self.model_path = None if model_path is None else str(model_path)
        self.requested_direction = direction    # (--from, --to), either may be None: used at the first load
        self.loaded = translator
        self.set_reactive(MTApp.provider, provider)
        self.load_on_start = load_model         # False: start model-less (the layout snapshots)
        self.settings = DecodeSettings()
        self.history = History()
        self.requests = Requests(self, debounce, due=self.translate_source, done=self.show_result,
                                 failed=self.translation_failed)
        self.loads = Loads(self, ready=self.model_ready, failed=self.load_failed, threads=threads, variant=variant)
        self.quit_asked = -QUIT_AGAIN_SECONDS     # when ctrl+q last warned (time.monotonic)

    def compose(self) -> ComposeResult:
        yield Header()
        yield SettingsBar(self.provider, id="toolbar").data_bind(
            MTApp.directions, MTApp.direction, MTApp.provider, MTApp.in_use, MTApp.provider_note)
        yield Editors(id="editors").data_bind(MTApp.direction)
        yield StatusLine(id="stats")
        yield ErrorBar(id="error")
        yield Panels(id="details")
        yield Footer()

    def on_mount(self) -> None:
        self.editors.source.focus()
        if self.loaded is not None:
            self.model_ready(self.model_path, self.provider, self.loaded)
        elif self.load_on_start:
            self.load(self.model_path, self.provider)
        else:
            self.errors.report("model", NO_MODEL)

    # ----- parts, and what tests read -----------------------------------------------------------
    @property
    def editors(self) -> Editors:
        return self.query_one(Editors)

    @property
    def errors(self) -> ErrorBar:
        return self.query_one(ErrorBar)

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

    @property
    def panels(self) -> Panels:
        return self.query_one(Panels)

    @property
    def source_text(self) -> str:
        return self.editors.source.text

    @property
    def target_text(self) -> str:
        return self.editors.target.text

    @property
    def busy(self) -> bool:
        """A translation waits on the debounce timer, or a worker (load, translate) still runs."""
        return self.requests.waiting or any(
            w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in self.workers)

    # ----- state: each change redraws what shows it ---------------------------------------------
    def watch_translator(self, translator) -> None:
        name = Path(str(translator.path)).name
        in_use = f" · glossary {Path(self.given_glossary.path).name}" if self.glossary else ""
        self.sub_title = f"{name} · {translator.variant}{in_use}"
        self.in_use = str(translator.provider)
        self.provider_note = getattr(translator, "provider_note", "")
        glossary = None
        if self.given_glossary:
            off = "" if self.glossary else ": off, not for this model's languages"
            glossary = self.given_glossary.describe() + off
        self.panels.show_model(translator, glossary)

    def watch_outcome(self, outcome: Outcome | None) -> None:
        self.editors.show_translation(outcome.text if outcome else "")
        self.show_line_details()

    def show_line_details(self) -> None:
        """The panels follow the cursor of the editor in use (a column only means something in the source)."""
        if self.editors.target.has_focus:
            self.panels.show_line(self.outcome, self.editors.target.cursor_location[0], 0)
        else:
            self.panels.show_line(self.outcome, *self.editors.source.cursor_location)

    # ----- loading a model ----------------------------------------------------------------------
    def load(self, path: str | None, provider: str) -> None:
        self.status.update(f"Loading {path or 'the default model'} ({provider})…")
        self.loads.start(path, provider)

    def model_ready(self, path: str | None, provider: str, translator) -> None:
        self.model_path, self.provider = path, provider
        self.directions = direction_choices(bundle_directions(translator.config))
        self.direction = self.direction if self.direction in self.directions else self.first_direction()
        self.glossary = self.glossary_for(translator)       # before the translator: its watcher shows it
        self.translator = translator
        self.errors.clear("model")
        actual = str(translator.provider).upper()
        self.status.update(f"Loaded {Path(str(translator.path)).name} ({translator.variant}, {actual}).")
        if provider == "cuda" and actual != "CUDA":
            self.notify(f"CUDA was asked for, but the model runs on {actual}.", severity="warning")
        self.requests.invalidate(delay=0)

    def glossary_for(self, translator):
        """The glossary to translate with on `translator`: the one given, unless the model translates
        other languages; then none, and a notice says so (ctrl+o may open any model)."""
        given = self.given_glossary
        problem = given.misfit(translator) if given else None
        if problem:
            self.notify(f"{problem}. Translating without it.", title="Glossary off", severity="warning",
                        timeout=8, markup=False)
        return given.glossary if given and not problem else None

    def first_direction(self) -> tuple[str, str] | None:
        """The direction asked for with --from / --to (once; no --from is auto, as for mt-translate),
        else the first."""
        source, target = self.requested_direction
        self.requested_direction = (None, None)
        wanted = [d for d in self.directions if d[0] == (source or AUTO) and target in (None, d[1])]
        if (source or target) and not wanted:
            self.notify(f"This model does not translate {source or '*'} → {target or '*'}; its directions: "
                        f"{', '.join(map(direction_label, self.directions))}.", severity="warning", timeout=8)
        return (wanted or self.directions or [None])[0]

    def load_failed(self, path: str | None, provider: str, error: Exception) -> None:
        message = str(error) or type(error).__name__
        if self.translator is not None and path == self.model_path:
            # A provider switch failed: the model already loaded keeps working.
            self.query_one(SettingsBar).show_provider()     # the switch goes back to what is in use
            title = "Provider not available"
            self.errors.report("model", f"Cannot use provider {provider!r}: {message}. "
                                        f"Still running on {self.in_use.upper()}.")
        elif self.translator is not None:
            title = "Model not opened"
            ended = message if message.endswith((".", "?", "!")) else message + "."      # "...by mt-export?"
            self.errors.report("model", f"Cannot open that model: {ended} The previous model stays loaded.")
        else:
            title = "Model not loaded"
            self.errors.report("model", f"Cannot load the model: {message}\nctrl+o opens another bundle.")
        self.status.update("No model loaded." if self.translator is None else
                           self.status.last_result if self.outcome else "")
        self.notify(self.errors.problems["model"], title=title, severity="error", timeout=8, markup=False)

    # ----- translating --------------------------------------------------------------------------
    def translate_source(self) -> None:
        """The debounce is over (or a key asked): translate the source as it is now."""
        text = self.source_text
        if not text.strip():
            self.outcome = None
            self.errors.clear("translation")
            if not self.loads.loading:
                self.status.update("")
        elif len(text) > MAX_INPUT_CHARS:
            self.outcome = None
            self.status.update("")
            self.errors.report("translation", f"Input too long: {len(text):,} characters (the limit is "
                                              f"{MAX_INPUT_CHARS:,}). ctrl+t translates a whole file.")
        elif self.translator is None or self.direction is None:
            if not self.loads.loading:
                self.status.update("No model loaded: ctrl+o opens a bundle.")
        else:
            self.status.update("Translating…")
            kept = self.outcome is not None and self.outcome.direction == self.direction   # starts are in its target
            starts = self.outcome.starts_for(split_segments(text)) if kept else {}
            self.requests.start(self.translator, text, self.direction, self.settings, starts, self.glossary)

    def complete_lines(self) -> None:
        """The pause after writing in the translation is over: translate each line written in (each that
        differs from the translation on record) again, starting with what the user wrote (on the
        cursor's line, up to the cursor), and let the model write the rest. A line emptied is
        translated afresh."""
        outcome, target = self.outcome, self.editors.target
        if outcome is None or self.translator is None:
            return
        if outcome.source != self.source_text:     # the source changed too: its translation comes first
            self.translate_source()
            return
        lines, shown = target.text.split("\n"), outcome.text.split("\n")
        if len(lines) != len(shown):
            self.errors.report("translation", "Keep one translation line per source line to have them completed "
                                              "(ctrl+z undoes the line break).")
            return
        row, column = target.cursor_location
        starts = {r: (line[:column] if r == row else line) for r, line in enumerate(lines)
                  if line != shown[r] and outcome.segments[r].strip()}
        if not starts:
            return
        self.status.update("Completing…")
        self.requests.complete(self.translator, outcome, {r: s if s.strip() else None for r, s in starts.items()},
                               self.settings, self.glossary)

    def show_result(self, outcome: Outcome) -> None:
        self.outcome = outcome
        notes = [w for r in outcome.results if r is not None for w in getattr(r, "warnings", [])]
        self.errors.clear("model")              # a translation worked: an earlier failure is over
        self.errors.report("translation", "Note: " + "; ".join(notes) if notes else "")
        tokens = outcome.target_tokens
        rate = tokens / outcome.seconds if outcome.seconds > 0 else 0.0
        kept = outcome.kept      # first: else "0 tokens" alone would say why nothing changed
        note = (f"{kept} sentence{'s' if kept > 1 else ''} left as is: detected as "
                f"{language_name(outcome.direction[1])}, the target language · ") if kept else ""
        self.status.show_result(f"{note}{outcome.seconds * 1000:.0f} ms · {rate:.0f} tokens/s · {tokens} tokens · "
                                f"{outcome.settings} · {self.in_use.upper()}")
        if self.history.record(outcome):
            self.panels.show_history(self.history.entries)

    def translation_failed(self, error: Exception) -> None:
        self.outcome = None
        self.status.update("")
        self.errors.report("translation", f"Translation failed: {error}")
        self.notify(self.errors.problems["translation"], title="Translation failed", severity="error",
                    markup=False)

    # ----- events -------------------------------------------------------------------------------
    def on_resize(self, event: events.Resize) -> None:
        self.query_one(Footer).compact = event.size.width < NARROW     # its keys fit in 80 columns
    @on(TextArea.Changed, "#source")
    def source_changed(self) -> None:
        self.requests.invalidate()

    @on(SourceArea.Stepped)
    def source_stepped(self, event: SourceArea.Stepped) -> None:
        """ctrl+z (ctrl+y) took back (did again) a swap or a history restore: the direction goes with the
        text, and the translation shown then comes back if it is of the text and settings as they are."""
        before, after = event.mark
        scene = before if event.undone else after
        self.requests.cancel()          # the Changed of the undo asked to translate in the direction it leaves
        self.direction = scene.direction
        outcome = scene.outcome
        if (outcome is not None and outcome.source == self.source_text and outcome.direction == self.direction
                and outcome.settings == self.settings.describe()):
            self.outcome = replace(outcome, generation=self.requests.generation)    # as it was: not translated again
            self.errors.clear("translation")
            self.status.update(f"{'Undone' if event.undone else 'Redone'}: the translation as it was shown "
                               f"({outcome.settings}).")
        else:
            self.requests.invalidate(delay=0)

    @on(TextArea.Changed, "#target")
    def target_edited(self) -> None:
        """The user wrote in the translation (the app's own updates send no Changed)."""
        if self.outcome is not None:
            self.requests.invalidate(due=self.complete_lines)

    @on(TextArea.SelectionChanged)
    def cursor_moved(self) -> None:
        self.show_line_details()

    def on_settings_bar_direction_picked(self, event: SettingsBar.DirectionPicked) -> None:
        self.direction = event.direction
        self.requests.invalidate(delay=0)

    def on_settings_bar_settings_changed(self, event: SettingsBar.SettingsChanged) -> None:
        self.settings = event.settings
        self.requests.invalidate(delay=0 if event.now else None)

    def on_settings_bar_problem(self, event: SettingsBar.Problem) -> None:
        self.errors.report(event.source, event.message)

    def on_settings_bar_provider_picked(self, event: SettingsBar.ProviderPicked) -> None:
        if self.translator is None and self.model_path is None and not self.load_on_start:
            self.provider = event.provider      # nothing to load yet: used by the next load
        else:
            self.load(self.model_path, event.provider)

    @on(OptionList.OptionSelected, "#history")
    def history_picked(self, event: OptionList.OptionSelected) -> None:
        self.restore(event.option_index)

    # ----- actions ------------------------------------------------------------------------------
    def restore(self, index: int) -> None:
        """Put history entry `index` back on screen, without translating it again."""
        entry = self.history.entries[index]
        self.requests.cancel()                  # whatever is in flight is now stale
        mark = (Scene(self.direction, self.outcome), Scene(entry.direction, entry))
        self.direction = entry.direction
        self.editors.set_source(entry.source, quiet=True, mark=mark)
        self.outcome = replace(entry, generation=self.requests.generation)
        self.errors.clear("translation")
        self.status.update(f"Restored from history ({entry.settings}).")

    def action_quit(self) -> None:
        """The text lives only in the app (nothing is kept on disk): with some in the source, a first
        ctrl+q only says so, and a second one quits."""
        now = time.monotonic()
        if self.source_text.strip() and now - self.quit_asked > QUIT_AGAIN_SECONDS:
            self.quit_asked = now
            self.notify("Quitting drops the text (nothing is kept on disk): press ctrl+q again to quit.",
                        severity="warning", timeout=QUIT_AGAIN_SECONDS)
            return
        self.exit()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_translate_now(self) -> None:
        self.requests.invalidate(delay=0)

    def translation_is_current(self, key: str) -> bool:
        """Whether the translation on screen is of the source as it is now (the text, direction and
        settings). If not, a notice says why, and a translation waiting on the pause starts now."""
        if self.outcome is not None and self.outcome.generation == self.requests.generation:
            return True
        if self.requests.pending:
            if self.requests.waiting:
                self.requests.invalidate(delay=0)
            self.notify(f"Still translating… press {key} again when the translation is shown.", severity="warning")
        else:
            self.notify("There is no translation of this text.", severity="warning")
        return False

    def action_swap(self) -> None:
        """As a translator app's swap button: the direction reverses and the translation becomes
        the source (translated back at once). Undo (ctrl+z) takes the swap back as a whole: the text
        swapped out, the direction and its translation (see `Scene`)."""
        if self.direction is None or (self.source_text.strip() and not self.translation_is_current("F2")):
            return
        source, target = self.direction
        if source == AUTO:      # the language the text was in, else the first the target translates into
            detected = self.outcome.detected if self.outcome is not None else None
            others = [b for a, b in self.directions if a == target]
            source = detected if detected in others else next(iter(others), source)
        reverse = (target, source)
        if reverse not in self.directions:
            self.notify(f"This model does not translate {direction_label(reverse)}.", severity="warning")
            return
        if self.target_text.strip():
            self.editors.set_source(self.target_text, quiet=True,
                                    mark=(Scene(self.direction, self.outcome), Scene(reverse)))
        self.direction = reverse
        self.requests.invalidate(delay=0)

    def action_next_direction(self) -> None:
        """The model's next direction; the source text stays (for text typed in the other language)."""
        if self.directions:
            i = self.directions.index(self.direction) if self.direction in self.directions else -1
            self.direction = self.directions[(i + 1) % len(self.directions)]
            self.requests.invalidate(delay=0)

    def action_open_panel(self, panel: str) -> None:
        self.panels.open(panel)

    def action_copy_result(self) -> None:
        if self.source_text.strip() and not self.translation_is_current("F4"):
            return
        text = self.target_text
        if not text.strip():
            self.notify("Nothing to copy yet.", severity="warning")
            return
        self.copy_to_clipboard(text)
        self.notify(f"Copied {len(text)} characters to the clipboard.")

    def action_clear(self) -> None:
        self.editors.set_source("")
        self.editors.source.focus()

    def action_translate_file(self) -> None:
        if self.translator is None or self.direction is None:
            self.notify("No model loaded: ctrl+o opens a bundle.", severity="warning")
            return
        try:
            options = replace(self.settings.options(), return_alignment=False, num_hypotheses=1)
        except Exception as e:          # OptionError: the settings bar shows it too
            self.notify(f"Check the decoding settings: {e}", severity="error", markup=False)
            return
        languages = {language for direction in self.directions for language in direction}
        self.push_screen(TranslateFileScreen(self.translator, self.direction, options, languages, self.glossary))

    def action_open_model(self) -> None:
        current = str(self.translator.path) if self.translator is not None else (self.model_path or "")

        def opened(path: str | None) -> None:
            if path:
                self.load(path, self.provider)

        self.push_screen(OpenModelScreen(current), opened)
