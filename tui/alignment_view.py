"""A heatmap of the decoder's cross-attention: source tokens across, target tokens down.

Rendered as a rich Text grid with one background colour per cell, so it works in any terminal
with colour; the strongest source token of each row also gets a dot, so it reads without colour.
"""

from __future__ import annotations

import math
import re

from rich.text import Text
from textual.color import Color
from textual.widgets import Static

# Viridis stops: dark (no attention) to bright (all of it); readable on dark and light themes.
RAMP = [Color.parse(c) for c in ("#440154", "#3b528b", "#21918c", "#5ec962", "#fde725")]
MAX_LABEL = 12          # longest token label before it is cut
# Tokens shown on each axis: a grid is one styled cell per token pair, and a long sentence has
# thousands of pairs (seconds to build and draw, for more than a screen can show).
MAX_TOKENS = 60


def weight_colour(w: float) -> Color:
    """Colour of a weight in [0, 1] along the ramp."""
    w = min(max(w, 0.0), 1.0) * (len(RAMP) - 1)
    i = min(int(w), len(RAMP) - 2)
    return RAMP[i].blend(RAMP[i + 1], w - i)


def token_label(piece: str) -> str:
    byte = re.fullmatch(r"<0x([0-9A-Fa-f]{2})>", piece)      # SentencePiece byte fallback
    if byte and 0x20 < int(byte.group(1), 16) < 0x7F:
        piece = chr(int(byte.group(1), 16))
    label = piece.replace("\n", " ")
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…"


def heatmap(source_tokens: list[str], target_tokens: list[str], weights, limit: int = MAX_TOKENS) -> Text:
    """The grid as rich Text. `weights` has one row per target token and one column per source
    token (each row sums to 1). Colours follow the square root of the weight: weak links stay
    visible, and diffuse attention reads as dark rather than being stretched to look sharp.
    Only the first `limit` tokens of each axis are shown; the legend says when some are not."""
    rows = [list(map(float, r)) for r in weights[: min(len(target_tokens), limit)]]
    cols = [token_label(t) for t in source_tokens[:limit]]
    widths = [max(len(c), 2) + 1 for c in cols]
    row_labels = [token_label(t) for t in target_tokens[: len(rows)]]
    label_width = max([len(r) for r in row_labels] + [1]) + 1

    text = Text(no_wrap=True, overflow="crop")
    if len(source_tokens) > len(cols) or len(target_tokens) > len(rows):
        text.append(f"the first {len(rows)} of {len(target_tokens)} translation tokens and {len(cols)} of "
                    f"{len(source_tokens)} source tokens   ", style="bold")
    text.append("weight 0 ", style="dim")
    for step in range(10):
        text.append("  ", style=f"on {weight_colour(step / 9).hex}")
    text.append(" 1 (square-root scale)   ● strongest source token of each row\n", style="dim")
    text.append(" " * label_width)
    for col, width in zip(cols, widths):
        text.append(col.ljust(width), style="bold")
    for label, row in zip(row_labels, rows):
        text.append("\n")
        text.append(label.rjust(label_width - 1) + " ", style="bold")
        best = max(range(len(row)), key=row.__getitem__) if row else -1     # over the whole row, shown or not
        for j, width in enumerate(widths):
            w = row[j] if j < len(row) else 0.0
            bg = weight_colour(math.sqrt(max(w, 0.0)))
            fg = "black" if bg.brightness > 0.5 else "white"
            mark = "●" if j == best else " "
            text.append(mark.center(width - 1) + " ", style=f"{fg} on {bg.hex}")
    return text


class AlignmentView(Static):
    """Shows one sentence's alignment, or a hint when there is none."""

    DEFAULT_CSS = """
    AlignmentView { width: auto; height: auto; }
    """

    grid: Text | None = None     # what is on show, for tests and screenshots

    def show_alignment(self, alignment, rows: slice = slice(None), cols: slice = slice(None)) -> None:
        """`alignment`: a runtime Alignment (.source_tokens, .target_tokens, .weights); `rows` and
        `cols` pick one sentence's block of it."""
        self.grid = heatmap(list(alignment.source_tokens[cols]), list(alignment.target_tokens[rows]),
                            [list(r)[cols] for r in alignment.weights[rows][:MAX_TOKENS]])
        self.update(self.grid)

    def show_message(self, message: str) -> None:
        self.grid = None
        self.update(Text(message, style="italic"))
