"""Writing a bundle: the checkpoint in, config.json / tokenizer.model out, and the atomic finish.

A bundle is built in a hidden staging directory next to its target and renamed into place only
once every check has passed, so a failed export never leaves anything that looks like a bundle.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

import onnx
import onnxruntime as ort
import sentencepiece as spm
import torch

from mtkit.runtime import bundle_format as bf
from mtkit.runtime.checksums import file_sha256
from mtkit.runtime.text_io import cannot_write, write_failed
from mtkit.runtime.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from mtkit.train.checkpoint import Checkpoint


class ExportError(Exception):
    """The export cannot go on; the message says why (and names the file)."""


def check_tokenizer(ckpt: Checkpoint, checkpoint: Path) -> None:
    """ExportError unless the checkpoint's SentencePiece model loads, with mtkit's special ids and
    the model's vocabulary size."""
    try:
        # Empty bytes would load as an empty model; anything not bytes is a TypeError.
        if not isinstance(ckpt.tokenizer_model, bytes) or not ckpt.tokenizer_model:
            raise TypeError
        sp = spm.SentencePieceProcessor(model_proto=ckpt.tokenizer_model)
    except (RuntimeError, TypeError):  # sentencepiece: "could not parse ModelProto"
        raise ExportError(f"{checkpoint}: its embedded tokenizer is damaged") from None
    ids = (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id())
    if ids != (PAD_ID, UNK_ID, BOS_ID, EOS_ID):
        raise ExportError(f"{checkpoint}: its tokenizer has special ids {ids}, "
                          f"expected {(PAD_ID, UNK_ID, BOS_ID, EOS_ID)}")
    if sp.vocab_size() != ckpt.vocab_size:
        raise ExportError(f"{checkpoint}: its tokenizer has {sp.vocab_size()} pieces but the model {ckpt.vocab_size}")


def write_tokenizer(ckpt: Checkpoint, out_dir: Path) -> Path:
    """tokenizer.model from the checkpoint's serialized SentencePiece bytes (`check_tokenizer` first)."""
    path = Path(out_dir) / bf.TOKENIZER_FILE
    path.write_bytes(ckpt.tokenizer_model)
    return path


def check_graph(path: Path) -> None:
    """onnx.checker (with shape inference) and a real ONNX Runtime session; ExportError otherwise."""
    try:
        onnx.checker.check_model(str(path), full_check=True)
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as e:  # checker and ORT raise their own assorted types
        raise ExportError(f"{path.name}: invalid graph ({type(e).__name__}: {str(e).splitlines()[0][:300]})") from None


def checkpoint_scores(ckpt: Checkpoint, path: Path) -> dict:
    """Training scores known for this checkpoint: its progress record and the run's summary.json."""
    progress = ckpt.progress
    scores = {"step": progress.step, "epoch": progress.epoch, "best_dev_bleu": [list(b) for b in progress.best]}
    summary = Path(path).parent / "summary.json"
    if summary.is_file():
        try:
            data = json.loads(summary.read_text(encoding="utf-8"))
            if Path(data.get("final_checkpoint", "")).resolve() == Path(path).resolve():
                scores["final_dev_bleu"] = data.get("final_dev_bleu")
                scores["final"] = data.get("final")
        except (ValueError, OSError):
            pass  # a summary is a nicety; the checkpoint itself is the provenance
    return scores


def build_config(ckpt: Checkpoint, checkpoint: Path, variants: dict, parity: dict, opset: int) -> bf.BundleConfig:
    cfg = ckpt.model_config
    return ckpt.bundle_config(
        variants=variants,
        tensors=bf.tensor_names(cfg.decoder_layers, search_head=True, cross_per_sentence=True),
        provenance={
            "checkpoint": str(Path(checkpoint).resolve()),
            "checkpoint_sha256": file_sha256(checkpoint),
            "model_config": cfg.to_dict(),
            "run_config": ckpt.run_config,
            "scores": checkpoint_scores(ckpt, checkpoint),
            **({"averaged_from": ckpt.averaged_from} if ckpt.averaged_from else {}),
            **({"shipped_from": ckpt.shipped_from} if ckpt.shipped_from else {}),
            **({"ema_updates": ckpt.ema_updates} if ckpt.ema_updates else {}),
            "exported_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "exporter": {"torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": ort.__version__,
                         "opset": opset},
        },
        parity=parity,
    )


