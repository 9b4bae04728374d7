"""The options mt-translate, mt-eval and mt-tui share, each defined once (same name, same help):
the model and its languages, where it runs, and the decoding flags, generated from the fields of
`DecodeOptions`. Imports only click and numpy-free modules, so `--help` stays quick.
"""

from __future__ import annotations

import functools
from dataclasses import fields
from pathlib import Path

import click
from click.core import ParameterSource

from .data_dir import ENV as DATA_DIR_ENV
from .decode_budget import BUDGET, INT8_BUDGET
from .decode_options import DecodeOptions, OptionError
from .threads import MAX_THREADS

PROVIDERS = ("auto", "cpu", "cuda")
VARIANTS = ("auto", "fp32", "int8", "fp16")

MODEL = click.option("-m", "--model", metavar="MODEL", default=None,
                     help="The model: a name (see mt-models list), a bundle directory, or a .tar.gz / .zip of "
                          "one (default: $MT_MODEL, else the shipped model).")
FROM = click.option("--from", "from_lang", metavar="LANG", default=None,
                    callback=lambda ctx, param, value: None if value == "auto" else value,
                    help="Source language, or auto (the default): detected sentence by sentence, and a sentence "
                         "already in the target language is left as it is.")
TO = click.option("--to", metavar="LANG", default=None,
                  help="Target language (default: en if the model has it, else its first).")
PROVIDER = click.option("--provider", type=click.Choice(PROVIDERS), default="auto", show_default=True,
                        help="Where to run: auto = CUDA if this onnxruntime build has it and it works, else the CPU.")
VARIANT = click.option("--variant", type=click.Choice(VARIANTS), default="auto", show_default=True,
                       help="Graph precision: auto = int8 on the CPU, fp16 on CUDA, if the bundle has them; "
                            "else fp32.")
THREADS = click.option("--threads", type=click.IntRange(1, MAX_THREADS), default=None, metavar="N",
                       help="ONNX Runtime's intra-op threads, shared by the int8 graphs' parallel batches (default: its choice, at most the CPUs this process may use).")
MAX_BATCH_TOKENS = click.option(
    "--max-batch-tokens", type=click.IntRange(min=1), default=None, metavar="N",
    help=f"Padded source tokens decoded at once: fewer use less memory, more can be faster (default: "
         f"{INT8_BUDGET[0]} on the int8 graphs, {BUDGET[0]} on the others).")
MAX_BATCH_SENTENCES = click.option(
    "--max-batch-sentences", type=click.IntRange(min=1), default=None, metavar="N",
    help=f"Rows (sentences x beam) decoded at once, as --max-batch-tokens (default: {INT8_BUDGET[1]} on the "
         f"int8 graphs, {BUDGET[1]} on the others).")
DATA_DIR = click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
                        help=f"Where the corpora are (default: ${DATA_DIR_ENV}, else shared/data beside the "
                             "source checkout).")


def model_options(command, languages: tuple = (FROM, TO)):
    """-m/--model, --from, --to, --provider, --variant and --threads, in that order; `languages`: the
    --from and --to options of a command whose languages come from elsewhere (mt-eval's files)."""
    for option in reversed((MODEL, *languages, PROVIDER, VARIANT, THREADS)):
        command = option(command)
    return command


def budget_options(command):
    """--max-batch-tokens and --max-batch-sentences: the Translator's decode budget."""
    return MAX_BATCH_TOKENS(MAX_BATCH_SENTENCES(command))


def flag(name: str) -> str:
    """The command-line flag of a DecodeOptions field (the field name for one without a flag)."""
    found = DecodeOptions.__dataclass_fields__.get(name)
    return (found.metadata.get("flag") if found else None) or name


# DecodeOptions fields that only sampling reads.
SAMPLING_ONLY = ("temperature", "top_k", "top_p", "seed")


def decoding_options(exclude: tuple[str, ...] = ()):
    """Add --greedy and a flag for each DecodeOptions field that has one (but those in `exclude`), and
    hand the command a single `options`: a checked DecodeOptions. A value out of range is a usage error
    that names flags, e.g. "--n-best (5) cannot exceed --beam-size (4) without --sampling"."""
    chosen = [f for f in fields(DecodeOptions) if f.metadata.get("flag") and f.name not in exclude]

    def decorate(callback):
        @functools.wraps(callback)
        def command(*args, greedy: bool, **kwargs):
            values = {f.name: kwargs.pop(f.name) for f in chosen}
            context = click.get_current_context()
            given = [name for name in values if context.get_parameter_source(name) == ParameterSource.COMMANDLINE]
            if greedy:
                if "beam_size" in given and values["beam_size"] != 1:
                    raise click.UsageError("--greedy is --beam-size 1; drop one of them")
                values["beam_size"] = 1
            # A flag that the chosen search would ignore is a mistake worth a word, not silence.
            if values["sampling"] and (greedy or "beam_size" in given):
                raise click.UsageError("--sampling does not search a beam; drop --greedy / --beam-size")
            stray = [flag(name) for name in given if name in SAMPLING_ONLY]
            if stray and not values["sampling"]:
                raise click.UsageError(f"{' and '.join(stray)} {'applies' if len(stray) == 1 else 'apply'} only "
                                       f"with --sampling")
            try:
                options = DecodeOptions(**values)
            except OptionError as e:
                raise click.UsageError(e.message(flag)) from None
            return callback(*args, options=options, **kwargs)

        for f in reversed(chosen):
            kind = bool if isinstance(f.default, bool) else (int if f.default is None else type(f.default))
            command = click.option(f.metadata["flag"], f.name, metavar=f.metadata["metavar"], help=f.metadata["help"],
                                   default=f.default, show_default=f.default is not None and f.default is not False,
                                   **({"is_flag": True} if kind is bool else {"type": kind}))(command)
        return click.option("--greedy", is_flag=True, help="Greedy search (same as --beam-size 1).")(command)

    return decorate
