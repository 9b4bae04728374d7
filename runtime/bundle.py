"""Finding, unpacking and checking a bundle on disk (the format itself is `bundle_format.py`).

`resolve_model` turns what the user gave (a directory, a .tar.gz / .zip archive, a model name, or
nothing) into a bundle directory; `variant_files` and `load_tokenizer` make sure what the runtime
will open is there and has its recorded size, so that a broken bundle fails at load time with
the name of the file at fault.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from . import bundle_format as bf
from . import model_store
from .bundle_format import BundleConfig, BundleError
from .checksums import check_size, file_sha256
from .errors import OutOfMemory, is_out_of_memory

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
# The shipped models, next to the package source: the checkout's models/, or mtkit/models/ in the
# installed wheel, which carries the default model as package data.
MODELS_DIR = Path(__file__).resolve().parent.parent / "models"


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def is_bundle_dir(path: Path) -> bool:
    return (path / bf.CONFIG_FILE).is_file()


def check_bundle_dir(path: Path) -> None:
    """Raise BundleError unless the directory `path` holds a config.json; for a training run's directory,
    one that says to export its checkpoint."""
    if is_bundle_dir(path):
        return
    if checkpoints := [p for p in (path / "final.pt", path / "checkpoints" / "last.pt") if p.is_file()]:
        raise BundleError(f"{path}: a training run's directory, not a bundle; export its checkpoint with mt-export "
                          f"first, e.g. mt-export {checkpoints[0]} (mt-eval can score a checkpoint directly)")
    raise BundleError(f"{path / bf.CONFIG_FILE}: missing; is {path} a model bundle written by mt-export?")


def archive_stem(name: str) -> str:
    """"de-en.tar.gz" -> "de-en"."""
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def shipped_models() -> dict[str, Path]:
    """name -> bundle under MODELS_DIR: directories first, then archives, each by name."""
    if not MODELS_DIR.is_dir():
        return {}
    entries = sorted(MODELS_DIR.iterdir())
    found = {p.name: p for p in entries if p.is_dir() and is_bundle_dir(p)}
    for p in entries:
        if p.is_file() and is_archive(p):
            found.setdefault(archive_stem(p.name), p)
    return found


def find_model(name: str) -> Path | None:
    """The model called `name`: one installed with `mt-models install` first (so a user's copy wins),
    then a shipped one."""
    return model_store.installed_models().get(name) or shipped_models().get(name)


def default_model() -> Path:
    """The model used when none is given: $MT_MODEL (a path or a name), else the first shipped model
    (`shipped_models`)."""
    env = os.environ.get("MT_MODEL")
    if env:
        return Path(env).expanduser()
    shipped = shipped_models()
    if shipped:
        return next(iter(shipped.values()))
    raise BundleError(f"no model given and none installed: {MODELS_DIR} holds no bundle and MT_MODEL is not set; "
                      "pass a bundle directory or archive with -m (or path= in the API), or the name of a model "
                      "installed with mt-models install")


def locate(model: str | Path, given_as: str | None = None) -> Path:
    """A path that exists, else the model of that name (`find_model`); a folder of a model's name that
    is no bundle is an error giving the model's path. Errors name `model`, or `given_as` where that says
    more (where the value came from)."""
    path = Path(model).expanduser()
    if path.exists():
        not_a_bundle = path.is_dir() and not is_bundle_dir(path) and model_store.is_model_name(str(model))
        if not_a_bundle and (named := find_model(str(model))) is not None:     # a data folder of that name
            raise BundleError(f"{given_as or model}: a folder here, not a model bundle; paths come before names: "
                              f"give the model named {model} by its path, {named}")
        return path
    if model_store.is_model_name(str(model)):
        found = find_model(str(model))
        if found is not None:
            return found
        raise BundleError(f"{given_as or model}: no such file or directory, nor a model of that name in "
                          f"{model_store.models_dir()} or {MODELS_DIR} (mt-models list shows the models)")
    raise BundleError(f"{given_as or path}: no such file or directory")


def resolve_model(path: str | Path | None) -> Path:
    """The bundle directory for a directory, an archive (unpacked once into a cache), a model name, or
    None (the default model)."""
    if path is None:
        env = os.environ.get("MT_MODEL")       # named in an error: the user may not know it is set
        path = locate(default_model(), f"$MT_MODEL={env}" if env else None)
    else:
        path = locate(path)
    if path.is_dir():
        check_bundle_dir(path)
        return path.resolve()
    if is_archive(path):
        return unpack_archive(path)
    check_mistaken_file(path)
    raise BundleError(f"{path}: not a bundle directory nor a .tar.gz / .zip archive")


def check_mistaken_file(path: Path) -> None:
    """Raise BundleError, saying what to give instead, if the file `path` is one taken for a bundle: a
    file inside a bundle directory, or a training checkpoint (a zip file inside, so it must be told by
    its name before anything tries to unpack it)."""
    if is_bundle_dir(path.parent):
        raise BundleError(f"{path}: a file of the bundle {path.parent}; give the bundle's directory")
    if path.suffix in (".pt", ".pth"):
        raise BundleError(f"{path}: a training checkpoint, not a bundle; export it with mt-export first "
                          "(mt-eval can score a checkpoint directly)")


def cache_root() -> Path:
    """mtkit's cache: $MT_CACHE_DIR, else $XDG_CACHE_HOME/mtkit, else ~/.cache/mtkit. It holds unpacked
    archives (`bundles/`), ORT's optimized graphs (`ort/`) and mt-bench's work dirs (`bench/`)."""
    return Path(os.environ.get("MT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mtkit"))


def cache_dir() -> Path:
    """Where archives are unpacked."""
    return cache_root() / "bundles"


def extract_archive(archive: Path, dest: Path, shown_as: Path | None = None) -> None:
    """Unpack a .tar(.gz) or .zip (told apart by content) into `dest`, refusing paths that leave it. A
    full disk is said of `shown_as`, by default the folder holding `dest` (a temporary directory)."""
    import gzip  # only for archives: kept off mt-translate's start-up
    import tarfile
    import zipfile
    import zlib

    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                for member in z.namelist():
                    check_member_path(archive, member)
                z.extractall(dest)
        else:
            with tarfile.open(archive) as t:
                members = t.getmembers()
                for member in members:    # a bundle holds files and folders only: no links, no devices
                    check_member_path(archive, member.name)
                    if not (member.isfile() or member.isdir()):
                        raise BundleError(f"{archive}: not a plain file in archive: {member.name}")
                if hasattr(tarfile, "data_filter"):    # Python 3.10.12+ and 3.11.4+ (Debian 12 has 3.11.2)
                    t.extractall(dest, members=members, filter="data")
                else:
                    t.extractall(dest, members=members)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, gzip.BadGzipFile):
        raise ArchiveError(archive, archive_problem(archive)) from None
    except OSError as e:                    # the disk, not the archive
        raise BundleError(f"{archive}: cannot unpack into {shown_as or dest.parent} ({e.strerror or e})") from None


def check_member_path(archive: Path, name: str) -> None:
    """Refuse a member whose path would leave the folder it is unpacked into (absolute, or with ..)."""
    if name.startswith("/") or ".." in PurePosixPath(name).parts:
        raise BundleError(f"{archive}: unsafe path in archive: {name}")


class ArchiveError(BundleError):
    """An archive that does not unpack; `reason` says why in a few words (tarfile's own message lists
    every compression it tried, one a line)."""

    def __init__(self, archive: Path, reason: str):
        super().__init__(f"{archive}: cannot unpack: {reason}")
        self.reason = reason


def archive_problem(archive: Path) -> str:
    """Why an archive did not unpack, told by its first bytes: damaged, or no archive at all."""
    import tarfile

    with open(archive, "rb") as f:
        head = f.read(4)
    if head.startswith((b"\x1f\x8b", b"PK\x03\x04")) or tarfile.is_tarfile(archive):   # gzip, zip, tar
        return "archive is truncated or damaged"
    return "not a valid .tar.gz / .zip archive"


def find_bundle(root: Path, source: Path | str) -> Path:
    """The bundle in an unpacked archive: its root, or the first directory holding a config.json."""
    if is_bundle_dir(root):
        return root
    found = sorted(p.parent for p in root.rglob(bf.CONFIG_FILE))
    if not found:
        raise BundleError(f"{source}: no {bf.CONFIG_FILE} inside; is this a model bundle written by mt-export?")
    return found[0]


def unpack_archive(archive: Path) -> Path:
    """Unpack `archive` under the cache, keyed by its path, size and mtime, and return the bundle directory
    inside it. Unpacking goes to a temporary directory first, so an interrupted run leaves no half bundle."""
    import hashlib   # only for archives, like tarfile: kept off mt-translate's start-up
    import shutil
    import tempfile

    archive = archive.resolve()
    st = archive.stat()
    key = hashlib.sha256(f"{archive}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    target = cache_dir() / f"{archive_stem(archive.name)}-{key}"
    if not target.is_dir():
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=target.parent))
        except OSError as e:        # a regular file on its path, a read-only disk: say which setting moves it
            raise BundleError(f"{target.parent}: cannot unpack {archive.name} in the cache directory "
                              f"({e.strerror or e}); set MT_CACHE_DIR to a writable directory") from None
        try:
            extract_archive(archive, tmp)
            try:
                tmp.rename(target)
            except OSError:          # another process unpacked it first
                shutil.rmtree(tmp, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return find_bundle(target, archive)


def available_variants(config: BundleConfig) -> list[str]:
    """Variants listed in config.json, in `bf.VARIANTS` order."""
    return [v for v in bf.VARIANTS if v in config.variants]


def variant_files(directory: Path, config: BundleConfig, variant: str) -> tuple[Path, Path]:
    """(encoder, decoder) paths of a variant; they and the data files they share are present and of
    their recorded sizes."""
    if variant not in config.variants:
        raise BundleError(f"{directory / bf.CONFIG_FILE}: no {variant!r} variant in this bundle "
                          f"(it has: {', '.join(available_variants(config)) or 'none'})")
    names = bf.variant_graphs(variant, config.variants[variant])
    for name in (*names, *bf.variant_data(config.variants[variant])):
        if not (directory / name).is_file():
            raise BundleError(f"{directory / name}: missing (listed as the {variant} variant in {bf.CONFIG_FILE})")
        check_size(directory, config, name)
    encoder, decoder = (directory / name for name in names)
    return encoder, decoder


def load_tokenizer(directory: Path, config: BundleConfig):
    """The bundle's SentencePiece model, checked against config.json (vocabulary size, special ids, tags)."""
    import sentencepiece as spm

    path = directory / config.tokenizer
    if not path.is_file():
        raise BundleError(f"{path}: missing (the bundle's SentencePiece tokenizer)")
    check_size(directory, config, config.tokenizer)
    sp = spm.SentencePieceProcessor()
    try:
        sp.Load(str(path))
    except (OSError, RuntimeError, MemoryError) as e:
        if is_out_of_memory(e):
            raise OutOfMemory(f"{path}: out of memory loading it") from None
        raise BundleError(f"{path}: not a SentencePiece model ({e})") from None
    if (pieces := sp.get_piece_size()) != config.vocab_size:
        if vocab_size_edited(directory, config):
            raise BundleError(f"{directory / bf.CONFIG_FILE}: model.vocab_size is {config.vocab_size}, but "
                              f"{config.tokenizer}, unchanged since the export (its recorded sha256), has {pieces} "
                              f"pieces, as the graphs' vocabulary; set vocab_size back to {pieces}")
        raise BundleError(f"{path}: {pieces} pieces, but {bf.CONFIG_FILE} says vocab_size "
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


def vocab_size_edited(directory: Path, config: BundleConfig) -> bool:
    """Whether config.json's vocab_size, not the tokenizer, is what changed since the export: the tokenizer
    is the one whose sha256 config.json records, and mt-export wrote it with graphs of its size."""
    recorded = config.files.get(config.tokenizer, {}).get("sha256")
    return recorded is not None and file_sha256(directory / config.tokenizer) == recorded


def lexicon_file(directory: Path, config: BundleConfig) -> Path | None:
    """The bundle's word counts file, present and of its recorded size; None if the bundle has none."""
    if not config.lexicon:
        return None
    path = directory / config.lexicon
    if not path.is_file():
        raise BundleError(f"{path}: missing (listed as the lexicon in {bf.CONFIG_FILE})")
    check_size(directory, config, config.lexicon)
    return path


def read_lexicon(path: Path, config: BundleConfig):
    """A bundle's `lexicon.Lexicon`, checked against config.json's languages."""
    from .lexicon import Lexicon

    try:
        lexicon = Lexicon.load(path)
    except ValueError as e:
        raise BundleError(f"{path}: not a lexicon ({e})") from None
    except OSError as e:        # read on first use: the bundle may have gone since it was loaded
        raise BundleError(f"{path}: cannot read the bundle's lexicon ({e.strerror or e})") from None
    if unknown := set(lexicon.languages) - set(config.language_tags):
        raise BundleError(f"{path}: counts for {', '.join(sorted(unknown))}, which this model has no tag for")
    return lexicon
