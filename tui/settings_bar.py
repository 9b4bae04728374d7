"""The settings bar: translation direction, decoding mode with its numbers, and the provider.

It shows what the app binds to it (`directions`, `direction`, `provider`, `in_use`) and reports
what the user picks as messages; the decoding settings it keeps itself, and it reports them only
when valid (an invalid number is reported as a `Problem` instead).
"""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.validation import Integer, Number
from textual.widgets import Input, Label, Select, Static

from mtkit.runtime.decode_options import DecodeOptions, OptionError, field_help

from .state import DecodeSettings, direction_label

PROVIDERS = [("auto", "auto"), ("CPU", "cpu"), ("CUDA", "cuda")]
MODES = [("Greedy", "greedy"), ("Beam search", "beam"), ("Sampling", "sampling")]
# The number inputs: the DecodeOptions field each sets, its type, its name in messages and the mode
# that shows it. Beyond the bar's maxima, DecodeOptions checks the values, as it checks the CLIs' flags.
NUMBERS = {"beam": ("beam_size", int, "Beam size", "beam"),
           "temperature": ("temperature", float, "Temperature", "sampling"),
           "top-p": ("top_p", float, "Top-p", "sampling")}


class SettingsBar(Horizontal):
    directions: reactive[list[tuple[str, str]]] = reactive(list)   # what the loaded model offers
    direction: reactive[tuple[str, str] | None] = reactive(None)
    provider: reactive[str] = reactive("auto")                      # the provider asked for
    in_use: reactive[str] = reactive("")                            # the provider really in use
    provider_note: reactive[str] = reactive("")                     # why, shown as the tooltip of in_use

    class DirectionPicked(Message):
        def __init__(self, direction: tuple[str, str]) -> None:
            super().__init__()
            self.direction = direction

    class ProviderPicked(Message):
        def __init__(self, provider: str) -> None:
            super().__init__()
            self.provider = provider

    class SettingsChanged(Message):
        def __init__(self, settings: DecodeSettings, now: bool) -> None:
            super().__init__()
            self.settings = settings
            self.now = now              # a choice (translate at once), not typing (wait for a pause)

    class Problem(Message):
        def __init__(self, source: str, message: str) -> None:
            super().__init__()
            self.source, self.message = source, message       # message "": the problem is gone

    def __init__(self, provider: str, id: str | None = None) -> None:
        super().__init__(id=id)
        self.settings = DecodeSettings()
        self.set_reactive(SettingsBar.provider, provider)
        self._first_provider = provider     # for compose: reading a reactive there would run its watcher

    def compose(self) -> ComposeResult:
        s = self.settings
        yield Label("To", classes="tb-label first")
        yield Select([], prompt="no model", compact=True, id="direction")
        yield Label("Decoding", classes="tb-label wide-only")
        yield Select(MODES, value=s.mode, allow_blank=False, compact=True, id="mode")
        with Horizontal(id="beam-settings", classes="mode-settings"):
            yield Label("beam", classes="tb-label")
            yield Input(str(s.beam_size), type="integer", compact=True, id="beam",
                        validators=[Integer(maximum=16)], tooltip=f"{field_help('beam_size')} At most 16 here.")
        with Horizontal(id="sampling-settings", classes="mode-settings"):
            yield Label("T", classes="tb-label")
            yield Input(f"{s.temperature:g}", type="number", compact=True, id="temperature",
                        validators=[Number(maximum=5.0)], tooltip=f"{field_help('temperature')} At most 5 here.")
            yield Label("top-p", classes="tb-label")
            yield Input(f"{s.top_p:g}", type="number", compact=True, id="top-p", tooltip=field_help("top_p"))
        yield Label("Provider", classes="tb-label wide-only")
        yield Select(PROVIDERS, value=self._first_provider, allow_blank=False, compact=True, id="provider",
                     tooltip="Where the model runs: auto picks CUDA when ONNX Runtime has it, else the CPU.")
        yield Static("", markup=False, id="in-use")

    def on_mount(self) -> None:
        self.show_mode(self.settings.mode)

    def show_mode(self, mode: str) -> None:
        """Only the current mode's numbers are on show."""
        self.query_one("#beam-settings").display = mode == "beam"
        self.query_one("#sampling-settings").display = mode == "sampling"

    # ----- what the app binds -------------------------------------------------------------------
    def watch_directions(self, directions: list[tuple[str, str]]) -> None:
        select = self.query_one("#direction", Select)
        with select.prevent(Select.Changed):
            select.set_options([(direction_label(d), d) for d in directions])
            if self.direction in directions:
                select.value = self.direction

    def watch_direction(self, direction: tuple[str, str] | None) -> None:
        select = self.query_one("#direction", Select)
        if direction in self.directions and select.value != direction:
            with select.prevent(Select.Changed):
                select.value = direction

    def watch_provider(self) -> None:
        self.show_provider()

    def show_provider(self) -> None:
        """The switch shows `provider` (also after a switch to another one failed)."""
        select = self.query_one("#provider", Select)
        if select.value != self.provider:
            with select.prevent(Select.Changed):
                select.value = self.provider

    def watch_in_use(self, in_use: str) -> None:
        self.query_one("#in-use", Static).update(f"in use: {in_use.upper()}" if in_use else "")

    def watch_provider_note(self, note: str) -> None:
        # Text: a tooltip string is markup, and the note may quote a graph's path ("[v2]", "[/x]").
        self.query_one("#in-use", Static).tooltip = Text(note) if note else None

    # ----- what the user picks ------------------------------------------------------------------
    @on(Select.Changed, "#direction")
    def direction_picked(self, event: Select.Changed) -> None:
        event.stop()
        if event.value is not Select.NULL:
            self.post_message(self.DirectionPicked(event.value))

    @on(Select.Changed, "#provider")
    def provider_picked(self, event: Select.Changed) -> None:
        event.stop()
        if event.value is not Select.NULL and event.value != self.provider:
            self.post_message(self.ProviderPicked(event.value))

    @on(Select.Changed, "#mode")
    def mode_picked(self, event: Select.Changed) -> None:
        event.stop()
        if event.value is Select.NULL:
            return
        self.show_mode(event.value)
        self.settings = replace(self.settings, mode=event.value)
        # A hidden input's problem is no longer shown; a shown one's is shown again (the settings
        # keep its last valid value meanwhile, and the status line says which).
        for box in self.query(Input):
            if NUMBERS[box.id][3] == event.value:
                self.check(box)
            else:
                self.post_message(self.Problem(box.id, ""))
        self.post_message(self.SettingsChanged(self.settings, now=True))

    @on(Input.Changed)
    def number_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.check(event.input):
            self.post_message(self.SettingsChanged(self.settings, now=False))

    def check(self, box: Input) -> bool:
        """Report the problem with `box`'s value (or that there is none); a valid value goes into
        the settings. Returns whether it was valid."""
        name, kind, label, _ = NUMBERS[box.id]
        result = box.validate(box.value)
        if result is not None and not result.is_valid:
            self.post_message(self.Problem(box.id, f"{label}: {' '.join(result.failure_descriptions)}"))
            return False
        try:
            value = kind(box.value)
            DecodeOptions(**{name: value})          # the runtime's rule for this value
        except OptionError as e:
            self.post_message(self.Problem(box.id, e.message(lambda f: label if f == name else f)))
            return False
        except ValueError:
            self.post_message(self.Problem(box.id, f"{label}: not a number"))
            return False
        self.post_message(self.Problem(box.id, ""))
        self.settings = replace(self.settings, **{name: value})
        return True
