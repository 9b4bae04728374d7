"""The two editors side by side, titled with the languages of the current direction: the source,
and its translation, which the user may write in to steer it (the app completes the line)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import TextArea
from textual.widgets.text_area import Edit

from .state import AUTO, language_name


# Control characters that would stay in a line (not tab, nor the line breaks the editor splits at):
# Textual draws a line's characters raw, so a pasted escape sequence reached the terminal and
# cleared the screen, left its alternate screen or swallowed the output after it. The model
# drops them anyway.
CONTROLS = dict.fromkeys(c for c in [*range(0x20), *range(0x7f, 0xa0)]
                         if chr(c) != "\t" and len(f"a{chr(c)}b".splitlines()) == 1)


class PlainTextArea(TextArea):
    """A TextArea that keeps no control characters in its text (see CONTROLS)."""

    def edit(self, edit: Edit):
        edit.text = edit.text.translate(CONTROLS)
        return super().edit(edit)


@dataclass
class MarkedEdit(Edit):
    """An edit of the source that carries what else changed with it (see `SourceArea`)."""
    mark: object = None


class SourceArea(PlainTextArea):
    """The source editor. An edit the app makes along with other state (a swap also reverses the
    direction) carries a `mark`; undoing or redoing that edit posts `Stepped` with it, so the app
    takes the rest back too, and text and direction never get out of step."""

    @dataclass
    class Stepped(Message):
        mark: object
        undone: bool            # True: undone (back to before the edit); False: redone

    def replace_all(self, text: str, mark: object = None) -> None:
        """Replace the whole text as one undo step of its own (not merged with the typing before or after it)."""
        self.history.checkpoint()
        self.edit(MarkedEdit(text, (0, 0), self.document.end, maintain_selection_offset=False, mark=mark))
        self.history.checkpoint()

    def undo(self) -> None:
        self._step(self.history.undo_stack, super().undo, undone=True)

    def redo(self) -> None:
        self._step(self.history.redo_stack, super().redo, undone=False)

    def _step(self, stack: list[list[Edit]], step, undone: bool) -> None:
        batch = stack[-1] if stack else []      # the batch this undo (redo) takes back (does again)
        step()
        for edit in batch:
            if isinstance(edit, MarkedEdit) and edit.mark is not None:
                self.post_message(self.Stepped(edit.mark, undone))


class Editors(Horizontal):
    direction: reactive[tuple[str, str] | None] = reactive(None)

    def compose(self) -> ComposeResult:
        yield SourceArea(id="source", placeholder="Type or paste text to translate…")
        yield PlainTextArea(id="target", placeholder="The translation appears here. Write in it to steer it: "
                                                "the line is completed from the cursor.")

    @property
    def source(self) -> SourceArea:
        return self.query_one("#source", SourceArea)

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

    def set_source(self, text: str, quiet: bool = False, mark: object = None) -> None:
        """Replace the source text as one edit, which undo (ctrl+z) takes back; `quiet`: without
        the Changed event that starts a translation; `mark`: see `SourceArea`."""
        source = self.source
        if quiet:
            with source.prevent(TextArea.Changed):
                source.replace_all(text, mark)
        else:
            source.replace_all(text, mark)
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
