"""Line-oriented text I/O, the one reader of text files (the CLIs, and training through
train/data.py): strict UTF-8 with line numbers in errors, a BOM dropped, gzip by suffix (read
and written), and output files that appear only once complete; a write into one that fails (a full
disk) is one line naming it. gzip loads when used: `mt-translate TEXT` does not
need it, and its start-up counts (tempfile comes with SentencePiece)."""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO


class InputError(Exception):
    """Unreadable input or an output that cannot be written; the message names the file (and line)."""


def write_failed(name: str | Path, error: OSError) -> InputError:
    """The error for an output that cannot be written: "out.en: cannot write (No space left on device)"."""
    return InputError(f"{name}: cannot write ({error.strerror or error})")


def guarded(name: str | Path, write, *args):
    """`write(*args)`, a write or a flush into the output `name`: its OSError (a full disk) raised as
    `write_failed`'s InputError, one line instead of a traceback. A closed pipe (`| head`) stays a
    BrokenPipeError, which the commands end on quietly (cli_support.Command)."""
    try:
        return write(*args)
    except BrokenPipeError:
        raise
    except OSError as e:
        raise write_failed(name, e) from None


class OutputFile(io.FileIO):
    """A file opened for writing whose failed writes are `guarded`, naming it as `name` (the output the
    user gave, not a temporary file). At the bottom of the buffers, so that the last bytes flushed as
    the file closes are guarded too."""

    def __init__(self, file: int | str | Path, name: str | Path):
        super().__init__(file, "wb")
        self.shown = name

    def write(self, data) -> int:
        return guarded(self.shown, super().write, data)


def open_output(file: int | str | Path, name: str | Path) -> io.BufferedWriter:
    """`file` (a path or a descriptor) written through an `OutputFile` named `name`."""
    return io.BufferedWriter(OutputFile(file, name))


def invalid_utf8(where: str, raw: bytes, error: UnicodeDecodeError, advice: str) -> InputError:
    """The error for bytes that are not UTF-8, worded alike for a file's line and an argument."""
    return InputError(f"{where}: invalid UTF-8 (byte 0x{raw[error.start]:02x} at column {error.start + 1}); {advice}")


def not_text(first_line: bytes) -> str | None:
    """What a file that is no text at all is, told by its first bytes, and what to do with it."""
    from .office import OLE, ZIP
    if first_line.startswith(ZIP):
        return "it is a zip file: --docx, --pptx, --xlsx, --odf and --epub translate Office files and books"
    if first_line.startswith(OLE):
        return "it is an old Office file (.doc, .ppt, .xls): save it as .docx, .pptx or .xlsx (--docx, ...)"
    return None


def decode_lines(stream: Iterable[bytes], name: str, endings=None,
                 keep_bom: bool = False) -> Iterator[str]:
    """Lines of a binary stream as text, without their line ending ("\\n" or "\\r\\n"), which is
    appended to `endings` (a list or a deque) if given ("" for a last line without one). A UTF-8 byte-order mark is
    dropped, unless `keep_bom` (a whole document, which gets it back)."""
    for number, raw in enumerate(stream, start=1):
        # A zip's first line can be valid UTF-8 (its header's bytes vary with the time it was made).
        if number == 1 and (what := not_text(raw)):
            raise InputError(f"{name}: not a text file; {what}")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise invalid_utf8(f"{name}, line {number}", raw, e, "convert the file to UTF-8 first") from None
        ending = "\r\n" if line.endswith("\r\n") else "\n" if line.endswith("\n") else ""
        line = line[:len(line) - len(ending)]
        if endings is not None:
            endings.append(ending)
        if number == 1 and line.startswith("\ufeff") and not keep_bom:       # a UTF-8 byte-order mark
            line = line[1:]
        yield line


class ArrivingLines:
    """The lines of a file descriptor (stdin) as they arrive, each with its "\\n", and `ready()`: whether
    the next one has arrived. A pipe's reader can then translate the lines it has instead of waiting for
    a whole batch: a program that writes a line and waits for its translation would wait forever.
    Its own buffer, as a BufferedReader's cannot be looked into without waiting."""

    def __init__(self, fd: int):
        self.fd, self.pending, self.searched, self.ended = fd, bytearray(), 0, False

    def _line_end(self) -> int:
        """The index of the first "\\n" in what has arrived, or -1 (searching only the new bytes)."""
        end = self.pending.find(b"\n", self.searched)
        self.searched = len(self.pending) if end < 0 else 0
        return end

    def _read(self) -> None:
        chunk = os.read(self.fd, 1 << 16)       # what has arrived, up to 64 KiB; waits only for none
        self.ended = not chunk
        self.pending += chunk

    def __iter__(self) -> ArrivingLines:
        return self

    def __next__(self) -> bytes:
        while (end := self._line_end()) < 0 and not self.ended:
            self._read()
        if end < 0:                             # the end of the input: a last line without "\n", or none
            if not self.pending:
                raise StopIteration
            end = len(self.pending) - 1
        line = bytes(self.pending[:end + 1])
        del self.pending[:end + 1]
        return line

    def ready(self) -> bool:
        """Whether the next line, or the end of the input, has arrived: reading it will not wait."""
        import select
        while self._line_end() < 0 and not self.ended:
            if not select.select([self.fd], [], [], 0)[0]:
                return False
            self._read()
        return True


