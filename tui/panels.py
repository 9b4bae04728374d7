"""The tabbed panels below the editors: alternatives and alignment of the line under the cursor,
the history of past translations, and the model's details."""

from __future__ import annotations

from typing import NamedTuple

from textual.app import ComposeResult
from textual.containers import ScrollableContainer, Vertical, VerticalScroll
from textual.widgets import Label, TabbedContent, TabPane

from .alignment_view import AlignmentView
from .alternatives import Alternatives
from .history_list import HistoryList
from .model_info import ModelInfo
from .state import Outcome, current_block


class Panel(NamedTuple):
    tab: str        # the TabPane's id
    title: str
    key: str        # the app binds it; help lists it


# The keys are alt+digit, as tabs in a browser: the free F-keys are taken, F6 and F7 by the editors.
PANELS = {
    "alternatives": Panel("tab-alternatives", "Alternatives", "alt+1"),
    "alignment": Panel("tab-alignment", "Alignment", "alt+2"),
    "history": Panel("tab-history", "History", "alt+3"),
    "model": Panel("tab-model", "Model", "alt+4"),
}


class Panels(Vertical):
    def compose(self) -> ComposeResult:
        with TabbedContent(id="panels"):
            with TabPane(PANELS["alternatives"].title, id=PANELS["alternatives"].tab):
                with VerticalScroll():
                    yield Alternatives(id="alternatives")
            with TabPane(PANELS["alignment"].title, id=PANELS["alignment"].tab):
                yield Label("", id="alignment-caption", markup=False)
                with ScrollableContainer(id="alignment-scroll"):
                    yield AlignmentView(id="alignment")
            with TabPane(PANELS["history"].title, id=PANELS["history"].tab):
                yield HistoryList(id="history")
            with TabPane(PANELS["model"].title, id=PANELS["model"].tab):
                with VerticalScroll():
                    yield ModelInfo(id="model-info")

    def on_mount(self) -> None:
        self.show_line(None, 0, 0)
        self.query_one(ModelInfo).show_message("No model loaded. ctrl+o opens a bundle.")

    def open(self, panel: str) -> None:
        self.query_one(TabbedContent).active = PANELS[panel].tab
        if panel == "history":
            self.query_one(HistoryList).focus()     # the one panel to act in: enter restores an entry

    def show_line(self, outcome: Outcome | None, row: int, column: int) -> None:
        """Alternatives and alignment of the source line at `row`, the cursor at `column`."""
        alternatives = self.query_one(Alternatives)
        alignment = self.query_one(AlignmentView)
        caption = self.query_one("#alignment-caption", Label)
        found = outcome.segment(row) if outcome else None
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

    def show_history(self, entries: list[Outcome]) -> None:
        self.query_one(HistoryList).show_entries(entries)

    def show_model(self, translator) -> None:
        self.query_one(ModelInfo).show_translator(translator)
