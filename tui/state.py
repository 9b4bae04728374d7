"""What the TUI keeps between keystrokes: decoding settings, directions, results and history.

Plain Python (no Textual, no torch), so the rules here read and test on their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mtkit.runtime.decode_options import DecodeOptions

DEFAULTS = DecodeOptions()

# Characters of input above which the app refuses to translate: live translation re-runs on
# every pause in typing, and a terminal pane is no place for a book (use mt-translate for files).
MAX_INPUT_CHARS = 5000

MAX_NBEST = 5           # alternatives shown for beam search
HISTORY_LIMIT = 100

LANGUAGE_NAMES = {
    "ar": "Arabic", "cs": "Czech", "da": "Danish", "de": "German", "el": "Greek", "en": "English",
    "es": "Spanish", "fi": "Finnish", "fr": "French", "hu": "Hungarian", "it": "Italian",
    "ja": "Japanese", "ko": "Korean", "nl": "Dutch", "no": "Norwegian", "pl": "Polish",
    "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sv": "Swedish", "tr": "Turkish",
    "uk": "Ukrainian", "zh": "Chinese",
}


# The source of a direction whose language is detected sentence by sentence (mt-translate --from auto).
AUTO = "auto"


def language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code)


def direction_label(direction: tuple[str, str]) -> str:
    return f"{direction[0]} → {direction[1]}"


def bundle_directions(config) -> list[tuple[str, str]]:
    """Every direction a bundle supports: the trained `directions`, or else every pair of its
    language tags. German → English comes first when present: it is the product's default."""
    found = [(str(d[0]), str(d[1])) for d in config.directions if len(d) == 2]
    if not found:
        langs = sorted(config.language_tags)
        found = [(a, b) for a in langs for b in langs if a != b]
    unique = list(dict.fromkeys(found))
    return sorted(unique, key=lambda d: d != ("de", "en"))


