"""`mt-eval`: translate a test set and score it with sacreBLEU (BLEU and chrF, cased, detokenized,
13a) and report the speed.

The model is a bundle (the torch-free runtime), or a training checkpoint (*.pt): that one is run
by the PyTorch model through the same search and pre/post-processing (`mtkit.train.reference`'s
checkpoint translator), so the two are comparable. Scoring sits here, above both runtime and
train, so that the runtime never imports training code; only the checkpoint branch needs torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
import time
import warnings
from pathlib import Path

import click

from mtkit.runtime.cli_options import DATA_DIR, decoding_options, model_options
from mtkit.runtime.cli_support import CommandError, command, progress_bar, run_and_exit, say_kept

PROG = "mt-eval"
CHUNK = 256             # sentences a call: big enough for length-sorted batches, small enough for a moving progress bar
LOG_EVERY_S = 30.0      # stderr not a terminal (a CI log, nohup): a progress line at most this often

EPILOG = """\b
Examples:
  mt-eval -m models/NAME --source-file test.de --ref-file test.en
  mt-eval --corpus multi30k/test_2016_flickr --from de --to en
  mt-eval -m runs/NAME/final.pt --corpus tatoeba/test --from de --to en --limit 500

Exit status: 0 done, 1 error, 2 usage, 130 interrupted, 143 terminated (SIGTERM)."""


def checkpoint_translator(path: Path, provider: str, threads: int | None):
    """A Translator running a training checkpoint's PyTorch model (needs the `train` extra)."""
    from mtkit.train.checkpoint import CheckpointError
    from mtkit.train.reference import checkpoint_translator as load

    try:
        return load(path, provider, threads)
    except CheckpointError as e:
        raise CommandError(str(e)) from None


def suffix_language(path: str, languages: list[str]) -> str | None:
    """The language a file's suffix names (`test.en`, `test.en.gz`), if the model has it."""
    name = Path(path).name.removesuffix(".gz")
    suffix = name.rsplit(".", 1)[-1] if "." in name else ""
    return suffix if suffix in languages else None


def resolve_files(translator, source_file, ref_file, corpus, data_dir, from_lang, to) -> tuple[str, str, str, str]:
    """(source file, reference file, target language, source language) from the files or --corpus."""
    from mtkit.runtime.data_dir import corpus_file, default_data_dir

    if corpus:
        to = translator.target_from(from_lang, to)     # as mt-translate: --from alone picks the target
        try:
            files = [corpus_file(data_dir or default_data_dir(), corpus, lang) for lang in (from_lang, to)]
        except FileNotFoundError as e:
            raise CommandError(str(e)) from None
        return str(files[0]), str(files[1]), to, from_lang
    # Never detected line by line: a line found in the target language would be copied, and scored.
    from_lang = from_lang or suffix_language(source_file, translator.source_languages)
    if from_lang is None:
        raise click.UsageError(f"give --from: the name of {source_file} does not end in one of the model's source "
                               f"languages ({', '.join('.' + lang for lang in translator.source_languages)})")
    # The reference's suffix is read among all the model's languages, so that a de->en model given test.de as
    # the reference says so, instead of scoring English against German.
    named = suffix_language(ref_file, sorted({*translator.languages, *translator.source_languages}))
    if to is None and named:
        known_source = from_lang in translator.source_languages
        if translator.directions and known_source and (from_lang, named) not in translator.directions:
            raise click.UsageError(f"the name of {ref_file} says it is in {named}, which this model does not translate "
                                   f"{from_lang} into ({', '.join(f'{a}->{b}' for a, b in translator.directions)}); "
                                   f"give the reference in the target language, or --to")
        to = named
    to = to or translator.target_from(from_lang)
    return source_file, ref_file, to, from_lang


def never_auto(ctx, param, value):
    # Never detected line by line: a line found in the target language would be copied, and scored.
    if value == "auto":
        raise click.UsageError("--from auto: mt-eval never detects the source language (a line already in the "
                               "target language would be copied and scored); give it, e.g. --from de", ctx)
    return value


# mt-eval's own --from and --to: its languages come from its files, not from detection.
FROM = click.option("--from", "from_lang", metavar="LANG", default=None, callback=never_auto,
                    help="Source language (default: the source file's suffix, e.g. test.de; never detected).")
TO = click.option("--to", metavar="LANG", default=None,
                  help="Target language (default: the reference file's suffix, e.g. test.en, else the model's "
                       "target for the source language, as mt-translate's --from alone picks it).")


@command(PROG, epilog=EPILOG)
@functools.partial(model_options, languages=(FROM, TO))
@click.option("-s", "--source-file", metavar="FILE", help="Source sentences, one per line (.gz allowed; its suffix, e.g. test.de, gives --from).")
@click.option("-r", "--ref-file", metavar="FILE",
              help="Reference translations, aligned with --source-file (its suffix, e.g. test.en, gives --to).")
@click.option("--corpus", metavar="PREFIX",
              help="A test set in the data directory: PREFIX.{from}.gz and PREFIX.{to}.gz, e.g. multi30k/test_2016_flickr.")
