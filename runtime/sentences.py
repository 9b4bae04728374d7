"""A light rule-based sentence splitter, so that a paragraph is translated sentence by sentence
(the models are trained on sentences) and put back together with its original spacing.

A boundary is sentence-final punctuation (. ! ? … and the CJK 。！？), optionally followed by
closing quotes or brackets, then whitespace, then something that can start a sentence (an
upper-case or uncased letter, a digit, an opening quote or bracket). A period does NOT end a sentence after
a known abbreviation ("z.B.", "Dr.", "etc."), a single letter ("J. Smith"), or a number
("am 3. Oktober": German ordinals); "3.5" and "..." inside words never match, as no space follows.
"""

from __future__ import annotations

import re

# Lower-cased, without the final period. Multi-part ones ("z.b") are matched on the whole token.
ABBREVIATIONS = frozenset("""
    z.b d.h u.a usw bzw ca evtl ggf inkl vgl bspw sog etc dr prof hr fr frl nr str st abs abb
    jh jhd mio mrd tel zb dh ua u.ä o.ä s.o s.u i.d.r u.u z.t mr mrs ms jr sr vs e.g i.e cf al approx
    no fig dept est gen gov inc ltd co corp mt jan feb mar apr jun jul aug sep sept oct okt nov dec dez
    mme mlle m av bd
""".split())

# A run of marks is tried from its first one only: from each of them, a long run ("!!!!...") would
# cost O(length ** 2).
_BOUNDARY = re.compile(
    r"""(?:\.\.\.|…|(?<![.!?])[.!?]+)["'”’»«)\]]*(?=\s+["'“‘«»(\[¿¡]*[\w])"""   # Latin punctuation + space + next
    r"""|[。！？]+["'”’」』）)]*""",                                                  # CJK: no space needed
)


def _token_before(text: str, end: int) -> str:
    """The non-space characters just before text[end] (read backwards: a search from the start of a
    long line for each period would cost O(length ** 2))."""
    start = end
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return text[start:end]


def _is_abbreviation(text: str, end: int) -> bool:
    """Whether the period at text[end - 1] closes an abbreviation, an initial or a number."""
    token = _token_before(text, end - 1).lstrip("\"'“‘«»([¿¡").lower()
    if not token:
        return False
    if token in ABBREVIATIONS or token.rstrip(".") in ABBREVIATIONS:
        return True
    if len(token) == 1 and token.isalpha():          # an initial: "J. R. R. Tolkien"
        return True
    if token.isdigit():                              # an ordinal: "am 3. Oktober"
        return True
    return "." in token and all(len(part) <= 2 for part in token.split("."))   # other dotted forms: "u.s."


def _starts_sentence(rest: str) -> bool:
    rest = rest.lstrip().lstrip("\"'“‘«»([¿¡")
    return bool(rest) and not rest[0].islower()      # upper case, digits, uncased scripts (CJK), symbols


def split(text: str) -> list[tuple[str, str]]:
    """`text` as (sentence, separator) pairs: "".join(s + sep) == text. Newlines always separate."""
    pieces: list[tuple[str, str]] = []
    for line in re.split(r"(\r?\n)", text):
        if line in ("\n", "\r\n"):
            if pieces:
                sentence, separator = pieces[-1]
                pieces[-1] = (sentence, separator + line)
            else:
                pieces.append(("", line))
            continue
        start = 0
        for m in _BOUNDARY.finditer(line):
            end = m.end()
            mark = m.group()
            if mark.rstrip("\"'”’»«)]") == "." and _is_abbreviation(line, end - len(mark) + 1):
                continue
            space = re.match(r"\s*", line[end:]).group()
            if not line[end + len(space):] or not _starts_sentence(line[end:]):
                continue
            pieces.append((line[start:end], space))
            start = end + len(space)
        pieces.append((line[start:], ""))
    return pieces


def split_sentences(text: str) -> list[str]:
    """Just the sentences, without separators or empty pieces."""
    return [s for s, _ in split(text) if s.strip()]
