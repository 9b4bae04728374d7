"""The n-best list of the current sentence, best first, with the search's scores."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static


class Alternatives(Static):
    def show_translation(self, translation) -> None:
        """`translation`: a runtime Translation; its `.hypotheses` are the n-best list."""
        hypotheses = list(translation.hypotheses or []) or [translation]
        table = Table(box=None, padding=(0, 1), expand=True, show_edge=False)
        table.add_column("#", justify="right", style="dim", no_wrap=True)
        table.add_column("score", justify="right", no_wrap=True)
        table.add_column("tokens", justify="right", style="dim", no_wrap=True)
        table.add_column("translation", ratio=1)
        for i, hyp in enumerate(hypotheses, 1):
            style = "bold" if i == 1 else ""
            table.add_row(str(i), f"{hyp.score:.3f}", str(len(hyp.tokens)), Text(hyp.text, style=style))
        self.update(table)

    def show_message(self, message: str) -> None:
        self.update(Text(message, style="italic"))
