"""How well `mt-translate --from auto` tells the source language (runtime/language_id.py), on real text.

For each test side: top-1 accuracy of the detector, and what the runtime decides when translating
into the other language (wrongly passed through: a source sentence left untranslated, the error
that costs BLEU) or into the same language (kept: an input already in the target language left
unchanged, as it should be; warned: translated with an "uncertain" warning). Short inputs are 1, 2
or 3 consecutive words taken at random from the Tatoeba test sentences (seed 0). French and Czech
(Multi30k) stand for languages the model does not know.

    python -m mtkit.benchmarks.language_id [--data-dir DIR] [--grid] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import time
from pathlib import Path

from mtkit.runtime import language_id
from mtkit.runtime.data_dir import default_data_dir

SETS = {   # name: (file under the data directory, language)
    "tatoeba/test.de": ("tatoeba/test.de.gz", "de"), "tatoeba/test.en": ("tatoeba/test.en.gz", "en"),
    "newstest2013.de": ("news/newstest2013.de.gz", "de"), "newstest2013.en": ("news/newstest2013.en.gz", "en"),
    "generaltest2022.de-en.de": ("general/generaltest2022.de-en.de.gz", "de"),
    "generaltest2022.en-de.en": ("general/generaltest2022.en-de.en.gz", "en"),
    "multi30k/test_2016_flickr.de": ("multi30k/test_2016_flickr.de.gz", "de"),
    "multi30k/test_2016_flickr.en": ("multi30k/test_2016_flickr.en.gz", "en"),
    "multi30k/test_2016_flickr.fr": ("multi30k/test_2016_flickr.fr.gz", "fr"),
    "multi30k/test_2016_flickr.cs": ("multi30k/test_2016_flickr.cs.gz", "cs"),
}
OTHER = {"de": "en", "en": "de"}


def read(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def short_inputs(sentences: list[str], words: int, rng: random.Random) -> list[str]:
    """`words` consecutive words from each sentence that has that many."""
    out = []
    for s in sentences:
        w = s.split()
        if len(w) >= words:
            start = rng.randint(0, len(w) - words)
            out.append(" ".join(w[start:start + words]))
    return out


def test_sets(data_dir: Path) -> dict[str, tuple[str, list[str]]]:
    sets = {name: (lang, read(data_dir / file)) for name, (file, lang) in SETS.items()}
    rng = random.Random(0)
    for lang in ("de", "en"):
        for n in (1, 2, 3):
            sets[f"tatoeba short {n}w.{lang}"] = (lang, short_inputs(sets[f"tatoeba/test.{lang}"][1], n, rng))
    return sets


def evaluate(sets) -> list[dict]:
    rows = []
    for name, (lang, sentences) in sets.items():
        start = time.perf_counter()
        top = [max(p, key=p.get) for p in map(language_id.probabilities, sentences)]
        row = {"set": name, "language": lang, "n": len(sentences),
               "accuracy": sum(t == lang for t in top) / len(sentences),
               "us_per_sentence": 1e6 * (time.perf_counter() - start) / len(sentences)}
        if lang in OTHER:
            into_other = [language_id.choose(s, OTHER[lang], [lang]) for s in sentences]
            into_same = [language_id.choose(s, lang, [OTHER[lang]]) for s in sentences]
            row["wrongly_passed_through"] = sum(not c.translated for c in into_other)
            row["warned_when_translating"] = sum(c.warning is not None for c in into_other)
            row["kept_when_already_target"] = sum(not c.translated for c in into_same) / len(sentences)
        else:       # a language the model does not know: translated (as asked), with a warning
            choices = [language_id.choose(s, "en", ["de"]) for s in sentences]
            row["warned_when_translating"] = sum(c.warning is not None for c in choices)
            row["wrongly_passed_through"] = sum(not c.translated for c in choices)
        rows.append(row)
    return rows


def grid(sets) -> list[dict]:
    """Wrong pass-throughs (all de and en sets) and kept share, for other thresholds."""
    probs = {name: (lang, [language_id.probabilities(s) for s in sentences])
             for name, (lang, sentences) in sets.items() if lang in OTHER}
    out = []
    for keep_p in (0.1, 0.2, 0.3, 0.5, 0.7, 0.9):
        for ratio in (1, 10, 30, 100):
            row = {"keep_probability": keep_p, "keep_ratio": ratio}
            for name, (lang, ps) in probs.items():
                def keeps(p, target, source):
                    return max(p, key=p.get) == target and p[target] >= keep_p and p[target] >= ratio * p.get(source, 0)
                row[name] = (sum(keeps(p, OTHER[lang], lang) for p in ps),
                             round(sum(keeps(p, lang, OTHER[lang]) for p in ps) / len(ps), 3))
            out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--grid", action="store_true", help="also try other thresholds")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args()
    start = time.perf_counter()
    language_id.probabilities("Guten Morgen")
    load_ms = 1000 * (time.perf_counter() - start)
    sets = test_sets(args.data_dir or default_data_dir())
    rows = evaluate(sets)
    print(f"detector load + first call: {load_ms:.0f} ms; kept when p(target) >= {language_id.KEEP_PROBABILITY} "
          f"and >= {language_id.KEEP_RATIO} x p(source)")
    print(f"{'set':34s} {'n':>5s} {'top-1':>7s} {'passed wrongly':>14s} {'kept if target':>14s} {'warned':>7s} {'us/sent':>7s}")
    for r in rows:
        kept = f"{r['kept_when_already_target']:.3f}" if "kept_when_already_target" in r else "-"
        print(f"{r['set']:34s} {r['n']:5d} {r['accuracy']:7.4f} {r['wrongly_passed_through']:14d} {kept:>14s} "
              f"{r['warned_when_translating']:7d} {r['us_per_sentence']:7.0f}")
    result = {"load_ms": load_ms, "rows": rows}
    if args.grid:
        result["grid"] = grid(sets)
        for g in result["grid"]:
            print(g)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
