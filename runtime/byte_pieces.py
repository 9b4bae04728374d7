"""Byte pieces: SentencePiece's byte fallback spells a character the vocabulary lacks as its UTF-8
bytes, one piece each ("<0xE2>", "<0x82>", "<0xAC>" for "€"). A search keeps them well-formed: no
character starts with a continuation byte, a started one gets all of its continuation bytes before
anything else, and none starts that could not end before the hypothesis's length limit. Otherwise a
sample (or, rarely, a beam) decodes to U+FFFD: 99 of 4,096 samples of newstest2013 at temperature 1
had one. With the search head, a row whose K candidates hold no continuing byte keeps them
(search.next_tokens), and the translator drops the unfinished character from the text.
"""

from __future__ import annotations

import numpy as np

from .vocab import CONTINUATION, character_length

# The second byte after the leads that narrow it (no C1 control characters, overlong forms or
# surrogates, nothing past U+10FFFF); after any other lead, and for every later byte, CONTINUATION.
SECOND = {0xC2: range(0xA0, 0xC0), 0xE0: range(0xA0, 0xC0), 0xED: range(0x80, 0xA0), 0xF0: range(0x90, 0xC0),
          0xF4: range(0x80, 0x90)}


def next_bytes(history: list[int], values: np.ndarray) -> range | None:
    """The bytes the last character of `history` (token ids) may take next, or None when no character
    is open. `values`: each id's byte, -1 for pieces that are not bytes."""
    seen = 0
    for token in reversed(history[-4:]):
        byte = int(values[token])
        if byte < 0x80:                  # not a byte piece, or an ASCII one: nothing open
            return None
        if byte in CONTINUATION:
            seen += 1
            continue
        if seen >= character_length(byte) - 1:
            return None
        return SECOND.get(byte, CONTINUATION) if seen == 0 else CONTINUATION
    return None


def open_rows(last: np.ndarray, histories: list[list[int]], pieces) -> dict[int, list[int]]:
    """{row: the byte pieces it may take next} for the rows inside a character; `last` is each row's
    newest token (only a row whose newest token is a high byte needs a look at its history). Python
    scalars, not numpy calls: this runs every step, right after the decoder call (search._greedy)."""
    values, ids, high = pieces.byte_values, pieces.byte_ids, pieces.high_byte_ids
    allows = {}
    for row, token in enumerate(last.tolist()):
        if token in high and (allowed := next_bytes(histories[row], values)) is not None:
            allows[row] = [int(i) for i in ids[allowed.start:allowed.stop] if i >= 0]
    return allows


def unfinishable(remaining: np.ndarray, pieces) -> dict[int, list[int]]:
    """{row: the lead bytes whose character would not end before the row's length limit}; `remaining`
    is each row's steps left, this one included."""
    steps = remaining.tolist()
    if not steps or min(steps) >= 4:
        return {}
    longer_than = pieces.leads_longer_than
    return {row: longer_than[max(left, 0)] for row, left in enumerate(steps) if left < 4}
