"""Parallel text: reading aligned files (plain or .gz) and TSV, cleaning, and deterministic holdouts."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from mtkit.runtime import text_io


class DataError(Exception):
    """Unusable training data; the message names the file and line."""


@dataclass(frozen=True)
class Pair:
    src: str
    tgt: str
    src_lang: str
    tgt_lang: str


@dataclass
class CleaningReport:
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    extra_columns: int = 0          # TSV lines with more than 2 columns, of which the first two were read

    def summary(self) -> str:
        drops = ", ".join(f"{n} {why}" for why, n in sorted(self.dropped.items())) or "none"
        extra = (f"; {self.extra_columns} tsv line{'s' if self.extra_columns > 1 else ''} had more than 2 columns: "
                 "only the first two are read") if self.extra_columns else ""
        return f"kept {self.kept} pairs; dropped: {drops}{extra}"


def read_lines(path: str | Path) -> list[str]:
    """All lines of a UTF-8 text file (gzip if it ends in .gz), without line ends: the runtime's
    reader (`mtkit.runtime.text_io`), so that mt-train, mt-eval and mt-bench read a file alike.

    Invalid UTF-8 is an error naming the file and line: a silent replacement character would
    end up in the vocabulary.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    try:
        return text_io.read_lines(path)
    except text_io.InputError as e:
        raise DataError(str(e)) from None


def read_parallel(src_path, tgt_path) -> list[tuple[str, str]]:
    """Two line-aligned files -> (src, tgt) pairs. Files of different lengths are an error."""
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise DataError(f"misaligned files: {src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}")
    return list(zip(src, tgt))


def read_tsv(path, report: CleaningReport | None = None) -> list[tuple[str, str]]:
    """A TSV file whose first two columns are source and target. Extra columns are ignored (an
    attribution), and counted in `report`: a tab inside a sentence makes one too, and cuts the sentence."""
    pairs = []
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            pairs.append(("", ""))  # counted as an empty pair by `clean`
            continue
        cols = line.split("\t")
        if len(cols) < 2:
            raise DataError(f"{path}:{number}: expected at least 2 tab-separated columns, found {len(cols)}")
        if len(cols) > 2 and report is not None:
            report.extra_columns += 1
        pairs.append((cols[0], cols[1]))
    return pairs


def clean(pairs: list[Pair], max_ratio: float = 3.0, max_chars: int = 1000, min_chars_for_ratio: int = 12,
          report: CleaningReport | None = None) -> list[Pair]:
    """Drop empty pairs, exact duplicates, overlong pairs and pairs with extreme length ratios."""
    report = report if report is not None else CleaningReport()
    seen = set()
    kept = []
    for p in pairs:
        src, tgt = " ".join(p.src.split()), " ".join(p.tgt.split())
        if not src or not tgt:
            report.dropped["empty"] += 1
            continue
        key = (src, tgt, p.src_lang, p.tgt_lang)
        if key in seen:
            report.dropped["duplicate"] += 1
            continue
        seen.add(key)
        if max(len(src), len(tgt)) > max_chars:
            report.dropped["too long"] += 1
            continue
        short, long = sorted((len(src), len(tgt)))
        if long >= min_chars_for_ratio and long > max_ratio * short:
            report.dropped["length ratio"] += 1
            continue
        kept.append(Pair(src, tgt, p.src_lang, p.tgt_lang))
    report.kept += len(kept)
    return kept


def subsample(pairs: list[Pair], max_pairs: int) -> list[Pair]:
    """At most `max_pairs` pairs, chosen by a hash of each pair so the choice is the same on every
    machine and for every file order (a large corpus is weighted down without being dropped)."""
    if not max_pairs or len(pairs) <= max_pairs:
        return pairs
    def digest(p: Pair) -> str:
        return hashlib.sha1(f"{p.src_lang}{p.tgt_lang}\t{p.src}\t{p.tgt}".encode("utf-8")).hexdigest()
    keep = set(map(id, sorted(pairs, key=digest)[:max_pairs]))
    return [p for p in pairs if id(p) in keep]


FINAL_STOPS = ".!"


def without_final_stop(src: str, tgt: str) -> tuple[str, str]:
    """The pair without the "." or "!" that ends both sides (not an ellipsis); else as it is."""
    def ends_in_stop(text: str) -> bool:
        return text.rstrip(FINAL_STOPS) != "" and text[-1] in FINAL_STOPS and not text.endswith("..")

    if ends_in_stop(src) and ends_in_stop(tgt):
        return src[:-1].rstrip(), tgt[:-1].rstrip()
    return src, tgt


def split_holdout(pairs: list[Pair], size: int) -> tuple[list[Pair], list[Pair]]:
    """Deterministically hold out `size` pairs, chosen by a hash of the source side so that the
    choice does not depend on file order and a source sentence never lands in both parts."""
    def digest(p: Pair) -> str:
        return hashlib.sha1(p.src.encode("utf-8")).hexdigest()

    sources = sorted({p.src for p in pairs}, key=lambda s: hashlib.sha1(s.encode("utf-8")).hexdigest())
    held, count = set(), 0
    by_src = Counter(p.src for p in pairs)
    for s in sources:
        if count >= size:
            break
        held.add(s)
        count += by_src[s]
    holdout = sorted((p for p in pairs if p.src in held), key=digest)
    return without_holdout(pairs, holdout), holdout


def without_holdout(pairs: list[Pair], holdout: list[Pair]) -> list[Pair]:
    """`pairs` less the holdout and the holdout reversed: a corpus with both_directions holds
    "Hallo" -> "Hello" and "Hello" -> "Hallo", and training on the second would teach dev its answer."""
    held = set(holdout) | {Pair(p.tgt, p.src, p.tgt_lang, p.src_lang) for p in holdout}
    return [p for p in pairs if p not in held]
