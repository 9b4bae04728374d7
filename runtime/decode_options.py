"""`DecodeOptions`: how a translation is searched for, defined once.

Every front end builds on this one frozen dataclass: the API (`Translator.translate(..., options,
**overrides)`), the decoding flags of mt-translate and mt-eval (generated from each field's
metadata: flag, metavar, help), the TUI's settings, the trainer's dev BLEU and the CTranslate2
runner. Defaults live in the fields and the rules in `__post_init__`, so none of them can drift.
No numpy here: the CLIs read these fields to build `--help`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

from .errors import TranslationError

MAX_LENGTH_EXTRA = 10


def option(default, flag: str | None = None, metavar: str | None = None, help: str = ""):
    """A field with its command-line flag (None: API only) and help."""
    return field(default=default, metadata={"flag": flag, "metavar": metavar, "help": help})


class OptionError(TranslationError, ValueError):
    """A decoding option out of range. The message names options by their field names (`num_hypotheses`);
    `message(name)` spells them another way, e.g. as command-line flags (`--n-best`)."""

    def __init__(self, template: str, options: "DecodeOptions"):
        self.template, self.options = template, options
        super().__init__(self.message(lambda name: name))

    def message(self, name: Callable[[str], str]) -> str:
        return self.template.format(o=self.options, **{f.name: name(f.name) for f in fields(self.options)})


# Each rule: (holds, message). A message names options as {field} and shows values as {o.field}.
RULES: list[tuple[Callable[["DecodeOptions"], bool], str]] = [
    (lambda o: o.beam_size >= 1, "{beam_size} must be at least 1, not {o.beam_size}"),
    (lambda o: o.num_hypotheses >= 1, "{num_hypotheses} must be at least 1, not {o.num_hypotheses}"),
    (lambda o: o.sampling or o.num_hypotheses <= o.beam_size,
     "{num_hypotheses} ({o.num_hypotheses}) cannot exceed {beam_size} ({o.beam_size}) without {sampling}"),
    (lambda o: o.temperature > 0, "{temperature} must be positive, not {o.temperature}"),
    (lambda o: o.top_k >= 0, "{top_k} must be 0 (off) or positive, not {o.top_k}"),
    (lambda o: 0 < o.top_p <= 1, "{top_p} must be in (0, 1], not {o.top_p}"),
    (lambda o: o.no_repeat_ngram_size >= 0, "{no_repeat_ngram_size} must be 0 (off) or positive, not {o.no_repeat_ngram_size}"),
    (lambda o: o.no_repeat_loop >= 0, "{no_repeat_loop} must be 0 (off) or positive, not {o.no_repeat_loop}"),
    (lambda o: o.max_length_ratio > 0, "{max_length_ratio} must be positive, not {o.max_length_ratio}"),
    (lambda o: o.max_length_extra >= 0, "{max_length_extra} must be 0 or positive, not {o.max_length_extra}"),
    (lambda o: o.max_length is None or o.max_length >= 2, "{max_length} must be at least 2, not {o.max_length}"),
]


@dataclass(frozen=True)
class DecodeOptions:
    beam_size: int = option(4, "--beam-size", "N", "Beam width; 1 = greedy search.")
    num_hypotheses: int = option(1, "--n-best", "N", "Translations per input, best first (at most --beam-size; "
                                                      "with --sampling, N independent samples).")
    length_penalty: float = option(1.0, "--length-penalty", "X", "Beam scores are log p / length^X.")
    sampling: bool = option(False, "--sampling", None, "Sample instead of searching.")
    temperature: float = option(1.0, "--temperature", "T", "Sampling temperature (> 0).")
    top_k: int = option(0, "--top-k", "K", "Sample from the K most likely tokens (0 = all).")
    top_p: float = option(1.0, "--top-p", "P", "Sample from the most likely tokens that hold probability P "
                                               "(1 = all).")
    seed: int | None = option(None, "--seed", "N", "Random seed for --sampling (reproducible output).")
    no_repeat_ngram_size: int = option(0, "--no-repeat-ngram", "N", "Never repeat an n-gram of N tokens (0 = off).")
    no_repeat_loop: int = option(10, "--no-repeat-loop", "N", "Stop loops: never repeat a run of up to N tokens, "
                                                             "or N words however spelled, back to back (a second "
                                                             "time if 3+ long, a third if 1 or 2; 0 = off).")
    max_length_ratio: float = option(1.5, "--max-length-ratio", "X", f"At most X times the source tokens + "
                                                                     f"{MAX_LENGTH_EXTRA} output tokens (and the "
                                                                     f"model's maximum).")
    max_length_extra: int = option(MAX_LENGTH_EXTRA)
    # Cap on decoder positions (BOS included). None: the model's `max_positions`, which also caps a
    # value given here (`for_model`); the search alone, with no model, has no cap but the ratio.
    max_length: int | None = option(None)
    return_alignment: bool = option(False, "--alignment", None, "Add the cross-attention alignment "
                                                                "(--format jsonl only).")

    def __post_init__(self):
        for holds, message in RULES:
            if not holds(self):
                raise OptionError(message, self)

    def for_model(self, max_positions: int) -> "DecodeOptions":
        """These options with max_length capped by a model's position table."""
        return replace(self, max_length=min(self.max_length or max_positions, max_positions))


def field_help(name: str) -> str:
    """The help of a DecodeOptions field, as the CLIs show it (the TUI's tooltips use it too)."""
    return DecodeOptions.__dataclass_fields__[name].metadata["help"]
