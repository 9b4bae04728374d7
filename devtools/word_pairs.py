"""Single-word translation pairs learnt from the training data, for words typed on their own.

    python devtools/word_pairs.py OUT_DIR [--data-dir DIR] [--docs]   # writes OUT_DIR/{train,test}.tsv

A model trained on sentences and on product documentation reads a lone "Montag" as a label
("Assembly"). This aligns words with IBM Model 1 (Brown et al., 1993; expectation maximisation,
both directions) on Tatoeba's and Multi30k's training pairs of at most 12 words, keeps the pairs
that are each other's best translation with p >= MIN_P both ways, and writes each word in its usual
spelling: German as it is most often written inside a sentence ("Montag", "schnell"), English in
lower case unless it is always capitalised ("Monday", "window"). One pair in ten, chosen by hash, goes
to test.tsv and is never trained on. German<TAB>English, one pair a line.

`--docs` aligns the product-documentation pairs that configs/deen_v6.toml trains on as well (its
subsamples of techdocs/msdocs, nothing else of it, so no label that devtools/heldout_labels.py holds
out is read): the words of a program and its documentation ("Datei", "Benutzer", "Dialogfeld").
Without it the output is v8's word list (configs/deen_v8.toml).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import re
from collections import Counter, defaultdict
from pathlib import Path

from mtkit.train.config import RunConfig

WORD = re.compile(r"\w+(?:[-']\w+)*")
CORPORA = ("tatoeba/train", "multi30k/train")
DOCS, DOCS_CONFIG = "techdocs/msdocs", Path(__file__).resolve().parent.parent / "configs" / "deen_v6.toml"
MAX_WORDS = 12
ITERATIONS = 5
MIN_COUNT = 10      # in the aligned pairs, each side
MIN_P = 0.3
NULL = ""


def read_pairs(data_dir: Path, docs: bool = False) -> list[tuple[list[str], list[str]]]:
    lines = []
    for prefix in CORPORA:
        with gzip.open(data_dir / f"{prefix}.de.gz", "rt", encoding="utf-8") as de, \
                gzip.open(data_dir / f"{prefix}.en.gz", "rt", encoding="utf-8") as en:
            lines += zip(de, en)
    if docs:
        lines += docs_pairs(data_dir)
    pairs = []
    for d, e in lines:
        d_words, e_words = WORD.findall(d), WORD.findall(e)
        if 0 < len(d_words) <= MAX_WORDS and 0 < len(e_words) <= MAX_WORDS:
            pairs.append((d_words, e_words))
    return pairs


def docs_pairs(data_dir: Path) -> list[tuple[str, str]]:
    """(German, English) of the techdocs/msdocs pairs DOCS_CONFIG trains on: each of its corpora of
    them as mt-train reads them (RunConfig.train_pairs_of), the English-to-German ones turned round."""
    run = RunConfig.load(DOCS_CONFIG, [])
    return sorted({(p.src, p.tgt) if p.src_lang == "de" else (p.tgt, p.src)
                   for corpus in run.data.train if corpus.prefix == DOCS
                   for p in run.train_pairs_of(corpus, data_dir)})


def ibm1(pairs: list[tuple[list[str], list[str]]]) -> dict[tuple[str, str], float]:
    """p(f | e) for the words f of the first sides and e of the second (plus NULL), lower-cased."""
    t: dict[tuple[str, str], float] = defaultdict(lambda: 1.0)
    for _ in range(ITERATIONS):
        count: dict[tuple[str, str], float] = defaultdict(float)
        total: dict[str, float] = defaultdict(float)
        for f_words, e_words in pairs:
            e_words = [*e_words, NULL]
            for f in f_words:
                z = sum(t[(f, e)] for e in e_words)
                for e in e_words:
                    share = t[(f, e)] / z
                    count[(f, e)] += share
                    total[e] += share
        t = defaultdict(float, {(f, e): c / total[e] for (f, e), c in count.items()})
    return t


def best(t: dict[tuple[str, str], float]) -> dict[str, tuple[str, float]]:
    """For each e, the f it most likely translates to, and p(f | e)."""
    out: dict[str, tuple[str, float]] = {}
    for (f, e), p in t.items():
        if e != NULL and p > out.get(e, (NULL, 0.0))[1]:
            out[e] = (f, p)
    return out


def spellings(pairs, side: int) -> dict[str, str]:
    """Each lower-cased word's most frequent spelling inside a sentence (a first word takes the
    sentence's capital), or at the start where it never comes later."""
    inside, first = defaultdict(Counter), defaultdict(Counter)
    for pair in pairs:
        for i, word in enumerate(pair[side]):
            (inside if i else first)[word.lower()][word] += 1
    return {w: (inside.get(w) or first[w]).most_common(1)[0][0] for w in set(inside) | set(first)}


def word_pairs(data_dir: Path, docs: bool = False) -> list[tuple[str, str]]:
    pairs = read_pairs(data_dir, docs)
    lower = [([w.lower() for w in d], [w.lower() for w in e]) for d, e in pairs]
    de_of_en = best(ibm1(lower))                          # e -> (its best German word, p(d | e))
    en_of_de = best(ibm1([(e, d) for d, e in lower]))     # d -> (its best English word, p(e | d))
    de_count = Counter(w for d, _ in lower for w in d)
    en_count = Counter(w for _, e in lower for w in e)
    de_spelling, en_spelling = spellings(pairs, 0), spellings(pairs, 1)
    chosen = []
    for d, (e, p) in sorted(en_of_de.items()):
        back, q = de_of_en.get(e, (NULL, 0.0))
        if (back == d and min(p, q) >= MIN_P and min(de_count[d], en_count[e]) >= MIN_COUNT
                and not d.isdigit() and d != e):
            chosen.append((de_spelling[d], en_spelling[e]))
    return chosen


def held_out(pair: tuple[str, str]) -> bool:
    return hashlib.sha1(pair[0].encode("utf-8")).digest()[0] % 10 == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--docs", action="store_true", help="Align the product documentation that "
                                                            "configs/deen_v6.toml trains on too.")
    args = parser.parse_args()
    chosen = word_pairs(args.data_dir, args.docs)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, keep in (("train.tsv", False), ("test.tsv", True)):
        lines = [f"{d}\t{e}\n" for d, e in chosen if held_out((d, e)) == keep]
        (args.out_dir / name).write_text("".join(lines), encoding="utf-8")
        print(f"{args.out_dir / name}: {len(lines)} pairs")


if __name__ == "__main__":
    main()
