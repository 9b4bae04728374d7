"""Text that must not be translated: kept out of the model's way and put back afterwards.

`mask` replaces URLs, e-mail addresses and `inline code` with placeholders, and takes out runs of
characters the vocabulary lacks (emoji, symbols, other scripts: the model would hallucinate on
their byte pieces; not "°" or "€", which it learned in bytes); `unmask` puts them all back into the
translation. A word with a rare letter ("Šumperk") stays for the model to copy from its byte pieces
(`repair_copies` mends a copy a little wrong; the translator decodes a sentence that lost one again
with the word behind a placeholder, as `mask(names=...)` does at once for "m²" and "Windows™", which
the tokenizer would change). Quotes and dashes it lacks are read as ones it has (`equivalents`).
Numbers stay in the source (the model reads "am 3. Mai" better than a placeholder) and
`repair_numbers` fixes them after.
ANSI escape sequences are removed with their payload first (`strip_ansi`): "\\x1b[31m" leaves
nothing, not "[31m".

A placeholder is an ordinary word of the vocabulary (a name, see PLACEHOLDERS), not a special token
the model never saw in training: the model treats it as a name and copies it. One it drops, and a
removed span, go back at the same share of the words ("Pizza 🍕 und Bier 🍺" -> "pizza 🍕 and beer 🍺").
"""

from __future__ import annotations

import bisect
import itertools
import re
import unicodedata
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

# CSI ("\x1b[31m", "\x1b[2J"), OSC ("\x1b]0;title\x07"), and the two-character escapes ("\x1b7").
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

# Spans replaced by a placeholder, in priority order (a URL's digits are part of the URL).
PROTECTED = re.compile("|".join([
    r"`[^`\n]+`",                                                     # inline code
    # URL, without trailing punctuation but with a closing {field} (".../groups/{id}")
    r"(?:https?://|ftp://|www\.)(?:[^\s<>\"'`{}]|\{[\w.:-]*\})*(?:\{[\w.:-]*\}|[^\s<>\"'`{}.,;:!?)\]»“”])",
    # e-mail address; starting only where its characters start, else a long word costs O(length ** 2)
    r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}",
    # what software strings hold, for the program to fill in: {{user.name}}, {0}, {count}, {:.2f}, {\i1},
    # ${HOME}, $PATH, %s, %d, %1$s, %(name)s ("100%ige" is none: a letter follows); bounded repeats keep a
    # long run of "%0000..." linear
    r"\{\{[^{}\n]*\}\}|\{[\w.:,#+-]*\}|\{\\[^{}\n]*\}|\$\{[^{}\s]+\}|\$[A-Za-z_]\w*",
    r"%(?:\d{1,2}\$|\(\w{1,40}\))?[-+#0]{0,4}\d{0,3}(?:\.\d{1,3})?(?:hh|h|ll|l|L|z|j|t)?[diouxXeEfFgGcsp](?![A-Za-z])",
    # file paths: C:\Users\Public, ~/.config/app, ./run.sh, /usr/local/bin (not "km/h" or "and/or")
    r"\b[A-Za-z]:\\[^\s\"'<>|]*[^\s\"'<>|.,;:!?)\]]",
    r"(?<![^\s(\"'\[])(?:(?:~|\.{1,2})/[\w.-]+|/[\w.-]+/[\w.-]+)(?:/[\w.-]+)*(?<!\.)/?",
    # identifiers: a word with an underscore is code (snake_case, MAX_SIZE, value_axis.crosses) or a
    # name (a photo's 2917126077_4faf7a30b7), never prose; "#PRS_ORG#", a test set's anonymized name, the
    # model copies itself
    r"(?<![\w.#])\w*_\w*(?:\.[A-Za-z_]\w*)*",
]))
LIST_GAP = re.compile(r"[\s,;]*")           # between protected spans that make one list
# Numbers are left to the model (it reads "am 3. Mai" better than a placeholder) and repaired after.
NUMBER = re.compile(r"(?<![\w-])\d+(?:[.,:/\-–]\d+)*(?![\w-])")       # "8–18" is one: a range

