"""The tabbed panels below the editors: alternatives and alignment of the line under the cursor,
the history of past translations, and the model's details."""

from __future__ import annotations

from typing import NamedTuple

from textual import on
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

    # The line whose details are on show: (Outcome.segment's find or None, cursor row, column), and
    # what each panel shows of it (a Translation, and a (Translation, rows, cols) block): the cursor
    # moves on every key, and the panels redraw only when what they show changes.
    line: tuple[tuple | None, int, int] = (None, 0, 0)
    _alternatives_of = None
    _alignment_of: tuple | None = None

    def show_line(self, outcome: Outcome | None, row: int, column: int) -> None:
        """Alternatives and alignment of the source line at `row`, the cursor at `column`."""
        found = outcome.segment(row) if outcome else None
        self.line = (found, row, column)
        translation = found[2] if found else None
        if translation is None or translation is not self._alternatives_of:
            alternatives = self.query_one(Alternatives)
            if translation is None:
                alternatives.show_message("Alternatives of the current line appear here.")
            else:
                alternatives.show_translation(translation)
            self._alternatives_of = translation
        # The heatmap is the costly part: drawn only while its tab is on show (and when it opens).
        if self.query_one(TabbedContent).active == PANELS["alignment"].tab:
            self.show_alignment()

    @on(TabbedContent.TabActivated)
    def tab_opened(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == PANELS["alignment"].tab:
            self.show_alignment()

    def show_alignment(self) -> None:
        """The alignment of the sentence under the cursor in `line`."""
        found, row, column = self.line
        alignment = self.query_one(AlignmentView)
        caption = self.query_one("#alignment-caption", Label)
        if found is None or found[2].alignment is None:
            self._alignment_of = None
            alignment.show_message("The alignment of the current line appears here." if found is None else
                                   "This translation has no alignment.")
            caption.update("")
            return
        line, source, translation = found
        k, count, (rows, cols) = current_block(translation.alignment, source, column if line == row else 0)
        shown = self._alignment_of
        if shown is None or shown[0] is not translation or shown[1:] != (rows, cols):
            alignment.show_alignment(translation.alignment, rows, cols)
            self._alignment_of = (translation, rows, cols)
        where = f"Line {line + 1}" + (f", sentence {k + 1} of {count}" if count > 1 else "")
        caption.update(f"{where}: decoder cross-attention (last layer, heads averaged); "
                       "source across, translation down")

    def show_history(self, entries: list[Outcome]) -> None:
        self.query_one(HistoryList).show_entries(entries)

    def show_model(self, translator, glossary: str | None = None) -> None:
        self.query_one(ModelInfo).show_translator(translator, glossary)
