"""Installing and removing models in the user's models directory (`model_store.models_dir`).

An install is atomic: the bundle is downloaded and unpacked (or copied) into a hidden temporary
directory inside the models directory, every file is checked against the sha256 and size that
config.json records, and only then is it renamed to its name. Any failure or interruption removes
the temporary directory, so a model is either fully installed and verified or not there at all.
"""

from __future__ import annotations

import errno
import http.client
import os
import shutil
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from . import bundle, checksums, model_store
from . import bundle_format as bf
from .bundle_format import BundleError
from .durable import flush_to_disk

CHUNK = 1 << 16
TIMEOUT_S = 60            # per network operation; a stalled server fails instead of hanging
LEFTOVER_S = 3600         # a hidden install or removal directory untouched this long was killed


class InstallError(BundleError):
    """A model that cannot be installed or removed; the message says why (naming the file at fault)."""


def is_url(source: str) -> bool:
    return urllib.parse.urlsplit(source).scheme in ("http", "https")


def default_name(source: str) -> str:
    """The name a model gets without --name: its directory's or archive's name, without the suffix."""
    if is_url(source):
        return bundle.archive_stem(Path(urllib.parse.unquote(urllib.parse.urlsplit(source).path)).name)
    return bundle.archive_stem(Path(os.path.abspath(source)).name)    # abspath: "." and ".." have names


