"""How many held-out single words a model gets exactly right, both ways.

    python devtools/word_scores.py BUNDLE runs/word-pairs/test.tsv

The test.tsv of devtools/word_pairs.py (German<TAB>English, never trained on). A word counts as right
when the output is the reference word, case and a final "." or "!" aside: BLEU says little about a
one-word output. Not a test: it measures a model.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mtkit.runtime.translator import Translator


def same_word(output: str, reference: str) -> bool:
    def norm(s: str) -> str:
        return s.strip().rstrip(".!").strip().lower()
    return norm(output) == norm(reference)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("pairs", type=Path, help="German<TAB>English, one pair a line")
    args = parser.parse_args()
    pairs = [line.split("\t")[:2] for line in args.pairs.read_text(encoding="utf-8").splitlines() if line.strip()]
    translator = Translator(args.bundle)
    for lang, to, side in (("de", "en", 0), ("en", "de", 1)):
        sources, references = [p[side] for p in pairs], [p[1 - side] for p in pairs]
        outputs = [t.text for t in translator.translate(sources, to=to, from_lang=lang)]
        right = sum(same_word(o, r) for o, r in zip(outputs, references))
        print(f"{lang}->{to}: {right} of {len(pairs)} exactly right")


if __name__ == "__main__":
    main()
