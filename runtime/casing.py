"""Sentences written in capitals ("ACHTUNG: NICHT BERÜHREN!", "WARNING: HIGH VOLTAGE").

The model saw few of them in training and copies them letter by letter (the first 500 sentences of
Tatoeba dev de→en in capitals: BLEU 0.4 on the translations in capitals). So each word goes to the
model as the training data mostly spelled it (the bundle's word counts, lexicon.py; for a word they
lack, the spelling with the fewest tokenizer pieces), and the translation goes back into capitals:
BLEU 48.1 there, against 50.5 for the sentences as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

WORD = re.compile(r"[^\W\d_]+")
LETTER = re.compile(r"[^\W\d_]")


def in_capitals(text: str, keep: Collection[str] = ()) -> bool:
    """Whether `text` has four letters or more outside the words in `keep`, and none in lower case."""
    letters = "".join(w for w in WORD.findall(text) if w not in keep)
    return len(letters) >= 4 and letters.isupper()


def usual_case(text: str, count: Callable[[str], int], pieces: Callable[[str], int],
               keep: Collection[str] = ()) -> str:
    """`text` in capitals with each word ("ICH", "RAUM", "I") as most often written ("ich", "Raum",
    "I") by `count`, or else with the fewest `pieces`; words in `keep` as they are; the first letter
    a capital."""
    def usual(m: re.Match) -> str:
        word = m.group()
        if word in keep or not word.isupper():
            return word
        spellings = (word.lower(), word.capitalize(), word)
        if any(count(s) for s in spellings):
            return max(spellings, key=count)
        return min(spellings, key=pieces)
    return LETTER.sub(lambda m: m.group().upper(), WORD.sub(usual, text), count=1)


def to_capitals(text: str, keep: Collection[str] = ()) -> str:
    """`text` in capitals but for the words in `keep` (placeholders, which go back as written)."""
    if not keep:
        return text.upper()
    pattern = re.compile("|".join(rf"\b{re.escape(k)}\b" for k in sorted(keep, key=len, reverse=True)))
    pieces, last = [], 0
    for m in pattern.finditer(text):
        pieces += [text[last:m.start()].upper(), m.group()]
        last = m.end()
    return "".join(pieces + [text[last:].upper()])
