"""Subtitles in, subtitles out: the text of each cue of an SRT or WebVTT file translated, everything
else kept as it was (numbers, timings, the WEBVTT header, NOTE and STYLE blocks, line endings), for
`mt-translate --subtitles` and `Translator.translate_subtitles`.

A cue is the lines after a timing line ("00:00:01,000 --> 00:00:03,500"), up to a blank line. Its
lines are translated as one text and wrapped again into as many lines, of balanced length; a
dialogue cue (every line starting with "-", one line or more) is translated line by line, its
dashes kept. Markup inside a cue (<i>,
<b>, <font>, WebVTT's <v Speaker>) goes through runtime/markup.py; SSA override tags at its start
("{\\an8}") stay there.

Subtitles cut sentences: "Ich habe gestern" in one cue, "einen Hund gesehen." in the next. Halves
translated on their own read badly ("I have yesterday" / "a dog seen."), so cues that run on (no
sentence end, and the next within JOIN_GAP seconds) are translated as one sentence, and the
translation is shared out again over them in proportion to their source text, cut between words, at
a comma where one is near (benchmarks/cut_sentences.py: on Tatoeba test sentences cut over two cues,
BLEU 23.3 -> 40.5 with the shipped model).
"""

from __future__ import annotations

import re
import warnings

from .errors import DocumentError

TIMING = re.compile(r"^\s*(?:\d+:)?\d{1,2}:\d{2}[,.]\d{3}\s*-->\s*(?:\d+:)?\d{1,2}:\d{2}[,.]\d{3}")
STAMP = re.compile(r"(?:(\d+):)?(\d{1,2}):(\d{2})[,.](\d{3})")
DIALOGUE = re.compile(r"^(\s*-\s*)(.*)$")
SENTENCE_END = re.compile(r"""[.!?…:;♪"'»“”)\]]$""")
JOIN_GAP = 2.0              # seconds between cues past which a sentence is taken to have ended anyway
MOST_JOINED = 4             # cues translated as one sentence at most
# SSA override tags, which SRT files carry ("{\an8}": at the top of the screen): kept at the cue's start;
# inside it, italics, bold, underline and strike-through ("{\i1}nie{\i0}") go through markup as their tags.
OVERRIDES = re.compile(r"^\s*(?:\{\\(?![ibus][01]\})[^{}\n]*\}\s*)+")
STYLES = {f"{{\\{k}{on}}}": f"<{'/' * (1 - on)}{k}>" for k in "ibus" for on in (1, 0)}
STYLE = re.compile("|".join(map(re.escape, STYLES)))
SSA_STYLES = {tag: ssa for ssa, tag in STYLES.items()}
SSA_STYLE = re.compile("|".join(map(re.escape, SSA_STYLES)))


def looks_like_subtitles(text: str) -> bool:
    """Whether `text` (the first lines of a file, say) reads as SRT or WebVTT."""
    return text.lstrip("\ufeff").startswith("WEBVTT") or any(TIMING.match(line) for line in text.splitlines()[:5])


class SubtitleWarning(UserWarning):
    """A line of a subtitle file that looks like a timing line but is not one: its cue is not translated."""


def translate_subtitles(translator, document: str, to=None, options=None, *, from_lang: str = "auto",
                        glossary=None, **overrides) -> str:
    """`document` (SRT or WebVTT) with each cue's text translated and all else kept. A TranslationError
    for text with no timing line at all (not subtitles: it would come back unchanged); a SubtitleWarning
    for each line with "-->" that is not a timing line (its cue comes back unchanged)."""
    lines = document.splitlines(keepends=True)
    cues = [_Cue(lines, timing, numbers) for timing, numbers in _cues(lines)]
    vtt = document.lstrip("\ufeff").startswith("WEBVTT")
    check_timings(lines, cues, vtt)
    settings = dict(from_lang=from_lang, glossary=glossary, **overrides)
    groups = _sentences(cues)
    texts = [part for group in groups for part in _parts(group)]
    done = iter(_translated(translator, texts, vtt, to, options, settings))
    new: dict[int, list[str]] = {}                        # cue index -> its translated lines
    alone = []                                            # groups whose translation has fewer words than cues
    for group in groups:
        translated = [next(done) for _ in _parts(group)]
        if len(group) == 1:
            new[group[0].index] = group[0].lines(translated)
        elif shares := share(translated[0], [len(cue.text) for cue in group]):
            new.update((cue.index, wrap(text, len(cue.bodies))) for cue, text in zip(group, shares))
        else:
            alone += group
    if alone:
        texts = [part for cue in alone for part in cue.parts]
        done = iter(_translated(translator, texts, vtt, to, options, settings))
        new.update((cue.index, cue.lines([next(done) for _ in cue.parts])) for cue in alone)
    out = list(lines)
    for cue in cues:
        for n, i in enumerate(cue.numbers):               # a cue never gets a blank line: that would end it
            text = new[cue.index]
            out[i] = text[n] + lines[i][len(cue.bodies[n]):] if n < len(text) else ""
    return "".join(out)


