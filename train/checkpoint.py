"""Checkpoint files: the one place that writes and reads them.

A `Checkpoint` holds the model (weights and `ModelConfig`), the run config, the tokenizer (path and
the serialized SentencePiece model, so export needs nothing else), the language tags and trained
directions, the training progress and, in `last.pt` only, what `--resume` needs (`ResumeState`).
On disk it is a plain dict of tensors and Python values (loadable with `weights_only=True`, no
unpickling of code), written atomically. `VERSION` names that layout; another version is refused.
"""

from __future__ import annotations

import pickle
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import torch

from mtkit.runtime.text_io import InputError, atomic_output, write_failed

from .model import ModelConfig, Transformer
from .state import TrainingProgress

FORMAT = "mtkit-checkpoint"
VERSION = 1
REQUIRED = ("model", "model_config", "tokenizer_model", "language_tags")
# Settings that change only how a model trains, not its weights' shapes or what they compute at
# inference: checkpoints that differ in these alone are the same model (they average, for one).
TRAINING_ONLY = ("dropout", "attention_dropout", "activation_dropout")


class CheckpointError(Exception):
    """A missing, corrupt or incompatible checkpoint; the message names the file."""


class Direction(NamedTuple):
    """A trained translation direction (stored as a plain (src, tgt) tuple)."""
    src: str
    tgt: str


@dataclass
class ResumeState:
    """What only `--resume` needs: optimizer, scheduler and RNG states, and what the run trained on."""
    optimizer: dict
    scheduler: dict
    rng: dict          # torch, cuda, python, python_pos
    data: str | None = None     # `trainer.data_fingerprint` of the training data; None in older files


@dataclass
class Checkpoint:
    model: dict                                     # the state dict
    model_config: ModelConfig
    tokenizer_model: bytes                          # serialized SentencePiece model
    language_tags: dict[str, int]
    directions: list[Direction] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    run_config: dict = field(default_factory=dict)  # RunConfig.to_dict(); empty when unknown
    tokenizer_path: str = ""
    progress: TrainingProgress = field(default_factory=TrainingProgress)
    resume: ResumeState | None = None
    averaged_from: list[str] | None = None          # averaged.pt: the epoch checkpoints averaged
    shipped_from: str | None = None                 # models/*/checkpoint.fp16.pt: the checkpoint it was cut from
    ema_updates: int | None = None                  # ema.pt: the optimizer steps its moving average has taken in

    @property
    def vocab_size(self) -> int:
        return self.model_config.vocab_size

    def to_dict(self) -> dict:
        """The on-disk layout (version 1)."""
        raw = {"format": FORMAT, "version": VERSION, "model": self.model, "model_config": self.model_config.to_dict(),
               "run_config": self.run_config, "tokenizer_path": self.tokenizer_path,
               "tokenizer_model": self.tokenizer_model, "vocab_size": self.vocab_size,
               "language_tags": dict(self.language_tags), "languages": list(self.languages),
               "directions": [tuple(d) for d in self.directions], "progress": self.progress.to_dict()}
        if self.resume is not None:
            raw |= {"optimizer": self.resume.optimizer, "scheduler": self.resume.scheduler, "rng": self.resume.rng}
            if self.resume.data is not None:
                raw["data_fingerprint"] = self.resume.data
        if self.averaged_from is not None:
            raw["averaged_from"] = self.averaged_from
        if self.shipped_from is not None:
            raw["shipped_from"] = self.shipped_from
        if self.ema_updates is not None:
            raw["ema_updates"] = self.ema_updates
        return raw

    @classmethod
    def from_dict(cls, raw: dict, path: Path) -> Checkpoint:
        missing = [k for k in REQUIRED if k not in raw]
        if missing:
            raise CheckpointError(f"{path}: checkpoint lacks {', '.join(missing)}; cannot use it as a model")
        try:
            model_config = ModelConfig(**raw["model_config"])
            progress = TrainingProgress.from_dict(raw.get("progress", {}))
            resume = (ResumeState(raw["optimizer"], raw["scheduler"], raw["rng"], raw.get("data_fingerprint"))
                      if "optimizer" in raw else None)
            return cls(model=raw["model"], model_config=model_config, tokenizer_model=raw["tokenizer_model"],
                       language_tags={k: int(v) for k, v in raw["language_tags"].items()},
                       directions=[Direction(str(a), str(b)) for a, b in raw.get("directions", [])],
                       languages=list(raw.get("languages", [])), run_config=raw.get("run_config") or {},
                       tokenizer_path=raw.get("tokenizer_path", ""), progress=progress, resume=resume,
                       averaged_from=raw.get("averaged_from"), shipped_from=raw.get("shipped_from"),
                       ema_updates=raw.get("ema_updates"))
        except (TypeError, ValueError, KeyError, AttributeError) as e:
            raise CheckpointError(f"{path}: unreadable config ({type(e).__name__}: {e})") from None

    def save(self, path: Path) -> None:
        """Write to a temporary file in the same directory, then rename (text_io.atomic_output): a crash
        or a full disk never leaves a half file, nor replaces the one there. CheckpointError, one line
        naming `path`, when it cannot be written; anything there but a regular file is refused."""
        path = Path(path)
        if why := not_replaceable(path):
            raise CheckpointError(why)
        raw = self.to_dict()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_output(path, binary=True) as f:
                torch.save(raw, f)
        except Exception as e:      # any error while writing: the write failed (atomic_output removed the rest)
            raise CheckpointError(save_failed(path, e)) from None

    def bundle_config(self, **more):
        """The runtime's `BundleConfig` for this model: `bundle_config` with this checkpoint's tags
        and directions; `more` sets the rest (variants, tensors, provenance, ...)."""
        return bundle_config(self.model_config, self.language_tags, self.directions, **more)