def direction_choices(directions: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """What the direction control offers: "auto → X" for each target X (the default, as for
    mt-translate without --from), then the model's directions with their source language fixed."""
    targets = dict.fromkeys(target for _, target in directions)
    return [(AUTO, target) for target in targets] + directions


# The TUI's sampling. DecodeOptions' neutral defaults (T = 1, no top-p) draw from the model's whole
# tail, which reads as garbage in an interactive app; a cooler temperature and a nucleus cut keep
# the variety and drop the noise. Only the TUI uses these: the API and the CLIs keep DecodeOptions'.
SAMPLING_TEMPERATURE = 0.7
SAMPLING_TOP_P = 0.9


@dataclass(frozen=True)
class DecodeSettings:
    """The toolbar's decoding choices; `options()` turns them into the runtime's `DecodeOptions`,
    which checks them as it checks the CLIs' flags."""

    mode: str = "beam"          # "greedy" | "beam" | "sampling"
    beam_size: int = DEFAULTS.beam_size
    temperature: float = SAMPLING_TEMPERATURE
    top_p: float = SAMPLING_TOP_P

    def options(self) -> DecodeOptions:
        """The options for `Translator.translate`, alignment included (the panel shows it); an
        `OptionError` for a value out of range."""
        if self.mode == "sampling":
            return DecodeOptions(beam_size=1, sampling=True, temperature=self.temperature, top_p=self.top_p,
                                 return_alignment=True)
        if self.mode == "greedy" or self.beam_size == 1:
            return DecodeOptions(beam_size=1, return_alignment=True)
        return DecodeOptions(beam_size=self.beam_size, num_hypotheses=min(max(self.beam_size, 1), MAX_NBEST),
                             return_alignment=True)

    def describe(self) -> str:
        if self.mode == "sampling":
            return f"sampling T={self.temperature:g} top-p {self.top_p:g}"
        if self.mode == "greedy" or self.beam_size == 1:
            return "greedy"
        return f"beam {self.beam_size}"


def split_segments(text: str) -> list[str]:
    """The source as the app translates it: one segment per line (empty lines stay empty)."""
    return text.split("\n")


@dataclass
class Outcome:
    """One finished translation of the whole source text."""

    generation: int
    source: str
    direction: tuple[str, str]
    settings: str                   # DecodeSettings.describe()
    segments: list[str]             # source lines
    results: list                   # a runtime Translation per line, None for blank lines
    seconds: float = 0.0
    starts: dict[int, str] = field(default_factory=dict)   # lines the user steered: the start they wrote

    @property
    def text(self) -> str:
        return "\n".join(r.text if r is not None else "" for r in self.results)

    @property
    def target_tokens(self) -> int:
        return sum(len(r.tokens) for r in self.results if r is not None)

    def _sentences(self) -> list:
        """The runtime's per-sentence language decisions (language_id.SourceLanguage), all lines."""
        return [s for r in self.results if r is not None for s in r.languages]

    @property
    def detected(self) -> str | None:
        """The language most sentences were taken to be in (detected, or as given), or None."""
        found = [s.language for s in self._sentences() if s.language]
        return max(found, key=found.count) if found else None

    @property
    def kept(self) -> int:
        """Sentences left as they are: taken to be in the target language already."""
        return sum(1 for s in self._sentences() if not s.translated and s.language == self.direction[1])

    def starts_for(self, segments: list[str]) -> dict[int, str]:
        """The starts the user wrote, carried over to `segments` (a new version of the source): each goes
        to a line whose source is that of the line it was written for, so an edit elsewhere keeps it."""
        carried, taken = {}, set()
        for row, start in self.starts.items():
            source = self.segments[row]
            near = sorted((i for i, s in enumerate(segments) if s == source and i not in taken),
                          key=lambda i: abs(i - row))
            if near:
                carried[near[0]] = start
                taken.add(near[0])
        return carried

    def segment(self, row: int):
        """(source line, Translation) for the line at `row`, or the nearest translated line
        above it (the cursor may sit on a blank line); None if nothing is translated."""
        row = min(max(row, 0), len(self.results) - 1) if self.results else -1
        for i in range(row, -1, -1):
            if self.results[i] is not None:
                return i, self.segments[i], self.results[i]
        for i in range(row + 1, len(self.results)):
            if self.results[i] is not None:
                return i, self.segments[i], self.results[i]
        return None


@dataclass
class History:
    """Past translations, newest first. Live translation produces a result at every pause in
    typing, so a result that only extends the newest entry's source replaces that entry, and one
    that is a prefix of it (the user deleting) is not kept: one entry per thing typed."""

    entries: list[Outcome] = field(default_factory=list)
    limit: int = HISTORY_LIMIT

    def record(self, outcome: Outcome) -> bool:
        """Add `outcome`; returns whether the history changed."""
        new = outcome.source.strip()
        if not new:
            return False
        if self.entries:
            top = self.entries[0]
            old = top.source.strip()
            if top.direction == outcome.direction:
                if new == old or new.startswith(old):
                    self.entries[0] = outcome
                    return True
                if old.startswith(new):
                    return False
        self.entries = [e for e in self.entries
                        if (e.source.strip(), e.direction) != (new, outcome.direction)]
        self.entries.insert(0, outcome)
        del self.entries[self.limit:]
        return True


def sentence_spans(line: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of `line` that the runtime translates as separate parts
    (it splits the stripped text with `runtime.sentences.split` and skips empty sentences)."""
    from mtkit.runtime.sentences import split

    offset = len(line) - len(line.lstrip())
    spans = []
    for sentence, sep in split(line.strip()):
        if sentence.strip():
            spans.append((offset, offset + len(sentence)))
        offset += len(sentence) + len(sep)
    return spans


def alignment_blocks(alignment) -> list[tuple[slice, slice]]:
    """The (target rows, source columns) block of each decoded part. A line of several sentences
    is decoded part by part: each part's source starts with a language tag `<2xx>` and its target
    ends with `</s>`, and the matrix is block-diagonal (runtime/results.py, Alignment)."""
    from mtkit.runtime.vocab import EOS_PIECE, tag_language

    cols = [j for j, piece in enumerate(alignment.source_tokens) if tag_language(piece) is not None]
    rows = [i + 1 for i, piece in enumerate(alignment.target_tokens) if piece == EOS_PIECE]
    if not cols or cols[0] != 0 or len(cols) != len(rows) or rows[-1] != len(alignment.target_tokens):
        return [(slice(0, len(alignment.target_tokens)), slice(0, len(alignment.source_tokens)))]
    cols.append(len(alignment.source_tokens))
    starts = [0] + rows[:-1]
    return [(slice(r0, r1), slice(c0, c1)) for r0, r1, c0, c1 in zip(starts, rows, cols, cols[1:])]


def current_block(alignment, line: str, column: int) -> tuple[int, int, tuple[slice, slice]]:
    """(sentence number, sentence count, block) for the cursor at `column` of `line`: the block of
    the sentence under the cursor when parts and sentences correspond one to one, else the whole."""
    blocks = alignment_blocks(alignment)
    spans = sentence_spans(line)
    if len(blocks) != len(spans) or len(blocks) == 1:
        return 0, 1, (slice(0, len(alignment.target_tokens)), slice(0, len(alignment.source_tokens)))
    k = 0
    for i, (start, _) in enumerate(spans):
        if column >= start:
            k = i
    return k, len(spans), blocks[k]