def install(source: str, name: str | None = None, force: bool = False,
            show_progress: Callable[[int | None], Callable[[int], None]] | None = None
            ) -> tuple[Path, checksums.Verification]:
    """Install the bundle at `source` (a bundle directory, a .tar.gz / .zip archive, or an http(s) URL of
    one) as `name`; return its directory and what was verified. `show_progress(total_bytes)` gives a
    callback that a download calls with each chunk's size."""
    if not source:          # an unset variable in a script: Path("") would be the current directory
        raise InstallError("no model to install: give a bundle directory, a .tar.gz / .zip archive or an http(s) URL")
    name = default_name(source) if name is None else name       # "" is not a name, and says so below
    if not model_store.is_model_name(name):
        raise InstallError(f"{name!r} is not a valid model name (letters, digits, '.', '_', '-'); pass --name")
    root = model_store.models_dir()
    target = root / name
    if target.exists() and not force:
        raise InstallError(already_installed(name, target))
    if not is_url(source) and not Path(source).exists():
        if "://" in source:     # a URL, but not one `download` can fetch (ftp://, file://)
            scheme = urllib.parse.urlsplit(source).scheme
            raise InstallError(f"{source}: unsupported URL scheme {scheme!r} (use http or https, or a local path)")
        raise InstallError(f"{source}: no such file or directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".install-{name}-", dir=root))
    except OSError as e:        # read-only, not a directory, not ours
        # mkdir's reason for a regular file at `root` itself is "File exists": what is wrong is its kind
        why = os.strerror(errno.ENOTDIR) if isinstance(e, FileExistsError) else e.strerror or e
        raise InstallError(f"{root}: cannot write to the models directory ({why}); "
                           "set MT_MODELS_DIR to a writable one") from None
    remove_leftovers(root)
    try:
        found = fetch(source, staging, show_progress)
        try:
            config = bf.BundleConfig.load(found)
        except BundleError as e:    # it names the staging copy, gone by the time the user reads it
            raise InstallError(f"{source}: {str(e).removeprefix(f'{found}{os.sep}')}; nothing was installed") from None
        verification = checksums.verify(found, config)
        if verification.problems:       # none when nothing is recorded: such a bundle installs unverified
            raise InstallError(f"{source}: {'; '.join(verification.problems)}; nothing was installed")
        flush_to_disk(found)
        # Checked again: another install of this name may have finished while this one worked.
        if target.exists() and not force:
            raise InstallError(f"{already_installed(name, target)}; nothing was installed")
        try:
            if target.exists():     # --force: the old model moves out whole, the new one in whole
                os.replace(target, staging / "replaced")
            os.replace(found, target)
        except OSError as e:        # e.g. the same name installed meanwhile by another process
            raise InstallError(f"{name}: cannot move the verified model into {target} ({e}); "
                               "nothing was installed") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    verification.directory = target
    return target, verification


def already_installed(name: str, target: Path) -> str:
    return f"{name}: already installed in {target} (pass --force to replace it)"


def fetch(source: str, staging: Path, show_progress) -> Path:
    """Bring the bundle at `source` into `staging` and return its directory there."""
    if is_url(source):
        archive = staging / "download"
        download(source, archive, show_progress)
        return unpack(archive, staging, source)
    path = Path(source)
    if path.is_dir():
        bundle.check_bundle_dir(path)
        return copy_bundle(path, staging / "bundle", source)
    bundle.check_mistaken_file(path)
    return unpack(path, staging, source)


def copy_bundle(path: Path, copy: Path, source: str) -> Path:
    """Copy the bundle directory `path` (the one `source` names) to `copy`, hidden files left out. The
    first failure (a full disk) ends it, in one line worded as `unpack`'s: copytree itself would go on
    and then raise the list of every file's error."""
    def cannot_copy(e: OSError) -> InstallError:
        return InstallError(f"{source}: cannot copy into {copy.parent.parent} ({e.strerror or e})")   # the models dir

    def copy_file(src, dst):
        try:
            return shutil.copy2(src, dst)
        except OSError as e:
            raise cannot_copy(e) from None      # not an OSError: copytree lets it through at once

    try:
        shutil.copytree(path, copy, ignore=shutil.ignore_patterns(".*"), copy_function=copy_file)
    except OSError as e:                        # a folder that cannot be made
        raise cannot_copy(e) from None
    return copy


def unpack(archive: Path, staging: Path, source: str) -> Path:
    """Unpack `archive` (the file `source` names, or its download) into `staging`. Errors name `source`:
    a download's temporary file is gone by the time the user reads them."""
    unpacked = staging / "unpacked"
    unpacked.mkdir()
    try:
        bundle.extract_archive(archive, unpacked, shown_as=staging.parent)     # the models dir
    except bundle.ArchiveError as e:
        why = f"download incomplete or not an archive ({e.reason})" if is_url(source) else f"cannot unpack: {e.reason}"
        raise InstallError(f"{source}: {why}") from None
    except BundleError as e:                   # an unsafe path, or the disk
        raise InstallError(f"{source}: {str(e).removeprefix(f'{archive}: ')}") from None
    return bundle.find_bundle(unpacked, source)


def download(url: str, dest: Path, show_progress=None) -> None:
    """Stream `url` into `dest`; an error if it fails or ends before its Content-Length."""
    from mtkit import __version__

    request = urllib.request.Request(url, headers={"User-Agent": f"mtkit/{__version__}"})
    received, total = 0, None
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response, open(dest, "wb") as out:
            total = int(response.headers.get("Content-Length") or 0) or None
            advance = show_progress(total) if show_progress else None
            while chunk := response.read(CHUNK):
                try:
                    out.write(chunk)
                    out.flush()             # a full disk fails here, not at close()
                except OSError as e:        # the disk, not the network
                    discard(out)            # else closing it fails again, read below as the network's error
                    raise InstallError(f"{url}: cannot download into {dest.parent.parent} "   # the models dir
                                       f"({e.strerror or e})") from None
                received += len(chunk)
                if advance:
                    advance(len(chunk))
    except urllib.error.HTTPError as e:
        raise InstallError(f"{url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, http.client.HTTPException, OSError) as e:   # OSError: timeouts, resets
        reason = getattr(e, "reason", None) or e
        raise InstallError(f"{url}: download failed ({type(e).__name__}: {reason})") from None
    if total is not None and received != total:
        raise InstallError(f"{url}: download incomplete ({received} of {total} bytes); nothing was installed")


def discard(file) -> None:
    """Close `file`, dropping what it could not write."""
    try:
        file.close()
    except OSError:
        pass


def remove(name: str) -> Path:
    """Remove the installed model `name` (never a shipped one); returns where it was."""
    target = model_store.installed_models().get(name)
    if target is None:
        shipped = bundle.shipped_models().get(name)
        if shipped is not None:
            raise InstallError(f"{name}: shipped with mtkit in {shipped}, not installed; "
                               "mt-models remove only removes installed models")
        raise InstallError(f"{name}: no such installed model in {model_store.models_dir()} "
                           "(mt-models list shows the models)")
    remove_leftovers(target.parent)
    # Renamed first, so the name is gone at once and a failed delete leaves only a hidden directory.
    try:
        doomed = Path(tempfile.mkdtemp(prefix=f".remove-{name}-", dir=target.parent))
        os.replace(target, doomed / name)
    except OSError as e:        # a read-only models directory
        raise InstallError(f"{name}: cannot remove {target} ({e.strerror or e})") from None
    shutil.rmtree(doomed, ignore_errors=True)
    return target


def remove_leftovers(root: Path) -> None:
    """Delete the hidden directories of installs and removals that were killed (kill -9, a reboot)
    before they could: each holds a copy of a bundle that nothing would ever list or use. One still at
    work keeps writing into its directory, so only those untouched for LEFTOVER_S go."""
    stopped_before = time.time() - LEFTOVER_S
    for path in [*root.glob(".install-*"), *root.glob(".remove-*")]:
        try:
            last_written = max(p.lstat().st_mtime for p in [path, *path.rglob("*")])
        except OSError:         # removed meanwhile by its own process
            continue
        if last_written < stopped_before:
            shutil.rmtree(path, ignore_errors=True)