def not_replaceable(path: Path) -> str | None:
    """Why a checkpoint may not be written at `path`: something there that is not a regular file (a
    device such as /dev/null, a FIFO, a directory) is never replaced, --force or not."""
    path = Path(path)
    if path.exists() and not path.is_file():
        what = "a directory" if path.is_dir() else "not a regular file"
        return f"{path}: is {what}; a checkpoint replaces only a file, so choose another output"
    return None


def save_failed(path: Path, error: Exception) -> str:
    """The line for a checkpoint that could not be written, as text_io words it ("PATH: cannot write
    (File too large)"). torch reports a failed write of its own as a RuntimeError ("unexpected pos
    ..."), with the write's error (atomic_output's InputError) as its context."""
    for e in (error, error.__context__):
        if isinstance(e, InputError):
            return str(e)
        if isinstance(e, OSError):
            return str(write_failed(path, e))
    return f"{path}: cannot write ({type(error).__name__}: {first_sentence(error)})"


def model_shape(config: ModelConfig) -> dict:
    """The fields of `config` that make two checkpoints the same model: all but TRAINING_ONLY."""
    return {k: v for k, v in config.to_dict().items() if k not in TRAINING_ONLY}


def shape_differences(ours: ModelConfig, theirs: ModelConfig, ignore: tuple[str, ...] = ()) -> str:
    """How `theirs` differs from `ours` in `model_shape`, e.g. "ffn_dim: 128 there, 64 here"; "" if not."""
    a, b = model_shape(ours), model_shape(theirs)
    return ", ".join(f"{k}: {b.get(k)!r} there, {a[k]!r} here" for k in a if k not in ignore and a[k] != b.get(k))


def bundle_config(model: ModelConfig, language_tags: dict[str, int], directions, **more):
    """The one mapping from a `ModelConfig` to the bundle's model shape (config.json), with the
    runtime's special ids. Used by the export and by every PyTorch `Translator`."""
    from mtkit.runtime.bundle_format import SPECIAL_IDS, BundleConfig

    return BundleConfig(vocab_size=model.vocab_size, d_model=model.d_model, n_heads=model.n_heads,
                        head_dim=model.head_dim, encoder_layers=model.encoder_layers,
                        decoder_layers=model.decoder_layers, max_positions=model.max_positions,
                        special_ids=dict(SPECIAL_IDS),
                        language_tags=dict(language_tags), directions=[list(d) for d in directions],
                        **({"variants": {}} | more))


