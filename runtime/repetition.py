"""The tokens a hypothesis may not take next, so that it cannot repeat itself: an n-gram seen before
(`no_repeat_ngram_size`), or one more copy of a run it just repeated (`no_repeat_loop`, on by default).

Loops are caught twice: in token ids, and in words when the vocabulary's pieces are known. The model
can spell a word in several ways ("▁Eurozone", or "▁Euro" + "zone"), and a copy spelled another way
has other ids, so only the words show that "in der Eurozone in der Eurozone" repeats.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .decode_options import DecodeOptions
from .vocab import byte_value, character_length, never_output, never_starts

WORD_START = "\u2581"      # SentencePiece's "▁": the piece begins a word


@dataclass(frozen=True)
class Pieces:
    """A vocabulary's pieces by id, and the ids by piece."""
    by_id: Sequence[str]
    ids: dict[str, int]

    @classmethod
    def of(cls, pieces: Sequence[str]) -> "Pieces":
        return cls(tuple(pieces), {piece: i for i, piece in enumerate(pieces)})

    @classmethod
    def of_tokenizer(cls, tokenizer) -> "Pieces":
        """From a SentencePiece processor (~8 ms for 16k pieces: the Translator builds it while its
        ONNX Runtime sessions load)."""
        return cls.of(tokenizer.id_to_piece(list(range(tokenizer.get_piece_size()))))

    def prepare(self) -> "Pieces":
        """Compute now what every search reads (about 5 ms for 16k pieces in Python): the Translator
        does it while its ONNX Runtime sessions load, instead of in its first translation."""
        for name in ("never", "byte_ids", "high_byte_ids", "leads_longer_than"):
            getattr(self, name)
        return self

    @functools.cached_property
    def never(self) -> np.ndarray:
        """[V] bool: the ids no output may take (vocab.never_output). A mask: `never[ids]` is one gather."""
        mask = np.zeros(len(self.by_id), dtype=bool)
        mask[never_output(self.by_id)] = True
        return mask

    @functools.cached_property
    def byte_values(self) -> np.ndarray:
        """[V] int16: the byte each byte piece stands for, -1 for the other pieces (byte_pieces.py)."""
        return np.array([-1 if (b := byte_value(p)) is None else b for p in self.by_id], dtype=np.int16)

    @functools.cached_property
    def byte_ids(self) -> np.ndarray:
        """[256]: the id of each byte's piece, -1 where the vocabulary has none."""
        ids = np.full(256, -1, dtype=np.int64)
        found = np.flatnonzero(self.byte_values >= 0)
        ids[self.byte_values[found]] = found
        return ids

    @functools.cached_property
    def high_byte_ids(self) -> frozenset[int]:
        """The ids of the byte pieces of 0x80 and up (those of characters outside ASCII)."""
        return frozenset(np.flatnonzero(self.byte_values >= 0x80).tolist())

    @functools.cached_property
    def leads_longer_than(self) -> list[list[int]]:
        """[m]: the ids of the byte pieces that start a character of more than m bytes (m = 0..3)."""
        by_byte = np.array([0 if byte < 0x80 or never_starts(byte) else character_length(byte)
                            for byte in range(256)])
        lengths = np.where(self.byte_values >= 0, by_byte[self.byte_values], 0)
        return [np.flatnonzero(lengths > m).tolist() for m in range(4)]

    @functools.cached_property
    def in_text_order(self) -> list[tuple[str, int]]:
        """(piece, id) sorted by piece, so that the pieces with a given beginning are one run (prefix.py)."""
        return sorted((piece, i) for i, piece in enumerate(self.by_id))


def banned_tokens(histories: list[list[int]], opts: DecodeOptions, pieces: Pieces | None = None) -> dict[int, list[int]]:
    """{row: token ids} each row may not take next (rows without a ban left out)."""
    if opts.no_repeat_ngram_size <= 0 and opts.no_repeat_loop <= 0:
        return {}
    bans = loop_bans(histories, opts.no_repeat_loop)
    if pieces is not None:
        for row, banned in word_loop_bans(histories, opts.no_repeat_loop, pieces).items():
            bans.setdefault(row, []).extend(banned)
    if opts.no_repeat_ngram_size > 0:
        for row, hist in enumerate(histories):
            if banned := repeated_ngram_ends(hist, opts.no_repeat_ngram_size):
                bans.setdefault(row, []).extend(banned)
    return bans


