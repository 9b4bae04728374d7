"""The shipped int8 model on two CPU architectures (x86-64 and aarch64, the latter through
devtools/aarch64-emulated): the same translations? Batch invariance on each? The same BLEU?

    python devtools/cross_arch.py translate x86.json [--data-dir DIR] [--limit 100]
    devtools/aarch64-emulated python devtools/cross_arch.py translate arm.json --data-dir DIR
    python devtools/cross_arch.py compare x86.json arm.json      # a Markdown table

`translate` takes the first LIMIT lines of Tatoeba dev and newstest2013 (de -> en), greedy and beam 4 in
requests of 32, and the first 64 news lines greedy one at a time (batch invariance).
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

SETS = {"Tatoeba dev": "tatoeba/dev", "newstest2013": "news/newstest2013"}
REQUEST = 32
ALONE = 64


def translate(out: Path, data_dir: Path, limit: int) -> None:
    from mtkit.benchmarks.worker import chunks
    from mtkit.runtime import data_dir as data_dirs
    from mtkit.runtime.text_io import read_lines
    from mtkit.runtime.translator import Translator

    data_dir = data_dir or data_dirs.default_data_dir()
    if data_dir is None:
        raise SystemExit("cross_arch: pass --data-dir DIR (or set MT_DATA_DIR)")
    t = Translator(None, threads=2)          # the shipped model, from wherever mtkit is installed
    result = {"machine": platform.machine(), "variant": t.variant, "sets": {}}
    for name, prefix in SETS.items():
        lines, references = (read_lines(data_dirs.corpus_file(data_dir, prefix, lang))[:limit] for lang in ("de", "en"))
        entry = {"references": references}
        for beam in (1, 4):
            entry[f"beam {beam}"] = [r.text for batch in chunks(lines, REQUEST)
                                     for r in t.translate(batch, to="en", from_lang="de", beam_size=beam)]
        if name == "newstest2013":
            entry["greedy alone"] = [t.translate(s, to="en", from_lang="de", beam_size=1)[0].text for s in lines[:ALONE]]
        result["sets"][name] = entry
    out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{out}: {result['machine']}, {result['variant']}")


def compare(a_path: Path, b_path: Path) -> None:
    import sacrebleu

    a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (a_path, b_path))
    ma, mb = a["machine"], b["machine"]
    print(f"| set, search | same on {ma} and {mb} | BLEU {ma} | BLEU {mb} |\n|---|---:|---:|---:|")
    for name, sa in a["sets"].items():
        sb = b["sets"][name]
        for search in ("beam 1", "beam 4"):
            same = sum(x == y for x, y in zip(sa[search], sb[search]))
            bleu = [sacrebleu.corpus_bleu(s[search], [s["references"]]).score for s in (sa, sb)]
            print(f"| {name}, {search} | {same} / {len(sa[search])} | {bleu[0]:.2f} | {bleu[1]:.2f} |")
    for machine, s in ((ma, a["sets"]["newstest2013"]), (mb, b["sets"]["newstest2013"])):
        same = sum(x == y for x, y in zip(s["greedy alone"], s["beam 1"]))
        print(f"\nnewstest2013 on {machine}: {same} / {len(s['greedy alone'])} sentences the same alone and in requests "
              f"of {REQUEST} (greedy)", end="")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("translate")
    t.add_argument("out", type=Path)
    t.add_argument("--data-dir", type=Path)
    t.add_argument("--limit", type=int, default=100)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "translate":
        translate(args.out, args.data_dir, args.limit)
    else:
        compare(args.a, args.b)


if __name__ == "__main__":
    main()