# Placeholders: names spelled the same in German and English, which the model copies as names.
PLACEHOLDERS = ("Tom", "Peter", "Anna", "Thomas", "Daniel", "Martin", "Frank", "David", "Michael", "Robert",
                "Emma", "Lisa", "Nina", "Otto", "Ben", "Max")


# Punctuation read as an equivalent the vocabulary has, where it lacks the mark itself (as Moses'
# normalize-punctuation does): mask() would take it out and put it back by word share, and a closing
# quote or a dash landed mid-sentence ("des Lebens ” und"). The first equivalent the vocabulary has wins.
EQUIVALENTS = {**dict.fromkeys("„“”‟«»″", ('"',)), **dict.fromkeys("‚‘’‛‹›′", ("'",)),
               **dict.fromkeys("—―", ("–", "-")), **dict.fromkeys("‐‑‒–−", ("-",))}


@dataclass
class Span:
    original: str              # what goes back: the span as written, or a glossary term's translation
    placeholder: str | None    # None: removed from the source (characters the vocabulary lacks)
    position: float            # share of the masked text's words before it, 0..1 (where to put it back)
    term: bool = False         # a glossary term: capitalized when it opens the sentence


@dataclass
class Masked:
    text: str
    spans: list[Span] = field(default_factory=list)
    copies: list[str] = field(default_factory=list)     # words with rare characters (repair_copies)
    terms: list[str] = field(default_factory=list)      # the glossary's translations it put in, one per term found
    capitals: bool = False                               # written in capitals, read in usual case (casing.py)

    @property
    def placeholders(self) -> set[str]:
        """The names standing in for spans, which go back as written."""
        return {span.placeholder for span in self.spans if span.placeholder}


def strip_ansi(text: str) -> str:
    """`text` without ANSI escape sequences (and their parameters)."""
    return ANSI.sub("", text) if "\x1b" in text else text


def read_in_bytes(char: str) -> bool:
    """ASCII, Latin-1's symbols ("°", "®", "£", "±") and the euro sign: the model learned their byte
    pieces from the training data and places them itself. Taken out and put back by word share,
    "179€" came back as "179 today €" and "21 °C" as "° 21 C" (BLEU on the test-set lines with them:
    generaltest2022 de-en 14.95 -> 15.43, en-de 13.56 -> 15.14, newstest2013 17.14 -> 18.42)."""
    return char < "\x80" or char == "€" or (char <= "\xff" and unicodedata.category(char)[0] == "S")


def vocabulary_lacks(tokenizer) -> Callable[[str], bool]:
    """Whether a SentencePiece tokenizer spells a character only with byte pieces or <unk>, or turns a
    symbol or number into others ("²" -> "2", "™" -> "TM": its NFKC normalisation), leaving out those
    the model reads in bytes (read_in_bytes)."""
    cache: dict[str, bool] = {}

    def lacks(char: str) -> bool:
        if read_in_bytes(char):
            return False
        if char not in cache:
            ids = tokenizer.encode(char)
            changed = unicodedata.category(char) in SYMBOLS_AND_NUMBERS and tokenizer.decode(ids).strip() != char
            cache[char] = changed or any(tokenizer.is_byte(i) or tokenizer.is_unknown(i) for i in ids)
        return cache[char]
    return lacks


# Categories whose characters the tokenizer must not change: letters (full-width "Ａ") and punctuation ("…")
# read as their normal forms lose nothing.
SYMBOLS_AND_NUMBERS = {"Sm", "Sc", "Sk", "So", "No"}


def equivalents(lacks: Callable[[str], bool]) -> dict[int, str]:
    """A str.translate table (one character for one, so offsets hold): each mark of EQUIVALENTS that
    the vocabulary lacks, to its first equivalent the vocabulary has."""
    table = {}
    for mark, options in EQUIVALENTS.items():
        if lacks(mark) and (known := next((o for o in options if not lacks(o)), None)):
            table[ord(mark)] = known
    return table