def loop_copies(period: int) -> int:
    """How many back-to-back copies of a run of `period` tokens (or words) make a loop. Short runs may
    repeat once ("ha ha", "no, no"); a longer one repeated even once is a loop ("in the euro zone in
    the euro zone"). The price: "..." (three "." pieces) comes out as "..". """
    return 3 if period <= 2 else 2


def loop_bans(histories: list[list[int]], max_period: int) -> dict[int, list[int]]:
    """{row: tokens} that would end a loop (see `loop_copies`) of period up to `max_period` tokens.

    Runs every step on every row, so it is kept cheap: a loop of period p needs the last token to
    equal the one p before it, which most rows fail at once (one C-level `in` on a short slice)."""
    bans: dict[int, list[int]] = {}
    if max_period <= 0:
        return bans
    for row, hist in enumerate(histories):
        n = len(hist)
        if n < 2 or hist[-1] not in hist[-max_period - 1:-1]:
            continue
        for period in range(1, min(max_period, n - 1) + 1):
            need = loop_copies(period) * period - 1          # tokens that must already repeat
            if hist[-1 - period] == hist[-1] and need <= n and hist[n - need:n - period] == hist[n - need + period:]:
                bans.setdefault(row, []).append(hist[n - period])    # the token that would close the copy
    return bans


def word_loop_bans(histories: list[list[int]], max_period: int, pieces: Pieces) -> dict[int, list[int]]:
    """{row: tokens} that would end a loop of up to `max_period` words, however each copy is spelled.

    The next token either starts a word, and is banned if it is the whole closing word ("▁Eurozone"),
    or continues the last word, and is banned if it completes it into the closing word ("zone" after
    "▁Euro"). A closing word spelled in three pieces or more is stopped at its last one."""
    bans: dict[int, list[int]] = {}
    if max_period <= 0:
        return bans
    for row, hist in enumerate(histories):
        words = last_words(hist, pieces.by_id, 2 * max_period + 1)
        if len(words) < 2:
            continue
        banned = []
        for closing in loop_closers(words, max_period):                  # the next token starts a word
            if (token := pieces.ids.get(WORD_START + closing)) is not None:
                banned.append(token)
        partial = words[-1]                                             # or continues the last one
        for closing in loop_closers(words[:-1], max_period):
            if len(closing) > len(partial) and closing.startswith(partial):
                if (token := pieces.ids.get(closing[len(partial):])) is not None:
                    banned.append(token)
        if banned:
            bans[row] = banned
    return bans


def last_words(hist: list[int], by_id: Sequence[str], most: int) -> list[str]:
    """The last `most` words of a hypothesis (a word: a piece that starts one, and the pieces after it,
    punctuation included, as `str.split` would see the text)."""
    words: list[str] = []
    word = ""
    for token in reversed(hist):
        piece = by_id[token]
        word = piece + word
        if piece.startswith(WORD_START):
            words.append(word[1:])
            word = ""
            if len(words) == most:
                break
    if word and len(words) < most:      # the text starts inside a word
        words.append(word)
    return words[::-1]


def loop_closers(words: list[str], max_period: int) -> list[str]:
    """The words that, coming next, would end a loop of `words` (see `loop_copies`)."""
    n = len(words)
    if n < 1 or words[-1] not in words[-max_period - 1:-1]:
        return []
    closers = []
    for period in range(1, min(max_period, n) + 1):
        need = loop_copies(period) * period - 1
        if need <= n and words[n - need:n - period] == words[n - need + period:]:
            closers.append(words[n - period])
    return closers


def repeated_ngram_ends(hist: list[int], n: int) -> list[int]:
    """The tokens that would complete an n-gram already present in `hist`."""
    if len(hist) < n:
        return []
    prefix = tuple(hist[len(hist) - n + 1:])
    return [hist[i + n - 1] for i in range(len(hist) - n + 1) if tuple(hist[i:i + n - 1]) == prefix]
