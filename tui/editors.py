"""The two editors side by side, titled with the languages of the current direction: the source,
and its translation, which the user may write in to steer it (the app completes the line)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import TextArea

from .state import AUTO, language_name


class Editors(Horizontal):
    direction: reactive[tuple[str, str] | None] = reactive(None)

    def compose(self) -> ComposeResult:
        yield TextArea(id="source", placeholder="Type or paste text to translate…")
        yield TextArea(id="target", placeholder="The translation appears here. Write in it to steer it: "
                                                "the line is completed from the cursor.")

    @property
    def source(self) -> TextArea:
        return self.query_one("#source", TextArea)

    @property
    def target(self) -> TextArea:
        return self.query_one("#target", TextArea)

    def watch_direction(self, direction: tuple[str, str] | None) -> None:
        if direction is None:
            self.source.border_title, self.target.border_title = "Source", "Translation"
        else:
            source, target = direction
            self.source.border_title = "Detect language" if source == AUTO else f"{language_name(source)} ({source})"
            self.target.border_title = f"{language_name(target)} ({target})"

    def set_source(self, text: str, quiet: bool = False) -> None:
        """Replace the source text as one edit, which undo (ctrl+z) takes back; `quiet`: without
        the Changed event that starts a translation."""
        source = self.source
        source.history.checkpoint()     # an undo step of its own, not merged with the typing before it
        if quiet:
            with source.prevent(TextArea.Changed):
                source.replace(text, (0, 0), source.document.end)
        else:
            source.replace(text, (0, 0), source.document.end)
        source.move_cursor((0, 0))

    def show_translation(self, text: str) -> None:
        """Show `text` as the translation (no Changed event: that is for the user's edits). A cursor in
        the translation stays where it was, on the same line."""
        target = self.target
        row, column = target.cursor_location
        with target.prevent(TextArea.Changed):
            target.load_text(text)
        lines = text.split("\n")
        if target.has_focus and row < len(lines):
            target.move_cursor((row, min(column, len(lines[row]))))
