"""Past translations, newest first; selecting one restores it."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from .state import Outcome, direction_label


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


class HistoryList(OptionList):
    """Option i is history entry i (the app keeps the entries in a `state.History`)."""

    def show_entries(self, entries: list[Outcome]) -> None:
        options = []
        for i, entry in enumerate(entries):
            label = Text()
            label.append(f"{direction_label(entry.direction)}  ", style="dim")
            label.append(_one_line(entry.source, 40))
            label.append("  →  ", style="dim")
            label.append(_one_line(entry.text, 60), style="bold")
            options.append(Option(label, id=f"h{i}"))
        highlighted = self.highlighted
        self.clear_options()
        self.add_options(options)
        if options:
            self.highlighted = 0 if highlighted is None else min(highlighted, len(options) - 1)
