"""Line-oriented text I/O, the one reader of text files (the CLIs, and training through
train/data.py): strict UTF-8 with line numbers in errors, a BOM dropped, gzip by suffix,
and output files that appear only once complete. gzip and tempfile load when used: `mt-translate
TEXT` needs neither, and its start-up counts."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO


class InputError(Exception):
    """Unreadable input; the message names the file and line."""


def decode_lines(stream: Iterable[bytes], name: str) -> Iterator[str]:
    """Lines of a binary stream as text, without their line ending ("\\n" or "\\r\\n")."""
    for number, raw in enumerate(stream, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(f"{name}, line {number}: invalid UTF-8 (byte 0x{raw[e.start]:02x} at column "
                             f"{e.start + 1}); convert the file to UTF-8 first") from None
        if line.endswith("\n"):
            line = line[:-2] if line.endswith("\r\n") else line[:-1]
        if number == 1 and line.startswith("\ufeff"):       # a UTF-8 byte-order mark
            line = line[1:]
        yield line


def open_binary(path: str | Path) -> BinaryIO:
    path = Path(path)
    try:
        if path.suffix == ".gz":
            import gzip
            return gzip.open(path, "rb")
        return open(path, "rb")
    except OSError as e:
        raise InputError(f"{path}: cannot open ({e.strerror or e})") from None


def read_lines(path: str | Path) -> list[str]:
    """All lines of a UTF-8 text file (gzip if it ends in .gz)."""
    with open_binary(path) as f:
        try:
            return list(decode_lines(f, str(path)))
        except (OSError, EOFError) as e:   # e.g. a truncated or non-gzip .gz
            raise InputError(f"{path}: cannot read ({e})") from None


@contextlib.contextmanager
def atomic_output(path: str | Path):
    """A text file that is written under a temporary name and renamed to `path` only on success."""
    import tempfile

    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent if str(path.parent) else ".")
    except OSError as e:
        raise InputError(f"{path}: cannot write ({e.strerror or e})") from None
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)            # mkstemp makes it private; give it a normal file's mode
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