def load_checkpoint(path: Path, map_location="cpu") -> Checkpoint:
    """The checkpoint at `path`; CheckpointError for anything missing, corrupt or of another version."""
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"{path}: is a directory; {checkpoint_hint(path)}")
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint" if not path.exists() else f"{path}: not a regular file")
    if path.stat().st_size == 0:  # torch's EOFError for it has no message
        raise CheckpointError(f"{path}: empty file, not a checkpoint")
    foreign = f"{path}: not a checkpoint written by mt-train (torch could not read it)"
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"PK\x03\x04":    # torch.save writes a zip archive; torch would unpickle the rest
                raise CheckpointError(foreign)  # ("KeyError: 101" for a text file)
        damaged = damaged_member(path)
        raw = None if damaged else torch.load(path, map_location=map_location, weights_only=True)
    except CheckpointError:
        raise
    except PermissionError:
        raise CheckpointError(f"{path}: cannot read it (permission denied)") from None
    except pickle.UnpicklingError:
        # Never quote torch here: its message advises weights_only=False, which runs the file's code.
        raise CheckpointError(foreign) from None
    except Exception as e:  # torch raises many types for truncated or foreign files
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(e).__name__}: {first_sentence(e)})") from None
    if damaged:
        raise CheckpointError(f"{path}: damaged (member {damaged} fails its checksum); use an earlier checkpoint")
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not an mtkit checkpoint")
    if raw.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint version {raw.get('version')!r} is not supported (expected {VERSION})")
    ckpt = Checkpoint.from_dict(raw, path)
    # A diverged run or a damaged file: NaN weights translate into nothing, and NaN passes parity's checks
    broken = [k for k, v in ckpt.model.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if broken:
        raise CheckpointError(f"{path}: {len(broken)} weight tensor(s) hold NaN or infinity ({broken[0]}"
                              f"{', ...' if len(broken) > 1 else ''}): the run diverged or the file is damaged; "
                              f"use an earlier checkpoint")
    return ckpt


def damaged_member(path: Path) -> str | None:
    """The first member of the checkpoint's zip whose data fails its CRC-32 (torch reads them unchecked,
    so damaged bytes would load as weights or as a tokenizer); None when all pass. A file that is no
    zip (torch's legacy format, or a zip without its directory) is left to torch to judge."""
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        return None
    with archive:
        for member in archive.infolist():
            try:
                with archive.open(member) as f:
                    while f.read(1 << 20):
                        pass
            except (zipfile.BadZipFile, EOFError, NotImplementedError, zlib.error):   # a damaged header too
                return member.filename
    return None


def checkpoint_hint(directory: Path) -> str:
    """What to give instead of `directory`: its few checkpoints by name, or an example path."""
    try:
        found = sorted(directory.glob("*.pt")) or sorted(directory.glob("*/*.pt"))
    except OSError:
        found = []
    if 0 < len(found) <= 4:
        return "give one of its checkpoints: " + ", ".join(map(str, found))
    example = directory / "final.pt" if (directory / "final.pt").is_file() else directory / "NAME" / "final.pt"
    return f"give a checkpoint file such as {example}"


def first_sentence(error: Exception) -> str:
    """The start of an error's message (torch's go on with advice), or its type when it has none."""
    lines = str(error).strip().splitlines()
    return lines[0].split(". ")[0][:200] if lines else type(error).__name__


def load_model(path: Path) -> tuple[Checkpoint, Transformer]:
    """The checkpoint and its model in eval mode (fp32 whatever the stored precision). CheckpointError
    for anything unusable."""
    ckpt = load_checkpoint(path)
    try:
        model = Transformer(ckpt.model_config)
        model.load_state_dict(ckpt.model)
    except (TypeError, ValueError, RuntimeError, AttributeError) as e:
        raise CheckpointError(f"{path}: model does not match its config ({type(e).__name__}: "
                              f"{first_sentence(e)})") from None
    return ckpt, model.eval()


def average_state_dicts(paths: list[Path], weights: list[float] | None = None) -> dict:
    """The element-wise (weighted) mean of the models in `paths`: checkpoint averaging, or with
    weights, interpolating two models in weight space."""
    weights = [1.0] * len(paths) if weights is None else weights
    norm = sum(weights)
    weights = [w / norm for w in weights]   # before multiplying: a huge weight times a parameter overflows
    total = None
    for p, w in zip(paths, weights, strict=True):
        state = load_checkpoint(p).model
        if total is None:
            total = {k: v.double() * w for k, v in state.items()}
        else:
            for k, v in state.items():
                total[k] += v.double() * w
    mean = {k: v.to(torch.float32) for k, v in total.items()}
    first = {}  # weights tied in the inputs (embeddings, output layer) stay one tensor
    return {k: mean[first.setdefault(v.data_ptr(), k)] for k, v in state.items()}
