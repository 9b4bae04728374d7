"""Button and menu labels ("Abbrechen" / "Cancel") mined from the product documentation's instructions.

    python devtools/ui_labels.py OUT_DIR   # writes OUT_DIR/{train,test}.tsv

A program's own strings are short labels, and a model trained on sentences reads a lone "Abbrechen"
as something else ("Direct"). The documentation names them in instructions that both languages
phrase the same way: "Wählen Sie Speichern aus." / "Select Save.", "Klicken Sie auf Weiter, um ..." /
"Click Next to ...". This takes the label from each side of such a pair in techdocs/msdocs (both sides
at most three words, capitalised, no article), drops every pair that shares a side with the labels
devtools/heldout_labels.py holds out or with word_pairs.py's test words, and writes each distinct
pair once: one in ten, chosen by hash as word_pairs.py chooses, to test.tsv, never trained on.
German<TAB>English, one a line.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

from heldout_labels import held_out_labels
from word_pairs import held_out

from mtkit.train.config import Corpus

DOCS = "techdocs/msdocs"
WORD_TEST = Path(__file__).resolve().parent.parent / "runs" / "word-pairs" / "test.tsv"
LABEL = r"([A-ZÄÖÜ][\w\-]*(?: [\w\-]+){0,2}?)"
GERMAN = re.compile(r"^(?:Wählen|Klicken|Tippen) Sie (?:auf )?(?:die Schaltfläche |die Option |den Befehl )?"
                    + LABEL + r"(?: aus)?(?:[.]$|, um )")
ENGLISH = re.compile(r"^(?:Select|Click|Tap|Choose) (?:the )?" + LABEL
                     + r"(?: button| option| command)?(?:[.]$|,? to )")
ARTICLES = {"die", "den", "das", "der", "diese", "dieses", "the", "this"}


def ui_labels(data_dir: Path) -> Counter:
    """Each (German, English) label pair and how often the documentation names it."""
    pairs = Counter()
    for p in Corpus(src="de", tgt="en", prefix=DOCS).load(data_dir):
        g, f = GERMAN.match(p.src.strip()), ENGLISH.match(p.tgt.strip())
        if g and f and not {w.lower() for w in (g[1] + " " + f[1]).split()} & ARTICLES:
            pairs[g[1], f[1]] += 1
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "data")
    args = parser.parse_args()
    labels, _ = held_out_labels()
    unseen = {side for p in labels for side in (p.src, p.tgt)}
    if WORD_TEST.exists():
        unseen |= {side for line in WORD_TEST.read_text(encoding="utf-8").splitlines() for side in line.split("\t")}
    pairs = ui_labels(args.data_dir)
    kept = sorted(p for p in pairs if p[0] not in unseen and p[1] not in unseen)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, keep in (("train.tsv", False), ("test.tsv", True)):
        chosen = [p for p in kept if held_out(p) == keep]
        (args.out_dir / name).write_text("".join(f"{d}\t{e}\n" for d, e in chosen), encoding="utf-8")
        print(f"{len(chosen)} pairs written to {args.out_dir / name}")
    print(f"{len(pairs)} distinct pairs found, {len(pairs) - len(kept)} dropped as held out elsewhere")


if __name__ == "__main__":
    main()
