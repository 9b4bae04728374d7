"""Subtitles in, subtitles out: the text of each cue of an SRT or WebVTT file translated, everything
else kept as it was (numbers, timings, the WEBVTT header, NOTE and STYLE blocks, line endings), for
`mt-translate --subtitles` and `Translator.translate_subtitles`.

A cue is the lines after a timing line ("00:00:01,000 --> 00:00:03,500"), up to a blank line. Its
lines are translated as one text and wrapped again into as many lines, of balanced length; a
dialogue cue (every line starting with "-") is translated line by line. Markup inside a cue (<i>,
<b>, <font>, WebVTT's <v Speaker>) goes through runtime/markup.py. Each cue is translated on its
own: a sentence that runs over two cues is translated in two halves.
"""

from __future__ import annotations

import re

TIMING = re.compile(r"^\s*(?:\d+:)?\d{1,2}:\d{2}[,.]\d{3}\s*-->\s*(?:\d+:)?\d{1,2}:\d{2}[,.]\d{3}")
DIALOGUE = re.compile(r"^(\s*-\s*)(.*)$")


def looks_like_subtitles(text: str) -> bool:
    """Whether `text` (the first lines of a file, say) reads as SRT or WebVTT."""
    return text.lstrip("\ufeff").startswith("WEBVTT") or any(TIMING.match(line) for line in text.splitlines()[:5])


def translate_subtitles(translator, document: str, to=None, options=None, *, from_lang: str = "auto",
                        glossary=None, **overrides) -> str:
    """`document` (SRT or WebVTT) with each cue's text translated and all else kept."""
    lines = document.splitlines(keepends=True)
    cues = []                            # per cue: its line numbers, their text, and where its texts are in `texts`
    texts: list[str] = []
    for _, numbers in _cues(lines):
        bodies = [_body(lines[i]) for i in numbers]
        dialogue = len(bodies) > 1 and all(DIALOGUE.match(b) for b in bodies)
        parts = [DIALOGUE.match(b).group(2) for b in bodies] if dialogue else [" ".join(b.strip() for b in bodies)]
        cues.append((numbers, bodies, range(len(texts), len(texts) + len(parts))))
        texts += parts
    settings = dict(from_lang=from_lang, glossary=glossary, **overrides)
    done = _translated(translator, texts, document.lstrip("\ufeff").startswith("WEBVTT"), to, options, settings)
    out = list(lines)
    for numbers, bodies, places in cues:
        translated = [done[i] or texts[i] for i in places]
        if len(translated) > 1:                           # dialogue: line by line, dashes kept
            new = [DIALOGUE.match(b).group(1) + t for b, t in zip(bodies, translated)]
        else:
            new = wrap(translated[0], len(bodies))
        for n, i in enumerate(numbers):                   # a cue never gets a blank line: that would end it
            out[i] = new[n] + lines[i][len(bodies[n]):] if n < len(new) else ""
    return "".join(out)


def _translated(translator, texts: list[str], vtt: bool, to, options, settings: dict) -> list[str]:
    """Each cue text translated: plain ones as text, those with tags (<i>, <v Anna>) as HTML fragments."""
    from .markup import translate_fragments

    done = [""] * len(texts)
    plain = [i for i, t in enumerate(texts) if "<" not in t]
    marked = [i for i, t in enumerate(texts) if "<" in t]
    if plain:
        for i, tr in zip(plain, translator.translate([texts[i] for i in plain], to, options, **settings)):
            done[i] = tr.text
    if marked:
        import html                      # not on mt-translate's start-up path, which imports this module
        fragments = translate_fragments(translator, [texts[i] for i in marked], to, options, **settings)
        for i, fragment in zip(marked, fragments):   # WebVTT reads entities; SRT players show them as they are
            done[i] = fragment if vtt else html.unescape(fragment)
    return done


def _body(line: str) -> str:
    return line.rstrip("\r\n")


def _cues(lines: list[str]) -> list[tuple[int, list[int]]]:
    """(timing line, its text lines) for each cue: the lines after a timing line, to a blank one."""
    cues, i = [], 0
    while i < len(lines):
        if TIMING.match(lines[i]):
            j = i + 1
            while j < len(lines) and _body(lines[j]).strip():
                j += 1
            if j > i + 1:
                cues.append((i, list(range(i + 1, j))))
            i = j
        else:
            i += 1
    return cues


def wrap(text: str, count: int) -> list[str]:
    """`text` in at most `count` lines of about equal length, broken at spaces (no empty ones)."""
    words = text.split()
    count = min(count, len(words))
    if count <= 1:
        return [text.strip()]
    lines, rest = [], words
    for n in range(count, 1, -1):                 # each line as close to an equal share of the rest as it gets
        goal = len(" ".join(rest)) / n
        take, length = 1, len(rest[0])
        while take < len(rest) - n + 1 and abs(length + 1 + len(rest[take]) - goal) < abs(length - goal):
            length += 1 + len(rest[take])
            take += 1
        lines.append(" ".join(rest[:take]))
        rest = rest[take:]
    return lines + [" ".join(rest)]
