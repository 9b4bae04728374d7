"""`mt-translate`: translate text given as arguments, in a file, or on stdin, one line per line.

Line counts are kept: an empty input line gives an empty output line. Imports are lazy, so that
`--help` and the start-up of a one-line translation stay quick (no rich unless a progress bar
shows, never sacrebleu or torch).
"""

from __future__ import annotations

import argparse
import sys

from .cli_support import exit_with_error, run_command

PROG = "mt-translate"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Translate text with an exported model bundle (ONNX Runtime, no torch).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  mt-translate \"Guten Morgen!\"\n"
               "  mt-translate --to de \"Good morning!\"\n"
               "  cat in.de | mt-translate --to en > out.en\n"
               "  mt-translate -i in.de -o out.en --format jsonl --n-best 3")
    p.add_argument("text", nargs="*", help="text to translate (one output line each); default: read -i or stdin")
    p.add_argument("-m", "--model", metavar="BUNDLE",
                   help="bundle directory or .tar.gz/.zip (default: $MT_MODEL, else the model in models/)")
    p.add_argument("--to", metavar="LANG", help="target language (default: en if the model has it); see --list-languages")
    p.add_argument("-i", "--input", metavar="FILE", help="input file, one text per line ('-' = stdin)")
    p.add_argument("-o", "--output", metavar="FILE", help="output file (written whole or not at all; default: stdout)")
    p.add_argument("--format", choices=("text", "jsonl"), default="text",
                   help="text: one line per input (n-best tab-separated); jsonl: scores, tokens, n-best, timings")
    g = p.add_argument_group("decoding")
    g.add_argument("--beam-size", metavar="N", type=int, default=4, help="beam width; 1 = greedy (default 4)")
    g.add_argument("--n-best", metavar="N", type=int, default=1,
                   help="hypotheses per input (<= beam size, or samples with --sampling)")
    g.add_argument("--length-penalty", metavar="X", type=float, default=1.0,
                   help="beam score = log p / length^penalty (default 1.0)")
    g.add_argument("--sampling", action="store_true", help="sample instead of searching")
    g.add_argument("--temperature", metavar="T", type=float, default=1.0)
    g.add_argument("--top-k", metavar="K", type=int, default=0, help="sample from the k most likely tokens (0 = all)")
    g.add_argument("--top-p", metavar="P", type=float, default=1.0, help="nucleus sampling mass (1.0 = off)")
    g.add_argument("--seed", metavar="N", type=int, default=None, help="random seed for --sampling (reproducible output)")
    g.add_argument("--no-repeat-ngram", type=int, default=0, metavar="N", help="never repeat an n-gram of size N")
    g.add_argument("--max-length-ratio", metavar="X", type=float, default=1.5,
                   help="max output tokens per input token (default 1.5)")
    g.add_argument("--alignment", action="store_true", help="add attention alignments (jsonl only)")
    g.add_argument("--no-split", action="store_true", help="do not split lines into sentences")
    r = p.add_argument_group("runtime")
    r.add_argument("--provider", choices=("cpu", "cuda", "auto"), default="cpu", help="execution provider (default cpu)")
    r.add_argument("--variant", choices=("auto", "fp32", "int8", "fp16"), default="auto",
                   help="graph precision (auto: int8 on CPU, fp16 on CUDA, when the bundle has them; else fp32)")
    r.add_argument("--threads", metavar="N", type=int, default=None, help="ONNX Runtime intra-op threads (default: ORT's choice)")
    r.add_argument("--batch-size", metavar="N", type=int, default=64,
                   help="lines translated together (default 64; 1 on a terminal)")
    r.add_argument("--list-languages", action="store_true", help="print the model's target languages and exit")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar or notes on stderr (errors still show)")
    return p


def error(message: str, code: int = 1):
    exit_with_error(PROG, message, code)


def warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def record(lineno: int, tr, fmt: str, alignment: bool) -> str:
    """One output line for a translation."""
    if fmt == "text":
        return "\t".join(h.text for h in tr.hypotheses) if len(tr.hypotheses) > 1 else tr.text
    import json
    import math

    def num(x):
        return round(x, 4) if math.isfinite(x) else None

    data = {"line": lineno, "source": tr.source, "text": tr.text, "score": num(tr.score), "tokens": tr.tokens,
            "n_best": [{"text": h.text, "score": num(h.score), "tokens": h.tokens} for h in tr.hypotheses],
            "num_tokens": tr.num_tokens, "num_source_tokens": tr.num_source_tokens,
            "timings": {k: round(v, 3) if isinstance(v, float) else v for k, v in tr.timings.items()}}
    if tr.warnings:
        data["warnings"] = tr.warnings
    if alignment and tr.alignment is not None:
        data["alignment"] = {"source_tokens": tr.alignment.source_tokens, "target_tokens": tr.alignment.target_tokens,
                             "weights": [[round(w, 4) for w in row] for row in tr.alignment.weights]}
    return json.dumps(data, ensure_ascii=False)


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.text and args.input:
        error("give TEXT arguments or --input, not both", 2)
    if args.alignment and args.format != "jsonl":
        error("--alignment needs --format jsonl", 2)
    if args.batch_size < 1:
        error("--batch-size must be at least 1", 2)
    run_command(PROG, run, args)


def run(args) -> None:
    import warnings

    from .errors import TranslationError
    from .text_io import InputError, atomic_output, decode_lines, read_lines
    from .translator import LongInputWarning, Translator

    warnings.simplefilter("ignore", LongInputWarning)     # reported below, with the line number
    try:
        translator = Translator(args.model, provider=args.provider, threads=args.threads, variant=args.variant)
    except TranslationError as e:
        error(str(e))
    if args.list_languages:
        print("\n".join(translator.languages))
        return
    if args.provider == "auto" and not args.quiet:
        print(f"{PROG}: provider auto: using {translator.provider} ({translator.provider_note})", file=sys.stderr)
    options = dict(beam_size=args.beam_size, num_hypotheses=args.n_best, length_penalty=args.length_penalty,
                   sampling=args.sampling, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                   seed=args.seed, no_repeat_ngram_size=args.no_repeat_ngram, max_length_ratio=args.max_length_ratio,
                   return_alignment=args.alignment, split_sentences=not args.no_split)

    # Input: arguments, a whole file (checked before any work), or stdin as a stream.
    total = None
    try:
        if args.text:
            lines, total = iter(args.text), len(args.text)
        elif args.input and args.input != "-":
            all_lines = read_lines(args.input)
            lines, total = iter(all_lines), len(all_lines)
        else:
            lines = decode_lines(sys.stdin.buffer, "stdin")
    except InputError as e:
        error(str(e))
    interactive = not args.text and not args.input and sys.stdin.isatty()
    batch_size = 1 if interactive else args.batch_size

    progress = None
    if args.input and args.input != "-" and total and sys.stderr.isatty() and not args.quiet:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
        from rich.console import Console

        progress = Progress(TextColumn("translating"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                            console=Console(stderr=True), transient=True)

    def write_all(out) -> None:
        stream = translator.translate_iter(lines, to=args.to, batch_size=batch_size, **options)
        task = progress.add_task("translate", total=total) if progress else None
        for lineno, tr in enumerate(stream, start=1):
            for w in tr.warnings:
                warn(f"line {lineno}: {w}")
            out.write(record(lineno, tr, args.format, args.alignment) + "\n")
            if progress:
                progress.advance(task)
            elif interactive or out is sys.stdout:
                out.flush()

    try:
        if progress:
            progress.start()
        try:
            if args.output and args.output != "-":
                with atomic_output(args.output) as out:
                    write_all(out)
            else:
                write_all(sys.stdout)
                sys.stdout.flush()
        finally:
            if progress:
                progress.stop()
    except (TranslationError, InputError) as e:
        error(str(e))


if __name__ == "__main__":
    main()
