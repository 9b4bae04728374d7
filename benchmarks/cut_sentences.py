"""Sentences that a layout cuts: over two subtitle cues (runtime/subtitles.py), or over the lines of a
wrapped paragraph (runtime/paragraphs.py). Translated piece by piece, as before, or joined into whole
sentences and laid out again, as `mt-translate --subtitles` and `--paragraphs` now do.

The first 400 test sentences of 8 words or more of each set:
- subtitles: each sentence cut over two cues at its middle word, 0.1 s apart, 3 s between sentences;
  through `Translator.translate_subtitles`, with joining off (MOST_JOINED = 1: each cue alone) and on;
- wrapped: three sentences to a paragraph, wrapped at 60 characters; line by line (`translate`, as
  plain `mt-translate` does) and through `Translator.translate_paragraphs`.
Each sentence's (or paragraph's) pieces are joined and scored against the reference(s) with sacreBLEU
(BLEU and chrF, cased 13a).

    python -m mtkit.benchmarks.cut_sentences [--model DIR] [--data-dir DIR] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import textwrap
from pathlib import Path

import sacrebleu

from mtkit.runtime import Translator, subtitles
from mtkit.runtime.data_dir import default_data_dir

SETS = ["tatoeba/test", "multi30k/test_2016_flickr", "news/newstest2013"]
WIDTH = 60


def stamp(t: float) -> str:
    return f"{int(t // 3600):02d}:{int(t % 3600 // 60):02d}:{int(t % 60):02d},{round(t % 1 * 1000):03d}"


def cut_into_cues(sentences: list[str]) -> str:
    """An SRT file with each sentence cut over two cues at its middle word."""
    blocks, t = [], 0.0
    for sentence in sentences:
        words = sentence.split()
        for half in (" ".join(words[:len(words) // 2]), " ".join(words[len(words) // 2:])):
            blocks.append(f"{len(blocks) + 1}\n{stamp(t)} --> {stamp(t + 2)}\n{half}\n")
            t += 2.1
        t += 3
    return "\n".join(blocks)


def wrapped(sentences: list[str]) -> list[str]:
    """Paragraphs of three sentences each, wrapped at WIDTH characters."""
    return [textwrap.fill(" ".join(sentences[i:i + 3]), WIDTH) for i in range(0, len(sentences), 3)]


def scores(hypotheses: list[str], references: list[str]) -> dict:
    return {"bleu": round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2),
            "chrf": round(sacrebleu.corpus_chrf(hypotheses, [references]).score, 2)}


def subtitle_scores(translator, sentences: list[str], references: list[str], most_joined: int) -> dict:
    saved, subtitles.MOST_JOINED = subtitles.MOST_JOINED, most_joined
    try:
        out = translator.translate_subtitles(cut_into_cues(sentences), from_lang="de")
    finally:
        subtitles.MOST_JOINED = saved
    texts = [block.split("\n", 2)[2].replace("\n", " ").strip() for block in out.strip().split("\n\n")]
    return scores([f"{texts[2 * i]} {texts[2 * i + 1]}" for i in range(len(sentences))], references)


def paragraph_scores(translator, sentences: list[str], references: list[str]) -> dict:
    paragraphs = wrapped(sentences)
    joined = [" ".join(references[i:i + 3]) for i in range(0, len(references), 3)]
    by_line = [" ".join(t.text for t in translator.translate(p.split("\n"), from_lang="de")) for p in paragraphs]
    whole = translator.translate_paragraphs("\n\n".join(paragraphs) + "\n", from_lang="de")
    return {"line by line": scores(by_line, joined),
            "paragraphs": scores([p.replace("\n", " ") for p in whole.strip().split("\n\n")], joined)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="A bundle (default: the shipped model).")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None, help="Write the results as JSON here.")
    args = parser.parse_args()
    data = args.data_dir or default_data_dir()
    translator = Translator(args.model)
    results = {}
    for name in SETS:
        read = lambda side: gzip.open(data / f"{name}.{side}.gz", "rt", encoding="utf-8").read().splitlines()  # noqa: E731
        pairs = [(s, r) for s, r in zip(read("de"), read("en")) if len(s.split()) >= 8][:400]
        sentences, references = [s for s, _ in pairs], [r for _, r in pairs]
        results[name] = {"sentences": len(pairs),
                         "subtitles": {"each cue alone": subtitle_scores(translator, sentences, references, 1),
                                       "joined": subtitle_scores(translator, sentences, references,
                                                                 subtitles.MOST_JOINED)},
                         "wrapped": paragraph_scores(translator, sentences, references)}
        print(name, json.dumps(results[name]))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
