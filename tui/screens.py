"""Modal screens: the help page and the "open a model" prompt."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from .panels import PANELS
from .state import SAMPLING_TEMPERATURE, SAMPLING_TOP_P

KEYS = [
    ("F1", "this help"),
    ("F2", "swap: the direction reverses and the translation becomes the source"),
    ("F3", "next translation direction; the source text stays (for text typed in the other language)"),
    ("F4", "copy the translation to the clipboard (OSC 52: the terminal must allow it)"),
    ("F5, ctrl+enter", "translate now (ctrl+enter only where the terminal sends it)"),
    *((key, f"{title} panel" + (" (focuses the list: enter restores an entry)" if name == "history" else ""))
      for name, (_, title, key) in PANELS.items()),
    ("ctrl+o", "open another model bundle (a directory, or a .tar.gz / .zip of one)"),
    ("ctrl+t", "translate a whole file (a document, a book, subtitles, text) into a file beside it"),
    ("ctrl+l", "clear the source"),
    ("tab, shift+tab", "move between the editors, the settings and the panels"),
    ("ctrl+p", "command palette"),
    ("ctrl+q", "quit; with text in the source, press it twice (the text is not kept)"),
]

ABOUT = [
    ("", "Private, offline translation: the model runs on this machine and nothing leaves it. "
         "Type or paste text on the left; the translation follows on the right after a short pause "
         "in typing. Each line is translated on its own."),
    ("Direction", "auto → X detects the language of each sentence and leaves one already in X as it is "
                  "(the status line says so); a direction with a source language translates every sentence "
                  "from that language."),
    ("Steering", "write in the translation to change it: after the same pause, the line is translated again "
                 "from what you wrote before the cursor, and the model completes it to fit (the Alternatives "
                 "panel lists other completions). The line keeps your start until its source line changes."),
    ("Decoding", "greedy takes the likeliest token at each step; beam search keeps the best few "
                 "partial translations (the Alternatives panel lists them with their scores); sampling "
                 "draws tokens at random from the top-p share of the probability, wilder as the "
                 f"temperature rises (T {SAMPLING_TEMPERATURE:g} and top-p {SAMPLING_TOP_P:g} to start)."),
    ("Panels", "for the line under the cursor. Alignment shows which source tokens the decoder "
               "attended to for each output token, for the sentence under the cursor (last decoder "
               "layer, heads averaged; brighter is stronger). History keeps past translations in "
               "memory only, never on disk: enter restores one. Model shows the bundle's languages, "
               "size, precision, parity and BLEU."),
    ("Provider", "auto runs on CUDA when ONNX Runtime has it, else on the CPU; what is really in use "
                 "is shown next to the switch."),
]


def help_text() -> Group:
    keys = Table.grid(padding=(0, 2))
    keys.add_column(style="bold", no_wrap=True)
    keys.add_column()
    for key, action in KEYS:
        keys.add_row(key, action)
    about = []
    for title, body in ABOUT:
        line = Text()
        if title:
            line.append(f"{title}: ", style="bold")
        line.append(body)
        about += [line, Text()]
    return Group(Text("mt-tui", style="bold"), Text(), *about, keys, Text(),
                 Text("escape or F1 closes this page", style="dim"))


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Static(help_text())


class OpenModelScreen(ModalScreen[str | None]):
    """Asks for a bundle path; dismisses with it, or None on escape."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, current: str = "") -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="open-dialog"):
            yield Label("Open a model bundle: a directory written by mt-export, or a .tar.gz or .zip of one.")
            yield Input(value=self.current, placeholder="path/to/bundle", id="open-path")
            yield Label("enter: open    escape: cancel", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)
