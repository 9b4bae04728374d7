"""`DecodeOptions`: how a translation is searched for, defined once.

Every front end builds on this one frozen dataclass: the API (`Translator.translate(..., options,
**overrides)`), the decoding flags of mt-translate and mt-eval (generated from each field's
metadata: flag, metavar, help), the TUI's settings, the trainer's dev BLEU and the CTranslate2
runner. Defaults live in the fields and the rules in `__post_init__`, so none of them can drift.
No numpy here: the CLIs read these fields to build `--help`.
"""

from __future__ import annotations

import math
import numbers
import textwrap
import typing
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

from .errors import TranslationError

MAX_LENGTH_EXTRA = 10
# Rows in flight per sentence, a beam or samples: memory and time grow with each (beam 1,024 took 19 s
# and 0.9 GB for one short sentence on the Zen 5; 100,000 was killed for memory).
MAX_ROWS = 256
# |length_penalty| beyond this only ranks by length, and length ** x overflows for long texts.
MAX_LENGTH_PENALTY = 10.0


def option(default, flag: str | None = None, metavar: str | None = None, help: str = ""):
    """A field with its command-line flag (None: API only) and help."""
    return field(default=default, metadata={"flag": flag, "metavar": metavar, "help": help})


class OptionError(TranslationError, ValueError):
    """A decoding option out of range. The message names options by their field names (`num_hypotheses`);
    `message(name)` spells them another way, e.g. as command-line flags (`--n-best`)."""

    def __init__(self, template: str, options: "DecodeOptions"):
        self.template, self.options = template, options
        super().__init__(self.message(lambda name: name))

    def __reduce__(self):
        # Pickled (multiprocessing hands a worker's exception back so) with its own arguments: by default
        # it is rebuilt from the message alone, which this __init__ refuses.
        return type(self), (self.template, self.options)

    def message(self, name: Callable[[str], str]) -> str:
        return self.template.format(o=self.options, **{f.name: name(f.name) for f in fields(self.options)})


# Each rule: (holds, message). A message names options as {field} and shows values as {o.field}.
RULES: list[tuple[Callable[["DecodeOptions"], bool], str]] = [
    (lambda o: 1 <= o.beam_size <= MAX_ROWS, "{beam_size} must be from 1 to %d, not {o.beam_size}" % MAX_ROWS),
    (lambda o: 1 <= o.num_hypotheses <= MAX_ROWS, "{num_hypotheses} must be from 1 to %d, not {o.num_hypotheses}"
     % MAX_ROWS),
    (lambda o: o.sampling or o.num_hypotheses <= o.beam_size,
     "{num_hypotheses} ({o.num_hypotheses}) cannot exceed {beam_size} ({o.beam_size}) without {sampling}"),
    (lambda o: abs(o.length_penalty) <= MAX_LENGTH_PENALTY,
     "{length_penalty} must be from -%g to %g, not {o.length_penalty}" % (MAX_LENGTH_PENALTY, MAX_LENGTH_PENALTY)),
    (lambda o: o.temperature > 0, "{temperature} must be positive, not {o.temperature}"),
    (lambda o: o.top_k >= 0, "{top_k} must be 0 (off) or positive, not {o.top_k}"),
    (lambda o: 0 < o.top_p <= 1, "{top_p} must be in (0, 1], not {o.top_p}"),
    (lambda o: o.no_repeat_ngram_size >= 0, "{no_repeat_ngram_size} must be 0 (off) or positive, not {o.no_repeat_ngram_size}"),
    (lambda o: o.no_repeat_loop >= 0, "{no_repeat_loop} must be 0 (off) or positive, not {o.no_repeat_loop}"),
    (lambda o: o.max_length_ratio > 0, "{max_length_ratio} must be positive, not {o.max_length_ratio}"),
    (lambda o: o.max_length_extra >= 0, "{max_length_extra} must be 0 or positive, not {o.max_length_extra}"),
    (lambda o: o.max_length is None or o.max_length >= 2, "{max_length} must be at least 2, not {o.max_length}"),
    (lambda o: o.seed is None or o.seed >= 0, "{seed} must be 0 or positive, not {o.seed}"),
]


