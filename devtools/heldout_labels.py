"""Write a test set of headings and labels that no shipped model was trained on.

    python devtools/heldout_labels.py OUT_DIR   # writes OUT_DIR/labels.de and OUT_DIR/labels.en

The pairs come from techdocs/msdocs (Microsoft's product documentation): both sides of at most
three words, neither side seen as a whole line in any training corpus of configs/deen_v2.toml
(v2 and v3 were trained on its data) or configs/deen_v6.toml, in either direction. One pair per
German label, chosen by hash, so the set is the same on every machine. Score it with
`mt-eval -s OUT_DIR/labels.de -r OUT_DIR/labels.en` (and the other way round).
"""
import hashlib
import re
import sys
from pathlib import Path

from mtkit.train.config import Corpus, RunConfig
from mtkit.train.data import clean

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = [ROOT / "configs" / "deen_v2.toml", ROOT / "configs" / "deen_v6.toml"]
SIZE = 1000
MARKUP = re.compile(r"[\\|`\[\]()<>{}#*_=/]")  # markdown and paths, not labels


def held_out_labels() -> tuple[list, int]:
    """The held-out label pairs (`Pair`s, the same on every machine) and how many unseen labels there were."""
    runs = [RunConfig.load(path, []) for path in CONFIGS]
    seen = {line for run in runs for p in run.load_split("train") for line in (p.src, p.tgt)}
    data_dir = runs[-1].data_dir()
    labels = Corpus(src="de", tgt="en", prefix="techdocs/msdocs", max_words=3).load(data_dir)
    by_german = {}
    for p in clean(labels):
        if (p.src in seen or p.tgt in seen or MARKUP.search(p.src + p.tgt)
                or not re.search(r"[^\W\d_]{2}", p.src) or p.src == p.tgt):
            continue
        by_german.setdefault(p.src, p)
    digest = lambda p: hashlib.sha1(p.src.encode("utf-8")).hexdigest()  # noqa: E731
    return sorted(by_german.values(), key=digest)[:SIZE], len(by_german)


def main(out_dir: str) -> None:
    chosen, unseen = held_out_labels()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "labels.de").write_text("".join(p.src + "\n" for p in chosen), encoding="utf-8")
    (out / "labels.en").write_text("".join(p.tgt + "\n" for p in chosen), encoding="utf-8")
    print(f"{len(chosen)} of {unseen} unseen labels written to {out}/labels.{{de,en}}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
