"""The two lines between the editors and the panels: what just happened, and what went wrong.

Both show their text literally: messages quote paths and library errors (`[ONNXRuntimeError]`)
that Rich would otherwise read as markup and swallow.
"""

from __future__ import annotations

from textual.widgets import Static

# The runtime's messages are written for the command line; inside the app the same advice names
# the app's own controls.
APP_TERMS = [
    ("use --provider cpu", "choose CPU under Provider"),
]


def in_app_terms(message: str) -> str:
    for cli, app in APP_TERMS:
        message = message.replace(cli, app)
    return message


class StatusLine(Static):
    """One line: loading, translating, or the last translation's timing and settings."""

    def __init__(self, id: str | None = None) -> None:
        super().__init__("", markup=False, id=id)
        self.last_result = ""       # shown again when a later message (a failed load) is over

    def show_result(self, text: str) -> None:
        self.last_result = text
        self.update(text)


class ErrorBar(Static):
    """Problems from several sources ("model", "translation", a settings input), shown together;
    each source replaces or clears only its own. Hidden when there are none."""

    def __init__(self, id: str | None = None) -> None:
        super().__init__("", markup=False, id=id)
        self.problems: dict[str, str] = {}

    def report(self, source: str, message: str) -> None:
        """Show `message` for `source`; "" clears it."""
        self.problems[source] = in_app_terms(message)
        shown = [m for m in self.problems.values() if m]
        self.update("\n".join(shown))
        self.display = bool(shown)

    def clear(self, *sources: str) -> None:
        for source in sources:
            self.report(source, "")