@dataclass(frozen=True)
class DecodeOptions:
    """How a translation is searched for: beam search (the default), greedy (beam_size=1) or sampling.
    Frozen; `dataclasses.replace` makes a changed copy. A value of the wrong type or out of range is an
    `OptionError` that names the field."""

    beam_size: int = option(4, "--beam-size", "N", f"Beam width, 1 to {MAX_ROWS}; 1 = greedy search.")
    num_hypotheses: int = option(1, "--n-best", "N", "Translations per input, best first (at most --beam-size; "
                                                      "with --sampling, N independent samples).")
    # 1.5, not 1.0: with the shipped model, BLEU rose on all five dev sets (newstest2013 and Tatoeba dev
    # both ways, Multi30k val) and plateaued over 1.4-1.6, at the same speed (models/de-en/README.md).
    length_penalty: float = option(1.5, "--length-penalty", "X", f"Beam scores are log p / length^X ({-MAX_LENGTH_PENALTY:g} "
                                                                        f"to {MAX_LENGTH_PENALTY:g}).")
    sampling: bool = option(False, "--sampling", None, "Sample instead of searching.")
    temperature: float = option(1.0, "--temperature", "T", "Sampling temperature (> 0).")
    top_k: int = option(0, "--top-k", "K", "Sample from the K most likely tokens (0 = all).")
    top_p: float = option(1.0, "--top-p", "P", "Sample from the most likely tokens that hold probability P "
                                               "(1 = all).")
    seed: int | None = option(None, "--seed", "N", "Random seed for --sampling: a sentence's samples then depend only on "
                                                  "it, the options and N, not on its batch or neighbours.")
    no_repeat_ngram_size: int = option(0, "--no-repeat-ngram", "N", "Never repeat an n-gram of N tokens (0 = off).")
    no_repeat_loop: int = option(10, "--no-repeat-loop", "N", "Stop loops: never repeat a run of up to N tokens, "
                                                             "or N words however spelled, back to back (a second "
                                                             "time if 3+ long, a third if 1 or 2; 0 = off).")
    max_length_ratio: float = option(1.5, "--max-length-ratio", "X", f"At most X times the source tokens + "
                                                                     f"{MAX_LENGTH_EXTRA} output tokens (and the "
                                                                     f"model's maximum).")
    max_length_extra: int = option(MAX_LENGTH_EXTRA, help="Output tokens allowed beyond max_length_ratio "
                                                          "times the source tokens.")
    # The search alone, with no model, has no cap but the ratio (`for_model` applies the model's).
    max_length: int | None = option(None, help="Cap on output positions, the start token included (None: the "
                                               "model's maximum, which also caps a value given here).")
    return_alignment: bool = option(False, "--alignment", None, "Add the cross-attention alignment "
                                                                "(--format jsonl only).")

    def __post_init__(self):
        for f in fields(self):          # first, so that the rules compare numbers
            value = getattr(self, f.name)
            if not has_type(value, FIELD_TYPES[f.name]):
                raise OptionError(f"{{{f.name}}} must be {type_names(FIELD_TYPES[f.name])}, "
                                  f"not {type(value).__name__} ({{o.{f.name}!r}})", self)
            if not is_finite(value):        # inf would pass the one-sided rules
                raise OptionError(f"{{{f.name}}} must be a finite number, not {{o.{f.name}}}", self)
        for holds, message in RULES:
            if not holds(self):
                raise OptionError(message, self)

    def for_model(self, max_positions: int) -> "DecodeOptions":
        """These options with max_length capped by a model's position table (themselves, frozen, when
        already within it: a replace checks every field again, on each translate call)."""
        if self.max_length is not None and self.max_length <= max_positions:
            return self
        return replace(self, max_length=min(self.max_length or max_positions, max_positions))


# Each field's types, read from its annotation: (int,), (float,), (bool,) or (int, NoneType).
FIELD_TYPES = {name: typing.get_args(hint) or (hint,) for name, hint in typing.get_type_hints(DecodeOptions).items()}
# What a value of each type may be: an int (numpy's too) is a float, but a bool is no number here.
ACCEPTED = {bool: bool, int: numbers.Integral, float: numbers.Real, type(None): type(None)}


def has_type(value, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool) and bool not in types:
        return False
    return any(isinstance(value, ACCEPTED[t]) for t in types)


def is_finite(value) -> bool:
    """False only for a float that is inf or nan (an int of any size is finite)."""
    return isinstance(value, numbers.Integral) or not isinstance(value, numbers.Real) or math.isfinite(value)


def type_names(types: tuple[type, ...]) -> str:
    """E.g. "an int or None"."""
    names = {int: "an int", float: "a number", bool: "True or False", type(None): "None"}
    return " or ".join(names[t] for t in types)


def describe_fields() -> str:
    """Each field with its type, default, flag and help: the CLI's help, for `help(DecodeOptions)`."""
    lines = []
    for f in fields(DecodeOptions):
        flag = f.metadata["flag"] and " ".join(filter(None, (f.metadata["flag"], f.metadata["metavar"])))
        lines.append(f"        {f.name}: {f.type} = {f.default!r}" + (f"  ({flag})" if flag else ""))
        lines += textwrap.wrap(f.metadata["help"], 100, initial_indent=" " * 12, subsequent_indent=" " * 12)
    return "\n".join(lines)


DecodeOptions.__doc__ += "\n\n    Fields:\n" + describe_fields() + "\n"


def field_help(name: str) -> str:
    """The help of a DecodeOptions field, as the CLIs show it (the TUI's tooltips use it too)."""
    return DecodeOptions.__dataclass_fields__[name].metadata["help"]