@DATA_DIR
@decoding_options(exclude=("num_hypotheses", "return_alignment"))
@click.option("--limit", type=click.IntRange(min=1), default=None, metavar="N", help="Only the first N sentences.")
@click.option("--split-sentences", is_flag=True,
              help="Split lines into sentences as mt-translate does (off: each line is one segment).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--output-hyps", metavar="FILE", help="Write the translations to this file (not '-': stdout is the report).")
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr (a bar on a terminal, a line every 30 s in a log).")
def main(model, from_lang, to, provider, variant, threads, source_file, ref_file, corpus, data_dir, options, limit,
         split_sentences, as_json, output_hyps, quiet) -> None:
    """Score a model on a test set with sacreBLEU (BLEU, chrF) and measure its speed.

    MODEL may also be a training checkpoint (*.pt): its PyTorch model then runs through the same search
    and pre/post-processing as a bundle (this alone needs torch: the `train` extra)."""
    if corpus and (source_file or ref_file):
        raise click.UsageError("give --corpus or --source-file/--ref-file, not both")
    if corpus and not from_lang:
        raise click.UsageError("--corpus needs --from (and --to, if the model has more than one target for it)")
    if not corpus and not (source_file and ref_file):
        raise click.UsageError("give --source-file and --ref-file, or --corpus with --from")
    if output_hyps == "-":      # not stdout, as mt-translate's -o -: the report (or --json) is written there
        raise click.UsageError("--output-hyps -: mt-eval's stdout is its report; give a file for the translations")

    from mtkit.runtime.cli import MOST_WARNINGS
    from mtkit.runtime.errors import TranslationError
    from mtkit.runtime.resumable import resumable_output
    from mtkit.runtime.text_io import InputError, check_output, read_lines, refuse_inputs

    path = Path(model) if model else None
    try:
        if output_hyps:                         # before the work, not after it
            check_output(output_hyps)
            refuse_inputs(output_hyps, [("--source-file", source_file), ("--ref-file", ref_file)])
        if path is not None and path.suffix == ".pt":
            if variant != "auto":           # a checkpoint has no graphs: its PyTorch model runs as it is
                raise CommandError(f"--variant {variant}: {path} is a checkpoint, which runs in PyTorch; "
                                   f"export it (mt-export) to score its graphs")
            translator = checkpoint_translator(path, provider, threads)
        else:
            from mtkit.runtime.translator import Translator
            translator = Translator(path, provider=provider, threads=threads, variant=variant)
        src_path, ref_path, tgt, src_lang = resolve_files(translator, source_file, ref_file, corpus, data_dir,
                                                          from_lang, to)
        if output_hyps and corpus:              # its files are known only now
            refuse_inputs(output_hyps, [("--corpus", src_path), ("--corpus", ref_path)])
        translator.tag_id(tgt)
        translator.target_from(src_lang, tgt)
        sources, refs = read_lines(src_path), read_lines(ref_path)
    except (TranslationError, InputError) as e:
        raise CommandError(str(e)) from None
    if len(sources) != len(refs):
        raise CommandError(f"{src_path} has {len(sources)} lines but {ref_path} has {len(refs)}; they must be aligned")
    if limit:
        sources, refs = sources[:limit], refs[:limit]
    if not sources:
        raise CommandError(f"{src_path}: no sentences")

    hyps, target_tokens, kept, warned = [], 0, 0, 0
    progress = None
    show = not quiet and not as_json
    start = last_line = time.perf_counter()
    out = None
    try:
        with contextlib.ExitStack() as stack:
            if output_hyps:             # an interrupted run keeps its hypotheses there; the same command goes on
                job = hyps_job(translator, src_path, src_lang, tgt, options, split_sentences, len(sources))
                out = stack.enter_context(resumable_output(output_hyps, job))
                hyps, kept = [h[:-1] for h in out.kept], out.done
                if kept and not quiet:
                    print(f"{PROG}: note: going on after the {kept:,} hypotheses an interrupted run kept "
                          f"({out.partial})", file=sys.stderr)
                if out.dropped and not quiet:
                    print(f"{PROG}: note: the hypotheses an interrupted run kept ({out.partial}) were made with another "
                          f"source, model or options; starting over", file=sys.stderr)
            if show and sys.stderr.isatty():
                progress = stack.enter_context(progress_bar())
                task = progress.add_task("eval", total=len(sources), completed=kept)
            for i in range(kept, len(sources), CHUNK):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")     # said below, a line each: not Python's two, source and all
                    chunk = translator.translate(sources[i:i + CHUNK], tgt, options, from_lang=src_lang,
                                                 split_sentences=split_sentences)
                for number, tr in enumerate(chunk, start=i + 1):
                    for w in tr.warnings:
                        warned += 1
                        if warned <= MOST_WARNINGS:
                            print(f"{PROG}: warning: line {number}: {w}", file=sys.stderr)
                    hyps.append(tr.text)
                    target_tokens += tr.num_tokens
                    if out:
                        out.write(tr.text + "\n")
                if out:
                    out.flush()         # each chunk: what an interruption keeps
                if progress:
                    progress.advance(task, len(sources[i:i + CHUNK]))
                elif show and time.perf_counter() - last_line >= LOG_EVERY_S:     # a log has no bar: a line at times
                    last_line = time.perf_counter()
                    print(f"{PROG}: translated {len(hyps):,} of {len(sources):,} sentences "
                          f"({100 * len(hyps) // len(sources)}%), {last_line - start:.0f} s", file=sys.stderr)
    except BaseException as e:
        if out is not None and out.partial and out.lines:       # Ctrl-C, SIGTERM, an error: say what is kept
            say_kept(PROG, e, f"{out.lines:,} of {len(sources):,} hypotheses are kept in {out.partial}; BLEU not computed")
        if isinstance(e, (TranslationError, InputError)):
            raise CommandError(str(e)) from None
        if isinstance(e, OSError) and not isinstance(e, BrokenPipeError):
            raise CommandError(f"{output_hyps}: cannot write ({e.strerror or e})") from None
        raise
    if warned > MOST_WARNINGS:
        print(f"{PROG}: warning: {warned - MOST_WARNINGS:,} more warnings", file=sys.stderr)
    seconds = time.perf_counter() - start
    translated = len(sources) - kept           # the speed is this run's: not of hypotheses an earlier one kept

    from sacrebleu.metrics import BLEU, CHRF   # not needed until here; it is slow to import

    bleu_metric, chrf_metric = BLEU(), CHRF()
    bleu = bleu_metric.corpus_score(hyps, [refs])
    chrf = chrf_metric.corpus_score(hyps, [refs])
    report = {
        "model": str(translator.path), "variant": translator.variant, "provider": translator.provider,
        "src": src_path, "ref": ref_path, "src_lang": src_lang, "tgt_lang": tgt, "sentences": len(sources),
        "beam_size": options.beam_size, "sampling": options.sampling, "options": dataclasses.asdict(options),
        "bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2),
        # sacreBLEU's breakdown: n-gram precisions, brevity penalty and length ratio (too short or too long)
        "bleu_precisions": [round(p, 2) for p in bleu.precisions], "bleu_bp": round(bleu.bp, 3),
        "length_ratio": round(bleu.sys_len / bleu.ref_len, 3) if bleu.ref_len else None,
        "hyp_len": bleu.sys_len, "ref_len": bleu.ref_len,
        "bleu_signature": str(bleu_metric.get_signature()), "chrf_signature": str(chrf_metric.get_signature()),
        "seconds": round(seconds, 3), "sentences_translated": translated,
        "sentences_per_s": round(translated / seconds, 2) if translated else None,
        "target_tokens": target_tokens,
        "target_tokens_per_s": round(target_tokens / seconds, 1) if translated else None,
    }
    if as_json:
        import json
        print(json.dumps(report, ensure_ascii=False))
        return
    direction = f"{src_lang}->{tgt}"
    print(f"model     {report['model']} ({translator.variant}, {translator.provider})")
    search = ("sampling" if options.sampling else "greedy" if options.beam_size == 1 else
              f"beam {options.beam_size}, length penalty {options.length_penalty}")
    print(f"test set  {src_path} {direction}, {len(sources)} sentences, {search}")
    print(f"BLEU      {bleu.score:6.2f}   {report['bleu_signature']}")
    print(f"          {'/'.join(f'{p:.1f}' for p in bleu.precisions)} (BP = {bleu.bp:.3f}, ratio = "
          f"{report['length_ratio']}, hyp_len = {bleu.sys_len}, ref_len = {bleu.ref_len})")
    print(f"chrF      {chrf.score:6.2f}   {report['chrf_signature']}")
    if not translated:
        print(f"speed     not measured (all {kept:,} hypotheses were kept from an interrupted run)")
        return
    resumed = f", {translated:,} sentences after the {kept:,} an interrupted run kept" if kept else ""
    print(f"speed     {report['sentences_per_s']:.1f} sentences/s, {report['target_tokens_per_s']:.0f} target tokens/s "
          f"({seconds:.2f} s{resumed})")


def hyps_job(translator, src_path, src_lang, tgt, options, split_sentences, sentences) -> dict:
    """What makes two runs' --output-hyps the same job, one going on with the other's hypotheses
    (resumable.resumable_output): the source file as it is on disk, the model, and the options."""
    from mtkit.runtime.resumable import model_identity, on_disk

    return {"source": on_disk(src_path), "sentences": sentences, "model": model_identity(translator.path),
            "variant": translator.variant, "from": src_lang, "to": tgt, "options": dataclasses.asdict(options),
            "split": split_sentences, "chunk": CHUNK}      # a sample's draws depend on its batch


def run() -> None:
    """The `mt-eval` console script: `main`, then a quick exit (cli_support.run_and_exit)."""
    run_and_exit(main)


if __name__ == "__main__":
    run()
