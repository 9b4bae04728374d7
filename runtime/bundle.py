"""Finding, unpacking and checking a bundle on disk (the format itself is `bundle_format.py`).

`resolve_model` turns what the user gave (a directory, a .tar.gz / .zip archive, or nothing) into
a bundle directory; `check_files` makes sure everything the runtime will open is there, so that a
broken bundle fails at load time with the name of the file at fault.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import zipfile
from pathlib import Path

from . import bundle_format as bf
from .bundle_format import BundleConfig, BundleError

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
MODELS_DIR = Path(__file__).resolve().parent.parent / "models"   # the shipped models, next to the package source


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def is_bundle_dir(path: Path) -> bool:
    return (path / bf.CONFIG_FILE).is_file()


def default_model() -> Path:
    """The model used when none is given: $MT_MODEL, else the first bundle under the repository's
    `models/` directory (directories before archives, by name)."""
    env = os.environ.get("MT_MODEL")
    if env:
        return Path(env).expanduser()
    if MODELS_DIR.is_dir():
        entries = sorted(MODELS_DIR.iterdir())
        for p in entries:
            if p.is_dir() and is_bundle_dir(p):
                return p
        for p in entries:
            if p.is_file() and is_archive(p):
                return p
    raise BundleError(f"no model given and none installed: {MODELS_DIR} holds no bundle and MT_MODEL is not set; "
                      "pass a bundle directory or archive with -m (or path= in the API)")


def resolve_model(path: str | Path | None) -> Path:
    """The bundle directory for a directory, an archive (unpacked once into a cache) or None (default)."""
    path = default_model() if path is None else Path(path).expanduser()
    if not path.exists():
        raise BundleError(f"{path}: no such file or directory")
    if path.is_dir():
        if not is_bundle_dir(path):
            raise BundleError(f"{path / bf.CONFIG_FILE}: missing; is {path} a model bundle written by mt-export?")
        return path.resolve()
    if is_archive(path):
        return unpack_archive(path)
    if path.suffix in (".pt", ".pth"):
        raise BundleError(f"{path}: a training checkpoint, not a bundle; export it with mt-export first "
                          "(mt-eval can score a checkpoint directly)")
    raise BundleError(f"{path}: not a bundle directory nor a .tar.gz / .zip archive")


def cache_dir() -> Path:
    root = os.environ.get("MT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mtkit")
    return Path(root) / "bundles"


def unpack_archive(archive: Path) -> Path:
    """Unpack `archive` under the cache, keyed by its path, size and mtime, and return the bundle directory
    inside it. Unpacking goes to a temporary directory first, so an interrupted run leaves no half bundle."""
    archive = archive.resolve()
    st = archive.stat()
    key = hashlib.sha256(f"{archive}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    name = archive.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    target = cache_dir() / f"{name}-{key}"
    if not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=target.parent))
        try:
            if archive.name.lower().endswith(".zip"):
                with zipfile.ZipFile(archive) as z:
                    for member in z.namelist():   # refuse absolute paths and "..", as tarfile's data filter does
                        if member.startswith("/") or ".." in Path(member).parts:
                            raise BundleError(f"{archive}: unsafe path in archive: {member}")
                    z.extractall(tmp)
            else:
                with tarfile.open(archive) as t:
                    t.extractall(tmp, filter="data")
            try:
                tmp.rename(target)
            except OSError:          # another process unpacked it first
                shutil.rmtree(tmp, ignore_errors=True)
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise BundleError(f"{archive}: cannot unpack ({type(e).__name__}: {e})") from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    # The bundle is the archive's root or its single top-level directory.
    if is_bundle_dir(target):
        return target
    found = sorted(p.parent for p in target.rglob(bf.CONFIG_FILE))
    if not found:
        raise BundleError(f"{archive}: no {bf.CONFIG_FILE} inside; is this a model bundle written by mt-export?")
    return found[0]


def available_variants(directory: Path, config: BundleConfig) -> list[str]:
    """Variants listed in config.json, in `bf.VARIANTS` order."""
    return [v for v in bf.VARIANTS if v in config.variants]


def variant_files(directory: Path, config: BundleConfig, variant: str) -> tuple[Path, Path]:
    """(encoder, decoder) paths of a variant, as named in config.json (default: `bf.graph_file`)."""
    if variant not in config.variants:
        raise BundleError(f"{directory / bf.CONFIG_FILE}: no {variant!r} variant in this bundle "
                          f"(it has: {', '.join(available_variants(directory, config)) or 'none'})")
    entry = config.variants[variant] or {}
    encoder = directory / entry.get("encoder", bf.graph_file("encoder", variant))
    decoder = directory / entry.get("decoder", bf.graph_file("decoder", variant))
    for p in (encoder, decoder):
        if not p.is_file():
            raise BundleError(f"{p}: missing (listed as the {variant} variant in {bf.CONFIG_FILE})")
    return encoder, decoder


def load_tokenizer(directory: Path, config: BundleConfig):
    """The bundle's SentencePiece model, checked against config.json (vocabulary size, special ids, tags)."""
    import sentencepiece as spm

    path = directory / config.tokenizer
    if not path.is_file():
        raise BundleError(f"{path}: missing (the bundle's SentencePiece tokenizer)")
    sp = spm.SentencePieceProcessor()
    try:
        sp.Load(str(path))
    except (OSError, RuntimeError) as e:
        raise BundleError(f"{path}: not a SentencePiece model ({e})") from None
    if sp.get_piece_size() != config.vocab_size:
        raise BundleError(f"{path}: {sp.get_piece_size()} pieces, but {bf.CONFIG_FILE} says vocab_size "
                          f"{config.vocab_size}; the tokenizer does not belong to this model")
    specials = {"pad": sp.pad_id(), "unk": sp.unk_id(), "bos": sp.bos_id(), "eos": sp.eos_id()}
    for name, expected in config.special_ids.items():
        if name in specials and specials[name] != expected:
            raise BundleError(f"{path}: special id {name}={specials[name]}, but {bf.CONFIG_FILE} says {expected}")
    from .vocab import language_tag
    for lang, tag_id in config.language_tags.items():
        if sp.piece_to_id(language_tag(lang)) != tag_id:
            raise BundleError(f"{path}: language tag {language_tag(lang)} is not id {tag_id} as {bf.CONFIG_FILE} says")
    return sp
