"""Sentences too long for the model, cut into parts at clause boundaries."""

from __future__ import annotations

import math

# A sentence longer than this many tokens is translated in clauses: the model was trained on
# sentences, and its output degrades (and loops) long before the position limit.
CLAUSE_TOKENS = 100
CLAUSE_MARKS = (",", ";", ":", "–", "—", ")")
CONJUNCTIONS = frozenset("""und oder aber denn sondern weil dass wenn als ob obwohl während damit bevor nachdem
    and or but because that which who when while although if before after since so then""".split())


def cut_rank(pieces: list[str], j: int) -> int:
    """How good a place for a cut the start of pieces[j] is: 2 a clause boundary (after a comma,
    semicolon, ... or before a conjunction), 1 another word start, 0 inside a word."""
    if not pieces[j].startswith("▁"):
        return 0
    if pieces[j - 1].endswith(CLAUSE_MARKS) or pieces[j][1:].lower() in CONJUNCTIONS:
        return 2
    return 1


def split_long(ids: list[int], limit: int, pieces: list[str]) -> list[list[int]]:
    """Cut `ids` into parts of at most `limit`, about equal, at clause boundaries where there are
    any (then word starts), each cut in the middle half of where it may go."""
    n_parts = math.ceil(len(ids) / limit)
    parts, start = [], 0
    for k in range(1, n_parts):
        ideal = round(len(ids) * k / n_parts)
        lowest = max(start + 1, len(ids) - (n_parts - k) * limit)      # the rest must still fit
        highest = min(start + limit, len(ids) - 1)
        window = range(max(lowest, ideal - limit // 4), min(highest, ideal + limit // 4) + 1) or range(lowest, highest + 1)
        cut = max(window, key=lambda j: (cut_rank(pieces, j), -abs(j - ideal)))
        parts.append(ids[start:cut])
        start = cut
    parts.append(ids[start:])
    return parts