class _Cue:
    """One cue: its text lines (numbers into the document's lines and their text), its times."""

    def __init__(self, lines: list[str], timing: int, numbers: list[int]):
        self.index, self.numbers = timing, numbers
        self.bodies = [_body(lines[i]) for i in numbers]
        stamps = [_seconds(m) for m in STAMP.finditer(lines[timing])][:2]
        self.start, self.end = (stamps + [0.0, 0.0])[:2]
        self.dialogue = all(DIALOGUE.match(b) for b in self.bodies)     # each line a speaker's, after a dash
        self.text = " ".join(b.strip() for b in self.bodies)
        self.parts = [DIALOGUE.match(b).group(2) for b in self.bodies] if self.dialogue else [self.text]

    @property
    def plain(self) -> bool:
        """One speaker's text without markup: no dialogue dash (a new speaker), no tags."""
        return not DIALOGUE.match(self.bodies[0]) and "<" not in self.text and "{\\" not in self.text

    def runs_on(self) -> bool:
        """Whether its sentence may go on into the next cue: plain text that ends without a sentence's end."""
        return self.plain and not SENTENCE_END.search(self.text)

    def lines(self, translated: list[str]) -> list[str]:
        """Its translated parts as its lines: a dialogue line by line, dashes kept; else wrapped again."""
        if self.dialogue:
            return [DIALOGUE.match(b).group(1) + (t or p) for b, t, p in zip(self.bodies, translated, self.parts)]
        return wrap(translated[0] or self.text, len(self.bodies))


def _seconds(stamp: re.Match) -> float:
    hours, minutes, seconds, millis = (int(g or 0) for g in stamp.groups())
    return 3600 * hours + 60 * minutes + seconds + millis / 1000


def _sentences(cues: list[_Cue]) -> list[list[_Cue]]:
    """The cues in groups translated as one text: a cue whose sentence runs on joins the next, when that
    one is plain text too (no new speaker's dash, no markup) and starts within JOIN_GAP seconds, up to
    MOST_JOINED cues."""
    groups: list[list[_Cue]] = []
    for cue in cues:
        last = groups[-1][-1] if groups else None
        if (last is not None and last.runs_on() and len(groups[-1]) < MOST_JOINED and cue.plain
                and 0 <= cue.start - last.end <= JOIN_GAP):
            groups[-1].append(cue)
        else:
            groups.append([cue])
    return groups


def _parts(group: list[_Cue]) -> list[str]:
    """What a group sends to be translated: a cue's parts, or the joined text of several."""
    return group[0].parts if len(group) == 1 else [" ".join(cue.text for cue in group)]


def share(text: str, weights: list[int]) -> list[str] | None:
    """`text` cut between words into len(weights) parts, each about its weight's share of the characters,
    a cut moving to just after a comma (or ;, :, a dash) where one is within a third of a part; None
    if there are fewer words than parts."""
    words = text.split()
    k = len(weights)
    if len(words) < k:
        return None
    ends = []                                             # the character position after each word
    for word in words:
        ends.append((ends[-1] + 1 if ends else 0) + len(word))
    total, cuts, done = ends[-1], [], 0
    for i in range(1, k):
        goal = total * sum(weights[:i]) / sum(weights)
        slack = total / k / 3
        choices = range(done + 1, len(words) - (k - i) + 1)   # at least one word each side
        cut = min(choices, key=lambda j: abs(ends[j - 1] - goal) - (slack if words[j - 1][-1] in ",;:–—" else 0))
        cuts.append(cut)
        done = cut
    bounds = [0, *cuts, len(words)]
    return [" ".join(words[a:b]) for a, b in zip(bounds, bounds[1:])]


def _translated(translator, texts: list[str], vtt: bool, to, options, settings: dict) -> list[str]:
    """Each cue text translated: plain ones as text, those with tags (<i>, <v Anna>) as HTML fragments."""
    from .markup import translate_fragments

    leads = [m.group() if (m := OVERRIDES.match(t)) else "" for t in texts]
    styled = [bool(STYLE.search(t)) for t in texts]
    texts = [STYLE.sub(lambda m: STYLES[m.group()], t[len(lead):]) for t, lead in zip(texts, leads)]
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
    done = [SSA_STYLE.sub(lambda m: SSA_STYLES[m.group()], t) if ssa else t for t, ssa in zip(done, styled)]
    return [lead + text if text else "" for lead, text in zip(leads, done)]


def _body(line: str) -> str:
    return line.rstrip("\r\n")


def check_timings(lines: list[str], cues: list[_Cue], vtt: bool) -> None:
    """Warn of each line outside the cues' text with "-->" that is no timing line (its cue would be left
    untranslated without a word); fail for a document with something in it but no timing line at all
    (not subtitles). A WebVTT file may have no cue: its header alone is a valid one."""
    text = {i for cue in cues for i in cue.numbers}
    malformed = [i for i, line in enumerate(lines) if "-->" in line and i not in text and not TIMING.match(line)]
    if not vtt and "".join(lines).strip() and not any(TIMING.match(line) for line in lines):
        why = (f"line {malformed[0] + 1} is not a valid timing line: {_body(lines[malformed[0]]).strip()}"
               if malformed else 'no line is a timing line such as "00:00:01,000 --> 00:00:03,500"')
        raise DocumentError(f"no subtitle cues found ({why})")
    for i in malformed:         # stacklevel: to the caller of Translator.translate_subtitles
        warnings.warn(f"line {i + 1} is not a valid timing line, so its cue is left untranslated: "
                      f"{_body(lines[i]).strip()}", SubtitleWarning, stacklevel=5)


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