def check_argument(text: str, name: str) -> None:
    """Fail for a command-line argument that is not UTF-8, as for a file's line. Python keeps such argv
    bytes as lone surrogates (surrogateescape), which would otherwise be translated as U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogateescape")        # the bytes as given
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise invalid_utf8(name, raw, e, "pass UTF-8 text (check the terminal's encoding and the locale)") from None


def is_gzip(path: Path) -> bool:
    return path.suffix == ".gz"


def open_binary(path: str | Path) -> BinaryIO:
    path = Path(path)
    try:
        if is_gzip(path):
            import gzip
            return gzip.open(path, "rb")
        return open(path, "rb")
    except OSError as e:
        raise InputError(f"{path}: cannot open ({e.strerror or e})") from None


def read_lines(path: str | Path, endings: list[str] | None = None, keep_bom: bool = False) -> list[str]:
    """All lines of a UTF-8 text file (gzip if it ends in .gz); their endings go to `endings` if given."""
    return list(iter_lines(path, endings, keep_bom))


def iter_lines(path: str | Path, endings=None, keep_bom: bool = False) -> Iterator[str]:
    """`read_lines` one line at a time, none kept: a big file is read in the memory of a line."""
    with open_binary(path) as f:
        try:
            yield from decode_lines(f, str(path), endings, keep_bom)
        except (OSError, EOFError) as e:   # e.g. a truncated or non-gzip .gz
            raise InputError(f"{path}: cannot read ({e})") from None


def check_output(path: str | Path) -> None:
    """Fail now, before any work, where `atomic_output(path)` could not write: a directory, or a new
    file in a directory that is missing or not writable."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a directory")
    if written_in_place(path):
        if not os.access(path, os.W_OK):
            raise InputError(f"{path}: cannot write (permission denied)")
        return
    parent = Path(os.path.realpath(path)).parent           # a symlink's target is what gets replaced
    if not parent.is_dir():
        raise InputError(f"{path}: cannot write ({parent}: no such directory)")
    if why := write_refused(parent):
        raise InputError(f"{path}: cannot write ({parent}: {why})")


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether `a` and `b` are one existing file, by whatever paths (./X, a symlink, a hard link)."""
    try:
        return os.path.samefile(a, b)
    except OSError:                     # one of them does not exist (yet)
        return False


def refuse_inputs(output: str | Path, inputs: list[tuple[str, str | Path | None]]) -> None:
    """Refuse an output that is one of the (flag, path) inputs, by whatever path: writing it would
    replace what is being read. The commands that write files call it before any work."""
    for flag, path in inputs:
        if path and path != "-" and same_file(path, output):
            raise InputError(f"{output}: is the file given to {flag} ({path}); write the output to another file")


def blocking_file(path: str | Path) -> Path | None:
    """The file that stops `path` being made with its missing parents: its nearest existing ancestor,
    when that is not a directory."""
    for parent in Path(path).parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def cannot_write(path: Path) -> str | None:
    """Why `path` (a file or a directory, made with its missing parents) could not be written, or None."""
    if (blocker := blocking_file(path)) is not None:
        return f"{blocker}: not a directory"
    folder = next(p for p in Path(path).absolute().parents if p.exists())
    if why := write_refused(folder):
        return f"{path}: cannot write in {folder} ({why})"
    return None


def write_refused(folder: Path) -> str | None:
    """Why nothing new can be made in `folder` (lower case, "permission denied"), or None. Found by
    making and removing a directory there: permission bits do not tell for root, nor for /proc or /sys."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".mt-write-check-", dir=folder))
    except OSError as e:
        return (e.strerror or str(e)).lower()
    return None


def written_in_place(path: Path) -> bool:
    """Whether `path` is something that exists but is not a regular file or a directory (a FIFO, a
    device such as /dev/stdout): written into as it is, there being no file to replace."""
    return path.exists() and not path.is_file() and not path.is_dir()


def text_writer(raw: BinaryIO, path: Path) -> io.TextIOWrapper:
    """UTF-8 text with "\\n" line ends onto `raw`, gzip-compressed if `path` ends in .gz."""
    if is_gzip(path):
        import gzip
        raw = gzip.GzipFile(filename=path.name, mode="wb", fileobj=raw)    # closing it leaves `raw` open
    return io.TextIOWrapper(raw, encoding="utf-8", newline="\n")


@contextlib.contextmanager
def atomic_output(path: str | Path, binary: bool = False):
    """A text file (gzip if it ends in .gz), or with `binary` a stream of bytes, written under a temporary
    name beside it and renamed to `path` only on success. A symlink is followed: its target is replaced,
    the link stays. A FIFO or a device (/dev/stdout) is written into directly."""
    path = Path(path)
    check_output(path)
    if written_in_place(path):
        try:
            raw = open_output(path, path)
        except OSError as e:
            raise write_failed(path, e) from None
        with raw, (contextlib.nullcontext(raw) if binary else text_writer(raw, path)) as f:
            yield f
        return

    import tempfile

    target = Path(os.path.realpath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    except OSError as e:
        raise write_failed(path, e) from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)        # mkstemp makes it private; give it a normal file's mode
        with open_output(fd, path) as raw, (contextlib.nullcontext(raw) if binary else text_writer(raw, path)) as f:
            yield f
        try:
            os.replace(tmp, target)
        except OSError as e:                 # e.g. a directory made there meanwhile
            raise write_failed(path, e) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
