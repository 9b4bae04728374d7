"""`mt-eval`: translate a test set with the runtime and score it with sacreBLEU (BLEU and chrF,
cased, detokenized, 13a) and report the speed.

The model is a bundle, or a training checkpoint (*.pt): that one is run by the PyTorch model
through the same search and pre/post-processing (`Translator.from_backend`), so the two are
comparable. That branch runs mtkit.train (torch); nothing in runtime/ imports torch.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .cli_support import exit_with_error, run_command

PROG = "mt-eval"


def default_data_dir() -> Path:
    """$MT_DATA_DIR, else `shared/data` next to the repository."""
    if os.environ.get("MT_DATA_DIR"):
        return Path(os.environ["MT_DATA_DIR"])
    return Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Score a model on a test set with sacreBLEU (BLEU, chrF) and measure its speed.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  mt-eval -m models/NAME --src test.de --ref test.en\n"
               "  mt-eval --corpus multi30k/test_2016_flickr --src-lang de --tgt-lang en\n"
               "  mt-eval -m runs/NAME/final.pt --corpus tatoeba/test --src-lang de --tgt-lang en --limit 500")
    p.add_argument("-m", "--model", metavar="MODEL", help="bundle directory/archive, or a training checkpoint *.pt "
                                         "(default: $MT_MODEL, else the model in models/)")
    p.add_argument("--src", metavar="FILE", help="source file, one sentence per line (.gz allowed)")
    p.add_argument("--ref", metavar="FILE", help="reference file, aligned with --src")
    p.add_argument("--corpus", metavar="PREFIX", help="a paired corpus in the data dir: PREFIX.{src-lang,tgt-lang}.gz, "
                                    "e.g. multi30k/test_2016_flickr")
    p.add_argument("--src-lang", metavar="LANG", help="source language (with --corpus)")
    p.add_argument("--tgt-lang", metavar="LANG", help="target language (default: from --ref's suffix, e.g. test.en, else en)")
    p.add_argument("--data-dir", metavar="DIR", type=Path, default=None, help="where --corpus lives (default: $MT_DATA_DIR, "
                                                              "else ../shared/data next to the repository)")
    p.add_argument("--beam-size", metavar="N", type=int, default=4, help="beam width (default 4)")
    p.add_argument("--greedy", action="store_true", help="greedy search (same as --beam-size 1)")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N sentences")
    p.add_argument("--split-sentences", action="store_true",
                   help="split lines into sentences as mt-translate does (off: each line is one segment)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--output-hyps", metavar="FILE", help="write the translations to this file")
    p.add_argument("--provider", choices=("cpu", "cuda", "auto"), default="cpu")
    p.add_argument("--variant", choices=("auto", "fp32", "int8", "fp16"), default="auto")
    p.add_argument("--threads", metavar="N", type=int, default=None, help="intra-op threads (ORT, or torch for a checkpoint)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return p


def error(message: str, code: int = 1):
    exit_with_error(PROG, message, code)


def checkpoint_translator(path: Path, provider: str, threads: int | None):
    """A Translator running a training checkpoint's PyTorch model. The code lives in mtkit.train
    (the runtime itself never imports torch) and needs the `train` extra."""
    try:
        from mtkit.train.checkpoint import CheckpointError
        from mtkit.train.reference import checkpoint_translator as load
    except ImportError as e:
        error(f"{path}: evaluating a checkpoint needs the training extra (pip install 'mtkit[train]'): {e}")
    try:
        return load(path, provider, threads)
    except CheckpointError as e:
        error(str(e))


def resolve_files(args, languages: list[str]) -> tuple[str, str, str, str | None]:
    """(source file, reference file, target language, source language) from --src/--ref or --corpus."""
    if args.corpus:
        if args.src or args.ref:
            error("give --corpus or --src/--ref, not both", 2)
        if not (args.src_lang and args.tgt_lang):
            error("--corpus needs --src-lang and --tgt-lang", 2)
        base = (args.data_dir or default_data_dir()) / args.corpus
        files = []
        for lang in (args.src_lang, args.tgt_lang):
            gz, plain = Path(f"{base}.{lang}.gz"), Path(f"{base}.{lang}")
            files.append(gz if gz.exists() or not plain.exists() else plain)
        return str(files[0]), str(files[1]), args.tgt_lang, args.src_lang
    if not (args.src and args.ref):
        error("give --src and --ref, or --corpus with --src-lang and --tgt-lang", 2)
    tgt = args.tgt_lang
    if not tgt:
        name = Path(args.ref).name.removesuffix(".gz")
        suffix = name.rsplit(".", 1)[-1] if "." in name else ""
        tgt = suffix if suffix in languages else ("en" if "en" in languages else languages[0])
    return args.src, args.ref, tgt, args.src_lang


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.limit is not None and args.limit < 1:
        error("--limit must be at least 1", 2)
    if args.beam_size < 1:
        error("--beam-size must be at least 1", 2)
    run_command(PROG, run, args)


def run(args) -> None:
    from .errors import TranslationError
    from .text_io import InputError, atomic_output, read_lines

    model = Path(args.model) if args.model else None
    try:
        if model is not None and model.suffix == ".pt":
            translator = checkpoint_translator(model, args.provider, args.threads)
        else:
            from .translator import Translator
            translator = Translator(model, provider=args.provider, threads=args.threads, variant=args.variant)
    except TranslationError as e:
        error(str(e))
    src_path, ref_path, tgt, src_lang = resolve_files(args, translator.languages)
    try:
        sources, refs = read_lines(src_path), read_lines(ref_path)
    except InputError as e:
        error(str(e))
    if len(sources) != len(refs):
        error(f"{src_path} has {len(sources)} lines but {ref_path} has {len(refs)}; they must be aligned")
    if args.limit:
        sources, refs = sources[: args.limit], refs[: args.limit]
    if not sources:
        error(f"{src_path}: no sentences")
    beam = 1 if args.greedy else args.beam_size

    hyps, target_tokens = [], 0
    progress = None
    if sys.stderr.isatty() and not args.quiet and not args.json:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
        from rich.console import Console

        progress = Progress(TextColumn("translating"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                            console=Console(stderr=True), transient=True)
        progress.start()
        task = progress.add_task("eval", total=len(sources))
    chunk = 256          # big enough for length-sorted batches, small enough for a moving progress bar
    start = time.perf_counter()
    try:
        for i in range(0, len(sources), chunk):
            for tr in translator.translate(sources[i:i + chunk], to=tgt, beam_size=beam,
                                           split_sentences=args.split_sentences):
                hyps.append(tr.text)
                target_tokens += tr.num_tokens
            if progress:
                progress.advance(task, len(sources[i:i + chunk]))
    except TranslationError as e:
        error(str(e))
    finally:
        if progress:
            progress.stop()
    seconds = time.perf_counter() - start

    from sacrebleu.metrics import BLEU, CHRF   # not needed until here; it is slow to import

    bleu_metric, chrf_metric = BLEU(), CHRF()
    bleu = bleu_metric.corpus_score(hyps, [refs])
    chrf = chrf_metric.corpus_score(hyps, [refs])
    if args.output_hyps:
        try:
            with atomic_output(args.output_hyps) as f:
                f.writelines(h + "\n" for h in hyps)
        except (InputError, OSError) as e:
            error(f"{args.output_hyps}: cannot write ({e})")
    report = {
        "model": str(translator.path), "variant": translator.variant, "provider": translator.provider,
        "src": src_path, "ref": ref_path, "src_lang": src_lang, "tgt_lang": tgt, "sentences": len(sources),
        "beam_size": beam, "bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2),
        "bleu_signature": str(bleu_metric.get_signature()), "chrf_signature": str(chrf_metric.get_signature()),
        "seconds": round(seconds, 3), "sentences_per_s": round(len(sources) / seconds, 2),
        "target_tokens": target_tokens, "target_tokens_per_s": round(target_tokens / seconds, 1),
    }
    if args.json:
        import json
        print(json.dumps(report, ensure_ascii=False))
        return
    direction = f"{src_lang}->{tgt}" if src_lang else f"->{tgt}"
    print(f"model     {report['model']} ({translator.variant}, {translator.provider})")
    print(f"test set  {src_path} {direction}, {len(sources)} sentences, beam {beam}")
    print(f"BLEU      {bleu.score:6.2f}   {report['bleu_signature']}")
    print(f"chrF      {chrf.score:6.2f}   {report['chrf_signature']}")
    print(f"speed     {report['sentences_per_s']:.1f} sentences/s, {report['target_tokens_per_s']:.0f} target tokens/s "
          f"({seconds:.2f} s)")


if __name__ == "__main__":
    main()
