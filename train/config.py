"""A training run described in one TOML file: corpora, languages, tokenizer, model and optimisation.

Relative corpus paths are resolved against `data_dir`, which is itself relative to the config
file unless absolute; the environment variable MT_DATA_DIR overrides it, and without either the
default is the runtime's (`mtkit.runtime.data_dir`: shared/data beside the source checkout).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Sequence

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from mtkit.runtime.data_dir import ENV as DATA_DIR_ENV
from mtkit.runtime.data_dir import default_data_dir

from .data import CleaningReport, DataError, Pair, clean, read_parallel, read_tsv, split_holdout, subsample
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
    suffix: str = ".gz"

    def load(self, data_dir: Path) -> list[Pair]:
        if self.tsv:
            raw = read_tsv(data_dir / self.tsv)
        else:
            src_file = self.src_file or f"{self.prefix}.{self.src}{self.suffix}"
            tgt_file = self.tgt_file or f"{self.prefix}.{self.tgt}{self.suffix}"
            raw = read_parallel(data_dir / src_file, data_dir / tgt_file)
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
    eval_beam: int = 1               # beam size for the per-epoch dev BLEU (1 = greedy)
    dev_bleu_max_sentences: int = 1000
    log_every_steps: int = 50
    num_threads: int = 0             # torch CPU threads (0 = torch's default)
    precision: str = "auto"          # "bf16" autocast, "fp32", or "auto": bf16 on CUDA, fp32 on CPU
    seed: int = 1


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
        """Read a TOML config; each override is `section.key=value`, the value written as in TOML."""
        path = Path(path)
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise DataError(f"{path}: no such config file") from None
        except tomllib.TOMLDecodeError as e:
            raise DataError(f"{path}: invalid TOML ({e})") from None
        for override in overrides:
            apply_override(raw, override)
        return cls.from_dict(raw, path)

    @classmethod
    def from_dict(cls, raw: dict, path: Path | None = None) -> "RunConfig":
        def build(klass, values: dict, where: str):
            known = {f.name for f in fields(klass)}
            unknown = set(values) - known
            if unknown:
                raise DataError(f"{path}: unknown key(s) in [{where}]: {', '.join(sorted(unknown))}")
            try:
                return klass(**values)
            except ValueError as e:
                raise DataError(f"{path}: [{where}] {e}") from None

        data = dict(raw.get("data", {}))
        for split in ("train", "dev", "test"):
            data[split] = [build(Corpus, c, f"data.{split}") for c in data.get(split, [])]
        if not data["train"]:
            raise DataError(f"{path}: [data] names no train corpus")
        optim = dict(raw.get("optim", {}))
        if optim.get("precision", "auto") not in ("auto", "bf16", "fp32"):
            raise DataError(f"{path}: [optim] precision must be \"auto\", \"bf16\" or \"fp32\"")
        if "betas" in optim:
            optim["betas"] = tuple(optim["betas"])
        return cls(
            name=raw.get("name", path.stem if path else "run"),
            output_dir=raw.get("output_dir", f"runs/{raw.get('name', 'run')}"),
            languages=list(raw["languages"]),
            data=build(DataConfig, data, "data"),
            tokenizer=build(TokenizerConfig, raw.get("tokenizer", {}), "tokenizer"),
            model=build(ModelConfig, raw.get("model", {}), "model"),
            optim=build(OptimConfig, optim, "optim"),
            path=str(path or ""),
        )

    def to_dict(self) -> dict:
        return asdict(self)

    def data_dir(self) -> Path:
        configured = None
        if self.data.data_dir:
            d = Path(self.data.data_dir)
            configured = d if d.is_absolute() or not self.path else Path(self.path).parent / d
        found = default_data_dir(configured)
        if found is None:
            raise DataError(f"{self.path or 'the run config'}: no data directory; set [data] data_dir or {DATA_DIR_ENV}")
        return found

    def load_split(self, split: str, report: CleaningReport | None = None) -> list[Pair]:
        """The cleaned pairs of one split; dev falls back to a holdout of train."""
        data_dir = self.data_dir()
        corpora = getattr(self.data, split)
        if split == "dev" and not corpora:
            _, holdout = split_holdout(self._load_train(data_dir, report), self.data.holdout)
            return holdout
        pairs = [p for c in corpora for p in c.load(data_dir)]
        if split == "train":
            return self._load_train(data_dir, report)
        return clean(pairs, max_ratio=float("inf"), max_chars=10**9)  # evaluation data: only drop empties

    def _load_train(self, data_dir: Path, report: CleaningReport | None) -> list[Pair]:
        # Cleaned per corpus (it drops duplicates), then repeated.
        pairs = [p for c in self.data.train
                 for p in subsample(clean(c.load(data_dir), self.data.max_ratio, self.data.max_chars, report=report),
                                    c.max_pairs) * c.repeat]
        if not self.data.dev:
            pairs, _ = split_holdout(pairs, self.data.holdout)
        return pairs


def apply_override(raw: dict, override: str) -> None:
    """Set `section.key=value` in a raw config; a value that is not TOML (a bare word) is a string."""
    dotted, sep, text = override.partition("=")
    *sections, key = dotted.strip().split(".")
    if not sep or not sections or not key:
        raise DataError(f"--set {override!r}: expected SECTION.KEY=VALUE, e.g. optim.max_tokens=16384")
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