def unknown_runs(text: str, is_unknown: Callable[[str], bool]) -> list[tuple[int, int, bool]]:
    """(start, end, word) of each run of non-space characters the vocabulary lacks: an emoji with its
    joiners and modifiers, a symbol, a word in another script (word False: taken out). A word with a
    rare letter or a compatibility form in it ("Erdős", "Šumperk", "m²", "Windows™") is one whole run
    (word True), to be copied."""
    runs, i = [], 0
    while i < len(text):
        if not text[i].isspace() and is_unknown(text[i]):
            j = i + 1
            while j < len(text) and not text[j].isspace() and is_unknown(text[j]):
                j += 1
            in_word = (i > 0 and text[i - 1].isalnum()) or (j < len(text) and text[j].isalnum())
            if in_word and any(c.isalpha() or not unicodedata.is_normalized("NFKC", c) for c in text[i:j]):
                i, j = word_around(text, i, j)
                runs.append((i, j, True))
            else:
                runs.append((i, j, False))
            i = j
        else:
            i += 1
    return runs


def word_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The word (letters, digits and combining marks) that holds text[start:end]."""
    def inside(char: str) -> bool:
        return char.isalnum() or unicodedata.category(char)[0] == "M"
    while start > 0 and inside(text[start - 1]):
        start -= 1
    while end < len(text) and inside(text[end]):
        end += 1
    return start, end


def mask(text: str, is_unknown: Callable[[str], bool], placeholders=PLACEHOLDERS, terms=None,
         readable: dict[int, str] | None = None, names: Collection[str] = ()) -> Masked:
    """`text` with URLs, e-mail addresses, inline code and the glossary's `terms` (glossary.Terms)
    replaced by placeholders it does not otherwise contain, and runs of unknown characters taken out
    (the model would hallucinate on their bytes). `readable` (`equivalents`): marks read as others,
    swapped once the rest is masked, so that URLs, code and terms keep theirs. Words with rare letters go
    to the model in byte pieces, to be copied (Masked.copies); those in `names`, and those the tokenizer
    would change, as placeholders: a surer copy, but the model then reads a person's name where there
    was a place or a unit."""
    if readable:
        lacks, is_unknown = is_unknown, lambda c: lacks(c) and ord(c) not in readable
    found = [(m.start(), m.end(), True, None) for m in PROTECTED.finditer(text)]
    overlaps = overlap_test(found)
    found += [(a, b, True, term) for a, b, term in (terms.find(text) if terms else []) if not overlaps(a, b)]
    translations = [term for *_, term in found if term is not None]
    overlaps = overlap_test(found)
    runs = [(a, b, word) for a, b, word in unknown_runs(text, is_unknown) if not overlaps(a, b)]
    # A word the tokenizer would change ("m²" -> "m2", "µg" -> "μg") cannot be copied from its pieces.
    names = {*names, *(text[a:b] for a, b, word in runs if word and not unicodedata.is_normalized("NFKC", text[a:b]))}
    found += [(a, b, word, None) for a, b, word in runs if not word or text[a:b] in names]
    copies = [text[a:b] for a, b, word in runs if word and text[a:b] not in names]
    if not found:
        return Masked(text.translate(readable) if readable else text, copies=copies)
    # none that the text has in any case: the model may write one lower-cased (unmask reads it so)
    free = iter(p for p in placeholders if not re.search(rf"\b{p}\b", text, re.IGNORECASE))
    out, spans, cuts, last, length = [], [], [], 0, 0
    for start, end, replace, term in runs_of_spans(text, sorted(found, key=lambda f: f[:2])):
        placeholder = next(free, None) if replace else None
        if replace and placeholder is None:        # more spans than placeholders: the rest go to the model
            continue
        out += [text[last:start], placeholder or ""]
        length += start - last + len(placeholder or "")
        spans.append(Span(term if term is not None else text[start:end], placeholder, 0.0, term=term is not None))
        cuts.append(length)
        last = end
    out.append(text[last:])
    joined = "".join(out)
    # Each span's position: the words of the text so far, its placeholder included, over all words.
    word_starts = [m.start() for m in re.finditer(r"\S+", joined)]
    masked = re.sub(r"\s+(?=[.,!?;:])", "", re.sub(r"[ \t]{2,}", " ", joined)).strip()
    if readable:
        masked = masked.translate(readable)
    n_words = max(len(masked.split()), 1)
    for span, cut in zip(spans, cuts):
        span.position = min(bisect.bisect_left(word_starts, cut) / n_words, 1.0)
    return Masked(masked, spans, copies, terms=translations)


def overlap_test(spans: list[tuple]) -> Callable[[int, int], bool]:
    """Whether [a, b) overlaps one of `spans` (start, end, ...), in O(log n): a text with thousands of
    spans would take O(n ** 2) with a scan for each."""
    ordered = sorted(spans, key=lambda span: span[:2])
    starts = [span[0] for span in ordered]
    reach = list(itertools.accumulate((span[1] for span in ordered), max))     # the furthest end so far

    def overlaps(a: int, b: int) -> bool:
        i = bisect.bisect_left(starts, b) - 1            # the last span that starts before b
        return i >= 0 and reach[i] > a
    return overlaps


def runs_of_spans(text: str, found: list[tuple]) -> list[tuple]:
    """Protected spans (start, end, replace, term) with those next to each other (only spaces, commas or
    semicolons between: a list of URLs or addresses, or of glossary terms, a menu's words) as one, which
    one placeholder stands for: fewer names for the model to keep in order, and none run out. A list of
    terms stands for their translations with what parts them in the text."""
    merged: list[tuple] = []
    for span in found:
        last = merged[-1] if merged else None
        if last and span[2] and last[2] and LIST_GAP.fullmatch(gap := text[last[1]:span[0]]):
            if span[3] is None and last[3] is None:
                merged[-1] = (last[0], span[1], True, None)
                continue
            if span[3] is not None and last[3] is not None:
                merged[-1] = (last[0], span[1], True, last[3] + gap + span[3])
                continue
        merged.append(span)
    return merged


def unmask(translation: str, spans: list[Span]) -> str:
    """`translation` with each placeholder replaced by its original; a removed span, or one whose
    placeholder the model dropped, goes in at its relative position among the words."""
    dropped = []
    for span in spans:
        found = placeholder_in(translation, span) if span.placeholder else None
        if found is None:
            dropped.append(span)
            continue
        pattern, original = found
        translation = pattern.sub(lambda m: opening(span, m.start(), original), translation, count=1)
        word = re.compile(rf"\b{span.placeholder}\b", re.IGNORECASE)
        if word.search(translation):                                # repeated: keep one
            translation = re.sub(r" +(?=[.,!?;:]|$)| (?= )", "", word.sub("", translation))
    return insert_at(translation, dropped)


def placeholder_in(translation: str, span: Span) -> tuple[re.Pattern, str] | None:
    """Where the model wrote the span's placeholder, and what replaces it: as a word, as given or
    lower-cased ("the anna journal"); for a glossary term also glued to a word's end, a genitive s or a
    compound's second part ("Toms", "Tomadministratoren"): the term takes the name's place there
    ("Kreditors", "Datenbankadministratoren"), a term of more than one word with a hyphen. Only where
    the name is not a word of its own: a word that merely starts with it ("Tomate") is then taken for
    it, a rare loss against the name in every such translation."""
    name = span.placeholder
    for pattern in (re.compile(rf"\b{name}\b"), re.compile(rf"\b{name}\b", re.IGNORECASE)):
        if pattern.search(translation):
            return pattern, span.original
    glued = re.compile(rf"\b{name}(?=[^\W\d_])")
    if span.term and glued.search(translation):
        return glued, span.original if span.original.isalpha() else span.original + "-"
    return None


def opening(span: Span, at: int, text: str) -> str:
    """A span's `text` where it lands: a lower-case glossary term that opens the sentence gets a capital."""
    if span.term and at == 0 and span.original.islower():
        return text[0].upper() + text[1:]
    return text


def insert_at(text: str, spans: list[Span]) -> str:
    """`text` with each span's original put in after its share of the words (at the end: before the
    closing punctuation)."""
    body = text.rstrip(".!?…:;\"'“”»« ")
    ends = [m.end() for m in re.finditer(r"\S+", body)]          # where each word ends
    cuts = [ends[round(s.position * len(ends)) - 1] if ends and round(s.position * len(ends)) else 0 for s in spans]
    order = sorted(range(len(spans)), key=cuts.__getitem__)      # spans at one cut keep their order
    pieces, last = [], 0
    for i in order:
        if cuts[i]:
            pieces += [text[last:cuts[i]], " ", spans[i].original]
            last = cuts[i]
    pieces.append(text[last:])
    front = [spans[i].original for i in order if not cuts[i]]     # before the first word
    return " ".join([*front, "".join(pieces)]).rstrip() if front else "".join(pieces)


def number_forms(number: str) -> set[str]:
    """The ways to write one number: "." and "," swapped or not (1.234,5 = 1,234.5), a range's dash as
    "-" (8–18 = 8-18)."""
    number = number.replace("–", "-")
    return {number, number.translate(str.maketrans(".,", ",."))}


def repair_numbers(source: str, translation: str, insert_missing: bool = True) -> str:
    """Put back the source's numbers. Each one missing from `translation` (in any of its `number_forms`,
    as the target language may write it) replaces, in order, a number the model made up; one still
    missing goes in at its place among the words, unless it is small enough (0-12) that the model may
    have written it out ("3" -> "three")."""
    wanted = list(NUMBER.finditer(source))
    found = set().union(*(number_forms(n) for n in NUMBER.findall(translation)))
    missing = [m for m in wanted if not number_forms(m.group()) & found]
    numbers = set().union(*(number_forms(m.group()) for m in wanted))
    invented = [m for m in NUMBER.finditer(translation) if not number_forms(m.group()) & numbers]
    for m, number in reversed(list(zip(invented, missing))):
        translation = translation[:m.start()] + number.group() + translation[m.end():]
    n_words = max(len(source.split()), 1)
    left = [Span(m.group(), None, len(source[:m.start()].split()) / n_words) for m in missing[len(invented):]
            if not (m.group().isdigit() and int(m.group()) <= 12)]
    return insert_at(translation, left) if insert_missing and left else translation


TWO_DOTS = re.compile(r"(?<!\.)\.\.(?!\.)")


def repair_ellipses(source: str, translation: str) -> str:
    """The model writes ".." for "..." (all 15 sentences of newstest2013's first 1,000 that end with one
    came out so): where the source has an ellipsis and no "..", each ".." goes back as its ellipsis."""
    if TWO_DOTS.search(source) or not ("..." in source or "…" in source):
        return translation
    return TWO_DOTS.sub("..." if "..." in source else "…", translation)


FINAL_MARKS = re.compile(r"([.!?…]*)([\"'”»“)\]]*)\s*$")


def repair_emphasis(source: str, translation: str) -> str:
    """Repeated marks that end the source ("Hilfe!!!", "Wirklich???", "Was?!") end the translation too,
    where the model wrote one or another ("I told you..", "Really?"): translations keep them (20 of
    the 22 such sentences of generaltest2022 and the general-domain data)."""
    marks = FINAL_MARKS.search(source).group(1)
    if len(marks) < 2 or not set(marks) <= set("!?"):
        return translation
    end = FINAL_MARKS.search(translation)
    return translation[:end.start(1)] + marks + translation[end.end(1):]


def fold(word: str) -> str:
    """`word` lower-cased without its accents, to compare a copy with its original."""
    return "".join(c for c in unicodedata.normalize("NFKD", word.lower()) if not unicodedata.combining(c))


def repair_copies(words: list[str], translation: str) -> str:
    """Put back words with rare characters that the model copied from their byte pieces a little wrong
    ("kříž" -> "kříš"): each one missing from `translation` replaces the word there most like it."""
    import difflib                  # only when a sentence has such words: it stays off the start-up path

    for word in dict.fromkeys(words):
        if word in translation:
            continue
        scored = [(difflib.SequenceMatcher(None, fold(word), fold(m.group())).ratio(), m)
                  for m in re.finditer(r"[^\W_]+", translation)]
        score, best = max(scored, key=lambda s: s[0], default=(0.0, None))
        if best is not None and score >= 0.75 and best.group() not in words:
            translation = translation[:best.start()] + word + translation[best.end():]
    return translation
