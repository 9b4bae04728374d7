"""Plain text written in wrapped paragraphs, in and out (`mt-translate --paragraphs`,
`Translator.translate_paragraphs`): an e-mail, a README.txt, a man page's prose.

Line by line, a sentence that the wrapping cut in two is translated in two halves, which reads badly
(benchmarks/cut_sentences.py measures the same cut in subtitles). Here the lines of a paragraph are
joined, translated as one text, and wrapped again at the paragraph's width, with its indentation.
A paragraph ends at a blank line, before a line that starts a list item ("-", "*", "•", "1."), and
after a line much shorter than the widest of its block (the last line of a paragraph); the lines of a
block no wider than NARROW (a greeting, an address, a poem) stay lines of their own. Blank lines and
line endings are kept.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable

LIST_ITEM = re.compile(r"\s*(?:[-*•·–]|\d{1,3}[.)])\s+")
SHORT = 0.75                # a line shorter than this share of its block's widest ends its paragraph
NARROW = 40                 # a block no wider than this is not wrapped prose (a greeting, an address): line by line
SENTENCE_END = re.compile(r"""[.!?…:;"'»“”)]$""")


def translate_paragraphs(translator, document: str, to=None, options=None, *, from_lang: str = "auto",
                         glossary=None, **overrides) -> str:
    """`document` with each paragraph translated as one text and wrapped again as it was."""
    lines = document.splitlines(keepends=True)
    bodies = [line.rstrip("\r\n") for line in lines]
    paragraphs = _paragraphs(bodies)
    leads = [_lead(bodies[a]) for a, _, _ in paragraphs]          # indentation, or a list item's marker: kept
    texts = [" ".join([bodies[a][len(lead):].strip(), *(bodies[i].strip() for i in range(a + 1, b))]).strip()
             for (a, b, _), lead in zip(paragraphs, leads)]
    translations = translator.translate(texts, to, options, from_lang=from_lang, glossary=glossary, **overrides)
    for (a, b, width), indent, translation in reversed(list(zip(paragraphs, leads, translations))):
        if b - a == 1:
            new = [indent + translation.text]
        else:
            after = bodies[a + 1][:len(bodies[a + 1]) - len(bodies[a + 1].lstrip())]
            new = textwrap.wrap(translation.text, width, initial_indent=indent, subsequent_indent=after,
                                break_long_words=False, break_on_hyphens=False) or [indent]
        ending = lines[b - 1][len(bodies[b - 1]):]            # the last line's ending ("" at the end of a file)
        newline = lines[a][len(bodies[a]):] or "\n"
        lines[a:b] = [line + newline for line in new[:-1]] + [new[-1] + ending]
    return "".join(lines)


def looks_wrapped(lines: Iterable[str]) -> bool:
    """Whether text read line by line looks like wrapped paragraphs: lines that break off mid-sentence
    (40 characters or more, no sentence end) with more text on the next line, at least twice and for
    half of its lines that long (wrapped text breaks almost every one; one sentence a line, almost none).
    The lines are read once, in order: a file's may be streamed."""
    broken = long = 0
    previous = ""
    for line in lines:
        broken += len(previous) >= NARROW and not SENTENCE_END.search(previous.rstrip()) and bool(line.strip())
        long += len(line) >= NARROW
        previous = line
    return broken >= 2 and broken >= 0.5 * long


def _lead(line: str) -> str:
    """What a paragraph's first line starts with that is not text: its indentation, or a list item's marker."""
    marker = LIST_ITEM.match(line)
    return marker.group() if marker else line[:len(line) - len(line.lstrip())]


def _paragraphs(bodies: list[str]) -> list[tuple[int, int, int]]:
    """(first line, end, width) of each paragraph: runs of non-blank lines, cut before a list item and
    after a short line; width: the widest line of its block."""
    paragraphs: list[tuple[int, int, int]] = []
    i = 0
    while i < len(bodies):
        if not bodies[i].strip():
            i += 1
            continue
        end = i
        while end < len(bodies) and bodies[end].strip():
            end += 1
        width = max(len(body) for body in bodies[i:end])      # the block's: its lines were wrapped to it
        start = i
        for j in range(i + 1, end + 1):
            if j == end or width <= NARROW or LIST_ITEM.match(bodies[j]) or len(bodies[j - 1]) < SHORT * width:
                paragraphs.append((start, j, width))
                start = j
        i = end
    return paragraphs
