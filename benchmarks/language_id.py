"""How well `mt-translate --from auto` tells the source language (runtime/language_id.py), on real text.

For each test side: top-1 accuracy of the detector, and what the runtime decides when translating
into the other language (wrongly passed through: a source sentence left untranslated) or into the
same language (kept: an input already in the target language left unchanged, as it should be; the
rest is run through the model, which mangles it); warned: decisions that came with a warning,
translating into the other language. Short inputs are 1, 2
or 3 consecutive words taken at random from the Tatoeba test sentences (seed 0). French and Czech
(Multi30k) stand for languages the model does not know.

    python -m mtkit.benchmarks.language_id [--data-dir DIR] [--lexicon FILE] [--grid] [--out FILE.json]

Each figure comes twice: with fastText alone, and with the word counts of the shipped model's
training data weighed in (`runtime/lexicon.py`), as the runtime decides with that bundle.
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
from mtkit.runtime.lexicon import Lexicon

DEFAULT_LEXICON = Path(__file__).resolve().parent.parent / "models" / "de-en" / "lexicon.tsv.gz"

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


def evaluate(sets, lexicon: Lexicon | None = None) -> list[dict]:
    """One row per set; with `lexicon`, the decisions are the runtime's with a bundle that has one."""
    rows = []
    for name, (lang, sentences) in sets.items():
        start = time.perf_counter()
        top = [max(p, key=p.get) for p in (language_id.detect(s, lexicon) for s in sentences)]
        row = {"set": name, "language": lang, "n": len(sentences),
               "accuracy": sum(t == lang for t in top) / len(sentences),
               "us_per_sentence": 1e6 * (time.perf_counter() - start) / len(sentences)}
        if lang in OTHER:
            into_other = [language_id.choose(s, OTHER[lang], [lang], lexicon) for s in sentences]
            into_same = [language_id.choose(s, lang, [OTHER[lang]], lexicon) for s in sentences]
            row["wrongly_passed_through"] = sum(not c.translated for c in into_other)
            row["warned_when_translating"] = sum(c.warning is not None for c in into_other)
            row["kept_when_already_target"] = sum(not c.translated for c in into_same) / len(sentences)
        else:       # a language the model does not know: translated (as asked), with a warning
            choices = [language_id.choose(s, "en", ["de"], lexicon) for s in sentences]
            row["warned_when_translating"] = sum(c.warning is not None for c in choices)
            row["wrongly_passed_through"] = sum(not c.translated for c in choices)
        rows.append(row)
    return rows


def grid(sets, lexicon: Lexicon | None = None) -> list[dict]:
    """The two wrong decisions on each de and en set, (source sentences kept, target sentences run
    through the model), for rules that keep a sentence when p(target) >= ratio x p(source); the
    runtime's rule is language_id.KEEP_RATIO. `errors`: both kinds, added up over the whole sentences and the short
    pieces."""
    probs = {name: (lang, [language_id.detect(s, lexicon) for s in sentences])
             for name, (lang, sentences) in sets.items() if lang in OTHER}
    out = []
    for ratio in (0.5, 1, 2, 3, 10, 30, 100):
        row = {"keep_ratio": ratio, "errors": {"whole": 0, "short": 0}}
        for name, (lang, ps) in probs.items():
            def keeps(p, target, source):
                return p.get(target, 0) >= ratio * p.get(source, 0)
            wrong = (sum(keeps(p, OTHER[lang], lang) for p in ps), sum(not keeps(p, lang, OTHER[lang]) for p in ps))
            row[name] = wrong
            row["errors"]["short" if "short" in name else "whole"] += sum(wrong)
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--grid", action="store_true", help="also try other thresholds")
    parser.add_argument("--lexicon", type=Path, default=DEFAULT_LEXICON,
                        help="word counts to weigh in, as a bundle's (default: the shipped model's)")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args()
    start = time.perf_counter()
    language_id.probabilities("Guten Morgen")
    load_ms = 1000 * (time.perf_counter() - start)
    start = time.perf_counter()
    lexicon = Lexicon.load(args.lexicon)
    lexicon_ms = 1000 * (time.perf_counter() - start)
    sets = test_sets(args.data_dir or default_data_dir())
    print(f"detector load + first call: {load_ms:.0f} ms, lexicon load {lexicon_ms:.0f} ms; kept when p(target) >= "
          f"{language_id.KEEP_RATIO:g}x p(source), warned when against the first guess or kept under "
          f"{language_id.SURE_RATIO:g}x")
    result = {"load_ms": load_ms, "lexicon": str(args.lexicon), "lexicon_load_ms": lexicon_ms}
    for key, lex in (("rows_without_lexicon", None), ("rows", lexicon)):
        result[key] = rows = evaluate(sets, lex)
        print(f"\n{'with' if lex else 'without'} the lexicon")
        print(f"{'set':34s} {'n':>5s} {'top-1':>7s} {'passed wrongly':>14s} {'kept if target':>14s} {'warned':>7s} {'us/sent':>7s}")
        for r in rows:
            kept = f"{r['kept_when_already_target']:.3f}" if "kept_when_already_target" in r else "-"
            print(f"{r['set']:34s} {r['n']:5d} {r['accuracy']:7.4f} {r['wrongly_passed_through']:14d} {kept:>14s} "
                  f"{r['warned_when_translating']:7d} {r['us_per_sentence']:7.0f}")
    if args.grid:
        result["grid_without_lexicon"], result["grid"] = grid(sets), grid(sets, lexicon)
        for g in result["grid"]:
            print(g)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