def check_target(target: Path, archive: bool, force: bool) -> None:
    """ExportError unless a bundle may be written at `target`: nothing there, an empty directory, or
    with `force` an earlier bundle (a .tar.gz of one with `archive`). Anything else is the user's
    and is never replaced, --force or not."""
    if why := cannot_write(target):      # before the checkpoint loads, not when the staging directory is made
        raise ExportError(why)
    if not (target.exists() or target.is_symlink()):
        return
    if not archive and is_empty_dir(target):
        return
    if not (is_bundle_archive(target) if archive else is_bundle(target)):
        what = "an mtkit bundle archive" if archive else "an mtkit bundle or an empty directory"
        raise ExportError(f"{target}: exists and is not {what}; --force replaces only a bundle, "
                          f"so choose another output or remove it yourself")
    if not force:
        raise ExportError(f"{target}: already exists (pass --force to replace it)")


def is_empty_dir(path: Path) -> bool:
    try:
        return path.is_dir() and not any(path.iterdir())
    except OSError:
        return False


def looks_like_config(data) -> bool:
    """A bundle's config.json, of any schema version: re-exporting over an older bundle is the point
    of --force, so the version is not checked here."""
    return isinstance(data, dict) and "schema_version" in data and isinstance(data.get("model"), dict)


def is_bundle(path: Path) -> bool:
    """A directory written by mt-export (its config.json reads as a bundle config)."""
    try:
        return path.is_dir() and looks_like_config(json.loads((path / bf.CONFIG_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return False


def is_bundle_archive(path: Path) -> bool:
    """A .tar.gz written by mt-export --archive: a file whose NAME/config.json reads as a bundle config."""
    if not path.is_file():              # a FIFO would block the read, a device is never replaced
        return False
    try:
        with tarfile.open(path, "r:gz") as tar:
            for member in tar:
                if member.isfile() and len(Path(member.name).parts) == 2 and member.name.endswith("/" + bf.CONFIG_FILE):
                    return looks_like_config(json.loads(tar.extractfile(member).read().decode("utf-8")))
    except (OSError, EOFError, ValueError, tarfile.TarError):
        pass
    return False


@contextlib.contextmanager
def writing(target: Path):
    """An OSError inside (a full disk, a file-size limit, while the bundle is written or moved into
    place) as the ExportError "TARGET: cannot write (No space left on device)"; the caller has removed
    what it wrote."""
    try:
        yield
    except OSError as e:
        raise ExportError(str(write_failed(target, e))) from None


def make_staging(target: Path) -> Path:
    """A hidden, empty directory next to `target` (same filesystem, so the final rename is atomic)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; a bundle is meant to be shared
    return staging


def finish(staging: Path, target: Path, archive: bool, force: bool) -> Path:
    """Move the checked bundle into place: a directory rename, or a .tar.gz written then renamed.
    The caller discards `staging` (and its .tar.gz) if this raises."""
    if archive:
        tmp = staging.with_name(staging.name + ".tar.gz")
        with tarfile.open(tmp, "w:gz") as tar:
            tar.add(staging, arcname=target.name.removesuffix(".tar.gz"))
        shutil.rmtree(staging)
        staging = tmp
    check_target(target, archive, force)  # checked up front too; this catches a target that appeared meanwhile
    if target.exists() or target.is_symlink():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
        os.replace(staging, target)
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink()  # a file, or a link: the bundle it pointed to stays
    else:
        os.replace(staging, target)
    return target


def discard(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)
    for leftover in (staging.with_name(staging.name + ".tar.gz"),):
        leftover.unlink(missing_ok=True)
