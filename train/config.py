"""A training run described in one TOML file: corpora, languages, tokenizer, model and optimisation.

Relative corpus paths are resolved against `data_dir`, which is itself relative to the config
file unless absolute; the environment variable MT_DATA_DIR overrides it, and without either the
default is the runtime's (`mtkit.runtime.data_dir`: shared/data beside the source checkout).
A corpus path that starts with "./" or "../" is relative to the config file instead: a corpus a
tool generated (devtools/word_pairs.py) lives beside the runs, not in the shared data.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Sequence, get_args, get_origin, get_type_hints

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from mtkit.runtime.data_dir import ENV as DATA_DIR_ENV
from mtkit.runtime.data_dir import default_data_dir
from mtkit.runtime.decode_options import MAX_ROWS

from .data import (CleaningReport, DataError, Pair, clean, read_parallel, read_tsv, split_holdout, subsample,
                   without_final_stop, without_holdout)
from .model import ModelConfig


@dataclass
class Corpus:
    """One parallel corpus: aligned files `{prefix}.{src}` / `{prefix}.{tgt}` (a '.gz' suffix is
    allowed), or explicit `src_file`/`tgt_file`, or a `tsv` file."""

    src: str
    tgt: str
    prefix: str = ""
    src_file: str = ""
    tgt_file: str = ""
    tsv: str = ""
    both_directions: bool = False   # also add the reversed pairs (tgt -> src)
    repeat: int = 1                 # upsample a small corpus so it is not drowned by a big one
    max_pairs: int = 0              # keep at most this many cleaned pairs (by hash, deterministic; 0 = all)
    max_words: int = 0              # keep only pairs of at most this many words a side: headings, labels (0 = any)
    # Drop a full stop or "!" that ends both sides: short input is typed without one ("Montag"), and a
    # model that has only seen "Montag." reads it as a product label. "?" and "..." stay.
    strip_final_stop: bool = False
    suffix: str = ".gz"

    def __post_init__(self):
        # One way, whole: `files` would otherwise look for ".de.gz" when none is given, and use one of two
        # ways given without a word about the other.
        ways = [way for way, given in (("prefix", self.prefix), ("src_file and tgt_file", self.src_file or self.tgt_file),
                                       ("tsv", self.tsv)) if given]
        if not ways:
            raise ValueError("names no files: give prefix, src_file and tgt_file, or tsv")
        if len(ways) > 1:
            raise ValueError(f"names its files more than one way ({', '.join(ways)}): give one")
        if bool(self.src_file) != bool(self.tgt_file):
            given, missing = ("src_file", "tgt_file") if self.src_file else ("tgt_file", "src_file")
            raise ValueError(f"gives {given} without {missing}")

    def files(self, data_dir: Path, config_dir: Path = Path(".")) -> list[Path]:
        names = [self.tsv] if self.tsv else [self.src_file or f"{self.prefix}.{self.src}{self.suffix}",
                                            self.tgt_file or f"{self.prefix}.{self.tgt}{self.suffix}"]
        return [(config_dir if name.startswith(("./", "../")) else data_dir) / name for name in names]

    def load(self, data_dir: Path, config_dir: Path = Path("."), report: CleaningReport | None = None) -> list[Pair]:
        files = self.files(data_dir, config_dir)
        raw = read_tsv(*files, report) if self.tsv else read_parallel(*files)
        if self.max_words:
            raw = [(s, t) for s, t in raw if max(len(s.split()), len(t.split())) <= self.max_words]
        if self.strip_final_stop:
            raw = [without_final_stop(s, t) for s, t in raw]
        pairs = [Pair(s, t, self.src, self.tgt) for s, t in raw]
        if self.both_directions:
            pairs += [Pair(t, s, self.tgt, self.src) for s, t in raw]
        return pairs

    @property
    def name(self) -> str:
        return self.tsv or self.prefix or self.src_file


@dataclass
class DataConfig:
    train: list[Corpus]
    dev: list[Corpus] = field(default_factory=list)
    test: list[Corpus] = field(default_factory=list)
    data_dir: str = ""               # "" = the default data directory (mtkit.runtime.data_dir)
    holdout: int = 1000              # dev pairs held out of train when no dev corpus is given
    max_ratio: float = 3.0
    max_chars: int = 1000


@dataclass
class TokenizerConfig:
    vocab_size: int = 8000
    model_type: str = "unigram"
    character_coverage: float = 0.9999
    input_sentence_size: int = 2_000_000
    byte_fallback: bool = True       # unseen characters (emoji, rare scripts) survive as bytes

    def __post_init__(self):
        # SentencePiece's own rules, checked here so a run fails before its data is read, not after.
        if self.model_type.lower() not in ("unigram", "bpe", "char", "word"):
            raise ValueError(f"model_type must be \"unigram\", \"bpe\", \"char\" or \"word\", not {self.model_type!r}")
        if not 0.98 <= self.character_coverage <= 1:
            raise ValueError(f"character_coverage must be from 0.98 to 1, not {self.character_coverage}")


@dataclass
class OptimConfig:
    max_tokens: int = 4096           # target tokens per batch (before accumulation)
    accum_steps: int = 1
    lr: float = 7e-4                 # peak learning rate, reached at the end of warmup
    warmup_steps: int = 4000
    betas: tuple[float, float] = (0.9, 0.98)
    weight_decay: float = 0.0001
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    epochs: int = 30
    max_steps: int = 0               # stop after this many optimizer steps (0 = no limit)
    patience: int = 5                # early stopping: epochs without a dev BLEU gain
    keep_best: int = 3               # best checkpoints kept, by dev BLEU
    average_last: int = 5            # average the last N epoch checkpoints at the end (0 = off)
    save_every_steps: int = 0        # extra mid-epoch checkpoints (0 = only at epoch ends)
    ema_decay: float = 0.0           # keep a moving average of the weights, checkpoints/ema.pt (0 = off; 0.9998: ~5,000 steps)
    eval_beam: int = 1               # beam size for the per-epoch dev BLEU (1 = greedy)
    dev_bleu_max_sentences: int = 1000
    log_every_steps: int = 50
    num_threads: int = 0             # torch CPU threads (0 = torch's default)
    precision: str = "auto"          # "bf16" autocast, "fp32", or "auto": bf16 on CUDA, fp32 on CPU
    seed: int = 1

    def __post_init__(self):
        if self.precision not in ("auto", "bf16", "fp32"):
            raise ValueError("precision must be \"auto\", \"bf16\" or \"fp32\"")
        if not all(0 <= beta < 1 for beta in self.betas):       # Adam's rule
            raise ValueError(f"betas must each be from 0 to below 1, not {list(self.betas)}")
        if not 0 <= self.label_smoothing < 1:
            raise ValueError(f"label_smoothing must be from 0 to below 1, not {self.label_smoothing}")
        if not 0 <= self.ema_decay < 1:
            raise ValueError(f"ema_decay must be from 0 (off) to below 1, not {self.ema_decay}")
        if self.eval_beam > MAX_ROWS:                            # the decoder's own limit, met at the first dev BLEU
            raise ValueError(f"eval_beam must be at most {MAX_ROWS}, not {self.eval_beam}")


# Every number in a config must be >= 0 (where 0 means "off" or "all", the field's comment says so);
# these counts, sizes and rates must be > 0. Checked by RunConfig.from_dict with the types.
POSITIVE = {
    Corpus: {"repeat"},
    DataConfig: {"max_ratio", "max_chars"},
    TokenizerConfig: {"vocab_size", "character_coverage", "input_sentence_size"},
    ModelConfig: {"d_model", "n_heads", "encoder_layers", "decoder_layers", "ffn_dim", "max_positions"},
    OptimConfig: {"max_tokens", "accum_steps", "lr", "warmup_steps", "clip_norm", "epochs", "keep_best", "eval_beam",
                  "dev_bleu_max_sentences", "log_every_steps"},
}


@dataclass
class RunConfig:
    name: str
    output_dir: str
    languages: list[str]
    data: DataConfig
    tokenizer: TokenizerConfig
    model: ModelConfig
    optim: OptimConfig
    path: str = ""                   # the TOML file this came from

    @classmethod
    def load(cls, path: str | Path, overrides: Sequence[str] = ()) -> "RunConfig":
        """Read a TOML config; each override is `section.key=value` (or a top-level `key=value`), the value as in TOML."""
        path = Path(path)
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8-sig"))    # a BOM dropped, as text_io drops it
        except FileNotFoundError:
            raise DataError(f"{path}: no such config file") from None
        except UnicodeDecodeError as e:       # worded as text_io words it for any other text file
            line = e.object.count(b"\n", 0, e.start) + 1
            column = e.start - e.object.rfind(b"\n", 0, e.start)
            raise DataError(f"{path}, line {line}: invalid UTF-8 (byte 0x{e.object[e.start]:02x} at column {column}); "
                            "save the config as UTF-8") from None
        except OSError as e:
            raise DataError(f"{path}: cannot read ({e.strerror or e})") from None
        except tomllib.TOMLDecodeError as e:
            raise DataError(f"{path}: invalid TOML ({e})") from None
        for override in overrides:
            apply_override(raw, override)
        return cls.from_dict(raw, path)

    @classmethod
    def from_dict(cls, raw: dict, path: Path | None = None) -> "RunConfig":
        """Check every value against its field's annotation (and the bounds in POSITIVE) before any
        work starts: a wrong type would otherwise surface late, as a traceback deep in torch."""
        src = path or "the run config"

        def typed(value, hint, key: str):
            origin, args = get_origin(hint), get_args(hint)
            if is_dataclass(hint) and isinstance(value, dict):
                return build(hint, value, key)
            if origin in (list, tuple) and isinstance(value, (list, tuple)) and (origin is list or len(value) == len(args)):
                items = [typed(v, args[0], f"{key}[{i}]") for i, v in enumerate(value)]
                return items if origin is list else tuple(items)
            if hint is float and type(value) in (int, float):
                try:
                    number = float(value)
                except OverflowError:                         # an integer beyond any float
                    number = math.inf
                if not math.isfinite(number):                 # TOML has nan and inf; no setting takes them
                    raise DataError(f"{src}: {key} must be a finite number, not {value}")
                return number
            if type(value) is hint:  # exactly: to Python a bool is an int, to a config it is not
                return value
            raise DataError(f"{src}: {key} must be {describe(hint)}, not {type(value).__name__} ({value!r})")

        def build(klass, values: dict, where: str):
            dotted = lambda key: f"{where}.{key}" if where else key
            known = [f.name for f in fields(klass)]
            unknown = sorted(set(values) - set(known))
            if unknown:
                place = f"key(s) in [{where}]" if where else "top-level key(s) or section(s)"
                listed = "" if all(typo(k, known) != k for k in unknown) else \
                    f"; {f'[{where}]' if where else 'the top level'} takes: {', '.join(k for k in known if k != 'path')}"
                raise DataError(f"{src}: unknown {place}: {', '.join(typo(k, known) for k in unknown)}{listed}")
            for f in fields(klass):
                if f.name not in values and f.default is MISSING and f.default_factory is MISSING:
                    raise DataError(f"{src}: missing key {dotted(f.name)}")
            hints = get_type_hints(klass)
            values = {k: typed(v, hints[k], dotted(k)) for k, v in values.items()}
            for k, v in values.items():
                positive = k in POSITIVE.get(klass, ())
                if hints[k] in (int, float) and (v < 0 or positive and v == 0):
                    raise DataError(f"{src}: {dotted(k)} must be {'> 0' if positive else '>= 0'}, not {v}")
            try:
                return klass(**values)
            except ValueError as e:
                raise DataError(f"{src}: [{where}] {e}") from None

        raw = dict(raw)
        raw.setdefault("name", path.stem if path else "run")
        raw.setdefault("output_dir", f"runs/{raw['name']}")
        for name, hint in get_type_hints(cls).items():
            if is_dataclass(hint):
                raw.setdefault(name, {})             # a section left out takes its defaults
        # Kept whole: a relative data_dir is read from the config's folder, also by mt-export in another directory.
        raw["path"] = str(Path(path).absolute()) if path else ""
        run = build(cls, raw, "")
        if not run.data.train:
            raise DataError(f"{src}: [data] names no train corpus")
        check_languages(run, src)
        # Pieces every tokenizer of this run holds before it learns any; SentencePiece fails on fewer.
        tok = run.tokenizer
        reserved = 4 + len(run.languages) + (256 if tok.byte_fallback else 0)
        if tok.vocab_size <= reserved:
            held = "special pieces, language tags" + (" and 256 byte pieces for byte_fallback" if tok.byte_fallback else "")
            raise DataError(f"{src}: tokenizer.vocab_size must be more than {reserved} ({held}), not {tok.vocab_size}")
        return run

    def to_dict(self) -> dict:
        return asdict(self)

    def config_dir(self) -> Path:
        return Path(self.path).parent if self.path else Path(".")

    def data_dir(self) -> Path:
        configured = None
        if self.data.data_dir:
            d = Path(self.data.data_dir)
            configured = d if d.is_absolute() else self.config_dir() / d
        found = default_data_dir(configured)
        if found is None:
            raise DataError(f"{self.path or 'the run config'}: no data directory; set [data] data_dir or {DATA_DIR_ENV}")
        return found

    def load_split(self, split: str, report: CleaningReport | None = None) -> list[Pair]:
        """The cleaned pairs of one split; dev falls back to a holdout of train. A train or dev split
        without a pair is a DataError naming its files: a run could neither train nor score on it."""
        data_dir, config_dir = self.data_dir(), self.config_dir()
        corpora = getattr(self.data, split)
        # Every file is looked for before any is read (train's with dev's, which a run reads next), so a
        # wrong data directory is found at once and not after minutes of reading.
        needed = {"train": self.data.train + self.data.dev, "dev": self.data.dev or self.data.train}.get(split, corpora)
        for corpus, path in ((c, p) for c in needed for p in c.files(data_dir, config_dir)):
            if path.is_file():
                continue
            plain = path.with_name(path.name.removesuffix(corpus.suffix))
            if corpus.prefix and corpus.suffix and plain.is_file():     # the data is here, only not gzipped
                raise DataError(f"{path}: no such file, but {plain.name} is: give its corpus suffix = \"\" to read "
                                f"plain files")
            if not path.is_relative_to(data_dir):    # a generated corpus: its config says what makes it
                raise DataError(f"{path}: no such file")
            raise DataError(f"{path}: no such file; set {DATA_DIR_ENV}, or data_dir in the config's [data] section")
        if split == "train":
            return self._train_and_holdout(data_dir, config_dir, report)[0]
        if split == "dev" and not corpora:
            holdout = self._train_and_holdout(data_dir, config_dir, report)[1]
            if not holdout:
                raise DataError(f"{self.path or 'the run config'}: no dev pairs: [data] holdout is 0 and there "
                                f"is no [[data.dev]] corpus")
            return holdout
        report = report if report is not None else CleaningReport()
        pairs = clean([p for c in corpora for p in c.load(data_dir, config_dir)], max_ratio=float("inf"),
                      max_chars=10**9, report=report)           # evaluation data: only drop empties (and duplicates)
        if split == "dev" and not pairs:
            raise DataError(f"no dev pairs in {self._files(corpora)} (cleaning {report.summary()})")
        return pairs

    def train_pairs_of(self, corpus: Corpus, data_dir: Path, config_dir: Path = Path("."),
                       report: CleaningReport | None = None) -> list[Pair]:
        """One training corpus as a run trains on it, once: cleaned (which drops duplicates), then
        subsampled to its max_pairs."""
        return subsample(clean(corpus.load(data_dir, config_dir, report), self.data.max_ratio, self.data.max_chars,
                               report=report), corpus.max_pairs)

    def _train_and_holdout(self, data_dir: Path, config_dir: Path,
                           report: CleaningReport | None) -> tuple[list[Pair], list[Pair]]:
        """The training pairs, and the dev pairs held out of them when no dev corpus is given (else
        none). Split here alone, once, before `repeat`: the holdout is exactly what training lacks."""
        report = report if report is not None else CleaningReport()
        corpora = [(c, self.train_pairs_of(c, data_dir, config_dir, report)) for c in self.data.train]
        holdout = []
        if not self.data.dev:
            _, holdout = split_holdout([p for _, pairs in corpora for p in pairs], self.data.holdout)
        train = without_holdout([p for c, pairs in corpora for p in pairs * c.repeat], holdout)
        if not train:
            why = (f"all {len(holdout)} cleaned pairs are the dev holdout; add a [[data.dev]] corpus or lower "
                   f"[data] holdout" if holdout else f"cleaning {report.summary()}")
            raise DataError(f"no training pairs in {self._files(self.data.train)} ({why})")
        return train, holdout

    def _files(self, corpora: list[Corpus]) -> str:
        """The files of `corpora`, as a message names them."""
        return ", ".join(str(p) for c in corpora for p in c.files(self.data_dir(), self.config_dir()))


def check_languages(run: RunConfig, src) -> None:
    """DataError unless `languages` names each language once and every language of every corpus: each
    gets a tag in the tokenizer, which the training data is encoded with."""
    for lang in run.languages:
        if run.languages.count(lang) > 1:
            raise DataError(f"{src}: languages names {lang} more than once")
    for split in ("train", "dev", "test"):
        for i, corpus in enumerate(getattr(run.data, split)):
            for lang in (corpus.src, corpus.tgt):
                if lang not in run.languages:
                    raise DataError(f"{src}: data.{split}[{i}] is {corpus.src}-{corpus.tgt}, but {lang} is not in "
                                    f"languages ({', '.join(run.languages)})")


def apply_override(raw: dict, override: str) -> None:
    """Set `section.key=value`, or a top-level `key=value`, in a raw config; a value that is not TOML
    (a bare word) is a string. Sections are checked here, keys and values by `RunConfig.from_dict`."""
    dotted, sep, text = override.partition("=")
    *sections, key = dotted.strip().split(".")
    hints = get_type_hints(RunConfig)
    top_level = [name for name, hint in hints.items() if not is_dataclass(hint) and name != "path"]  # path: the file's
    if not sep or not key or not sections and key not in top_level:
        inside = [f"{name}.{key}" for name, hint in hints.items() if is_dataclass(hint) and key in get_type_hints(hint)]
        raise DataError(f"--set {override!r}: expected SECTION.KEY=VALUE or KEY=VALUE for {', '.join(top_level)}"
                        + (f" (did you mean {inside[0]}={text.strip()}?)" if inside else ", e.g. optim.max_tokens=16384"))
    klass = RunConfig
    for section in sections:
        hints = get_type_hints(klass)
        if section not in hints:
            known = [name for name, hint in hints.items() if is_dataclass(hint)]
            raise DataError(f"--set {override!r}: unknown section {typo(section, known)}")
        if not is_dataclass(hints[section]):
            raise DataError(f"--set {override!r}: {section} is not a table")
        klass = hints[section]
    try:
        value = tomllib.loads(f"v = {text.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = text.strip()
    table = raw
    for section in sections:
        table = table.setdefault(section, {})
        if not isinstance(table, dict):
            raise DataError(f"--set {override!r}: {section} is not a table")
    table[key] = value


TYPE_NAMES = {bool: ("true or false", "booleans"), int: ("an integer", "integers"), float: ("a number", "numbers"),
              str: ("a string", "strings")}


def describe(hint) -> str:
    """A config value of the annotated type `hint`, as a message names it: "a list of 2 numbers"."""
    origin, args = get_origin(hint), get_args(hint)
    plural = lambda item: "tables" if is_dataclass(item) else TYPE_NAMES[item][1]
    if is_dataclass(hint):
        return "a table"
    if origin is list:
        return f"a list of {plural(args[0])}"
    if origin is tuple:
        return f"a list of {len(args)} {plural(args[0])}"
    return TYPE_NAMES[hint][0]


def typo(key: str, known: list[str]) -> str:
    """`key`, with the known name it is probably a typo of."""
    close = difflib.get_close_matches(key, known, n=1)
    return f"{key} (did you mean {close[0]}?)" if close else key
