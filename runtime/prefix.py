"""A target prefix: text a translation must start with, which the model then continues.

This is what interactive translation is built on (CTranslate2's `target_prefix`, Marian's forced
decoding): a translator types the first words of the translation they want, and the model completes
the sentence to fit them. The search feeds the prefix's tokens one by one instead of choosing them,
so the rest of the sentence is what the model finds most likely after them.

A prefix that ends inside a word ("The train to Mun") is completed, not cut: its whole words are
forced as tokens, and the unfinished word only constrains what comes next to pieces that spell it
out ("▁Munich", or "▁Mu" then "nich"), since SentencePiece's pieces for "Mun" alone are rarely how
the model spells the word it wants.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from .repetition import WORD_START, Pieces


@dataclass(frozen=True)
class Prefix:
    tokens: tuple[int, ...]          # forced one by one
    spelling: str = ""               # then pieces must spell this out (pieces' text, "▁" for a space)

    @classmethod
    def of(cls, text: str, tokenizer) -> "Prefix":
        """The prefix for `text` with a SentencePiece processor: its last word is left open unless the
        text ends in a space, after which the next token must start a word."""
        if text[-1:].isspace() or not text.strip():
            return cls(tuple(tokenizer.encode(text)), WORD_START if text.strip() else "")
        *head, word = text.rsplit(maxsplit=1)
        pieces = tokenizer.id_to_piece(tokenizer.encode(word))
        if any(map(is_control, pieces)):    # a character the vocabulary spells in bytes, or lacks: forced as is
            return cls(tuple(tokenizer.encode(text)))
        return cls(tuple(tokenizer.encode(head[0]) if head else ()), "".join(pieces))

    @property
    def most_steps(self) -> int:
        """The decoding steps this prefix can take at most (one piece per character of the spelling)."""
        return len(self.tokens) + len(self.spelling)

    def allowed(self, done: list[int], pieces: Pieces | None) -> list[int] | None:
        """The token ids that may come after `done` (a hypothesis's tokens so far), or None once the
        prefix is complete and the model is free (also when no piece can spell what is left)."""
        if len(done) < len(self.tokens):
            return [self.tokens[len(done)]]
        if not self.spelling:
            return None
        if pieces is None:
            raise ValueError("a prefix that ends inside a word needs the vocabulary's pieces")
        written = sum(len(pieces.by_id[t]) for t in done[len(self.tokens):])
        rest = self.spelling[written:]
        return (spelling_out(rest, pieces) or None) if rest else None


def allowed_rows(prefixes: list[Prefix | None], histories: list[list[int]], pieces: Pieces | None) -> dict[int, list[int]]:
    """{row: token ids} for the rows still inside their prefix, given each row's prefix and tokens so far."""
    allows = {}
    for row, (prefix, done) in enumerate(zip(prefixes, histories)):
        if prefix is not None and (ids := prefix.allowed(done, pieces)) is not None:
            allows[row] = ids
    return allows


def spelling_out(rest: str, pieces: Pieces) -> list[int]:
    """Ids of the pieces that may come next to spell `rest`: those that start with all of it, and those
    that are a beginning of it after which the rest can still be spelled. Control pieces ("<s>",
    "<2en>", "<0x41>") spell nothing."""
    known: dict[str, bool] = {}

    def spellable(text: str) -> bool:
        if text not in known:
            known[text] = bool(completing(text, pieces)) or any(beginnings(text))
        return known[text]

    def beginnings(text: str):
        for n in range(1, len(text)):
            i = pieces.ids.get(text[:n])
            if i is not None and not is_control(text[:n]) and spellable(text[n:]):
                yield i

    return completing(rest, pieces) + list(beginnings(rest))


def completing(rest: str, pieces: Pieces) -> list[int]:
    """Ids of the pieces that start with `rest`, control pieces left out."""
    order = pieces.in_text_order
    start, end = bisect_left(order, (rest,)), bisect_left(order, (rest + "\U0010ffff",))
    return [i for piece, i in order[start:end] if not is_control(piece)]


def is_control(piece: str) -> bool:
    return len(piece) > 2 and piece.startswith("<") and piece.endswith(">")
