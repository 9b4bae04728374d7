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
    translator.tag_id(to)
    if from_lang.lower() != "auto":
        translator.target_from(from_lang, to)
    vtt = document.lstrip("\ufeff").startswith("WEBVTT")
    lines = document.splitlines(keepends=True)
    cues = _cues(lines)
    texts, places = [], []               # what to translate, and (cue, line or None for the whole cue)
    for c, (_, cue_lines) in enumerate(cues):
        bodies = [_body(lines[i]) for i in cue_lines]
        if len(bodies) > 1 and all(DIALOGUE.match(b) for b in bodies):
            for n, b in enumerate(bodies):
                texts.append(DIALOGUE.match(b).group(2))
                places.append((c, n))
        else:
            texts.append(" ".join(b.strip() for b in bodies))
            places.append((c, None))
    plain = [i for i, t in enumerate(texts) if "<" not in t]
    marked = [i for i, t in enumerate(texts) if "<" in t]
    done: dict[int, str] = {}
    if plain:
        found = translator.translate([texts[i] for i in plain], to, options, from_lang=from_lang, glossary=glossary,
                                     **overrides)
        done.update((i, tr.text) for i, tr in zip(plain, found))
    if marked:
        import html                      # not on mt-translate's start-up path, which imports this module
    for i in marked:                     # WebVTT reads entities; SRT players show them as they are
        page = translator.translate_html(texts[i], to, options, from_lang=from_lang, glossary=glossary, **overrides)
        done[i] = page if vtt else html.unescape(page)
    out = list(lines)
    for c, (_, cue_lines) in enumerate(cues):
        bodies = [_body(lines[i]) for i in cue_lines]
        translated = [done[i] or texts[i] for i, (cue, _) in enumerate(places) if cue == c]
        if len(translated) > 1:                           # dialogue: line by line, dashes kept
            new = [DIALOGUE.match(b).group(1) + t for b, t in zip(bodies, translated)]
        else:
            new = wrap(translated[0], len(bodies))
        for n, i in enumerate(cue_lines):                 # a cue never gets a blank line: that would end it
            out[i] = new[n] + lines[i][len(bodies[n]):] if n < len(new) else ""
    return "".join(out)


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
