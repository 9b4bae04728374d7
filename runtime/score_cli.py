"""`mt-score`: how likely the model finds each line of one file as the translation of the same line of
another (`Translator.score_iter`, runtime/scoring.py), one score a line: to filter parallel data, rank
candidate translations, or flag doubtful ones."""

from __future__ import annotations

import json
import os
import sys

import click

from .cli_options import MODEL, PROVIDER, THREADS, TO, VARIANT, budget_options
from .cli_support import CommandError, command, run_and_exit

PROG = "mt-score"

EPILOG = """\b
Examples:
  mt-score corpus.de corpus.en > scores.txt         # one score per pair: 0 is certain, lower less likely
  mt-score --to de corpus.en corpus.de
  mt-translate < corpus.de | mt-score corpus.de -  # '-' is stdin (SOURCES or TARGETS, not both)
  mt-score --format jsonl sources.de candidates.en  # also the tokens and each one's log-prob
  paste scores.txt corpus.de corpus.en | sort -g | head    # the pairs the model finds least likely

Exit status: 0 done, 1 error, 2 usage, 130 interrupted, 143 terminated (SIGTERM)."""


@command(PROG, epilog=EPILOG)
@click.argument("sources", metavar="SOURCES")
@click.argument("targets", metavar="TARGETS")
@MODEL
@TO
@PROVIDER
@VARIANT
@THREADS
@click.option("-o", "--output", metavar="FILE", help="Output file, written whole or not at all (default: stdout).")
@click.option("--format", "fmt", type=click.Choice(["text", "jsonl"]), default="text", show_default=True,
              help="text: each pair's mean log-prob per token; jsonl: also its sum, the target's tokens and each "
                   "token's log-prob.")
@budget_options
def main(sources, targets, model, to, provider, variant, threads, output, fmt, max_batch_tokens,
         max_batch_sentences) -> None:
    """Score each line of TARGETS as the translation of the same line of SOURCES (UTF-8 text files, gzip if
    .gz; one of the two may be '-', stdin): the model's log-probability of the target's tokens, its end
    included, read as written and without sentence splitting. --to is the language of TARGETS."""
    from .cli import write_output
    from .errors import TranslationError
    from .text_io import InputError, check_output, decode_lines, read_lines, refuse_inputs
    from .translator import Translator

    if sources == targets == "-":
        raise click.UsageError("SOURCES and TARGETS cannot both be stdin ('-'): give one of them as a file")

    def name(path: str) -> str:
        return "stdin" if path == "-" else path

    def read(path: str) -> list[str]:       # '-' is stdin: `mt-translate < src.de | mt-score src.de -`
        return list(decode_lines(sys.stdin.buffer, "stdin")) if path == "-" else read_lines(path)

    try:
        source_lines, target_lines = read(sources), read(targets)
        if len(source_lines) != len(target_lines):
            raise InputError(f"{name(sources)} has {len(source_lines):,} lines and {name(targets)} {len(target_lines):,}: "
                             f"give one target line for each source line")
        if output and output != "-":
            check_output(output)
            refuse_inputs(output, [("SOURCES", sources), ("TARGETS", targets)])
    except InputError as e:
        raise CommandError(str(e)) from None
    try:
        translator = Translator(model, provider=provider, threads=threads, variant=variant,
                                max_batch_tokens=max_batch_tokens, max_batch_sentences=max_batch_sentences)
        translator.tag_id(to)
    except TranslationError as e:
        raise CommandError(str(e)) from None

    def write_all(out) -> None:
        for lineno, score in enumerate(translator.score_iter(source_lines, target_lines, to), start=1):
            if fmt == "text":
                out.write(f"{score.mean_log_prob:.4f}\n")
            else:
                out.write(json.dumps({"line": lineno, "mean_log_prob": round(score.mean_log_prob, 4),
                                      "log_prob": round(score.log_prob, 4), "tokens": score.tokens,
                                      "log_probs": [round(x, 4) for x in score.log_probs]}, ensure_ascii=False) + "\n")

    try:
        write_output(output, write_all)
    except (TranslationError, InputError) as e:    # "source 12 is 300 tokens; ...": pairs count as lines do
        raise CommandError(str(e)) from None


def run() -> None:
    """The `mt-score` console script: `main`, then a quick exit (cli_support.run_and_exit)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")      # as mt-translate: the runtime never calls BLAS
    run_and_exit(main)


if __name__ == "__main__":
    run()
