"""Does a sentence translate the same alone and inside a batch (issue 16)? On whole test sets.

Each sentence is translated alone (a request of one) and as part of requests of `--batch-size`
sentences, as `mt-translate` sends a file, with the runtime's default batching (length-sorted
batches, two decoding at once on the CPU), greedy and beam 4, default options, source language
given. The share of identical outputs is reported per set and search; the differing sentences are
listed in the JSON.

    python -m mtkit.benchmarks.invariance [-m BUNDLE] [--variant int8] [--limit N] [--out FILE.json]
        [--sets news/newstest2013,...] [--beams 1,4]     # a part, to spread the sets over processes
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from mtkit.runtime.data_dir import corpus_file, default_data_dir
from mtkit.runtime.text_io import read_lines
from mtkit.runtime.translator import Translator

SETS = {"tatoeba/dev": ("de", "en"), "news/newstest2013": ("de", "en"), "general/generaltest2022.de-en": ("de", "en")}


def compare(translator: Translator, sentences: list[str], src: str, tgt: str, beam: int, batch: int) -> dict:
    options = translator.decode_options(beam_size=beam)
    kw = dict(from_lang=src, split_sentences=False)
    batched = [t.text for i in range(0, len(sentences), batch)
               for t in translator.translate(sentences[i:i + batch], tgt, options, **kw)]
    alone = [translator.translate(s, tgt, options, **kw)[0].text for s in sentences]
    differ = [{"line": i + 1, "alone": a, "batched": b} for i, (a, b) in enumerate(zip(alone, batched)) if a != b]
    return {"sentences": len(sentences), "identical": len(sentences) - len(differ),
            "share": (len(sentences) - len(differ)) / max(len(sentences), 1), "differ": differ}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-m", "--model", default=None, help="Bundle (default: the shipped model).")
    parser.add_argument("--variant", default="auto")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--limit", type=int, default=0, help="Sentences per set (0 = all).")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None, help="A JSON file for the report.")
    parser.add_argument("--sets", default=",".join(SETS), help="Comma-separated, of: %(default)s.")
    parser.add_argument("--beams", default="1,4", help="Comma-separated beam sizes (default: %(default)s).")
    args = parser.parse_args(argv)
    sets = args.sets.split(",")
    if unknown := set(sets) - set(SETS):
        parser.error(f"unknown set(s) {', '.join(sorted(unknown))}: known are {', '.join(SETS)}")
    beams = [int(b) for b in args.beams.split(",")]
    if args.out and (args.out.is_dir() or not args.out.parent.is_dir()):     # found before the work, not after
        parser.error(f"--out {args.out}: give a file in an existing folder, for the report in JSON")
    translator = Translator(args.model, threads=args.threads, variant=args.variant)
    data_dir = args.data_dir or default_data_dir()
    report = {"model": str(translator.path), "variant": translator.variant, "threads": args.threads,
              "parallel_batches": translator.parallel_batches, "batch_size": args.batch_size, "sets": {}}
    for prefix in sets:
        src, tgt = SETS[prefix]
        sentences = read_lines(corpus_file(data_dir, prefix, src))
        sentences = sentences[:args.limit] if args.limit else sentences
        for beam in beams:
            start = time.perf_counter()
            result = compare(translator, sentences, src, tgt, beam, args.batch_size)
            report["sets"][f"{prefix} beam {beam}"] = result
            print(f"{prefix:32} beam {beam}: {result['identical']} / {result['sentences']} identical "
                  f"({100 * result['share']:.2f}%), {time.perf_counter() - start:.0f} s", flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
