"""An output file that a long job can be stopped and resumed on (`mt-translate -i FILE -o FILE`).

As with `text_io.atomic_output`, the file appears under its name only once complete. Until then the
lines are written to `.NAME.partial` beside it, and a description of the job (its input, model and
options) to `.NAME.partial.json`. When the job is interrupted (Ctrl-C, SIGTERM, an error), both stay,
and the same job started again keeps the lines done and goes on after them: an hour of translation is
not lost to a Ctrl-C. Another job writing to the same name starts afresh. Only whole lines count, so
even a job killed outright (SIGKILL, a power cut) resumes from its last flushed line. While a run
writes, it holds a lock on the job's description (POSIX `flock`), so that a second run on the same
file stops at once instead of writing into the first one's lines (Windows has no such lock here).
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from pathlib import Path

from .text_io import (InputError, atomic_output, check_output, is_gzip, open_output, text_writer, write_failed,
                      written_in_place)


class ResumableOutput:
    """Where the lines go: `write` and `flush` as a text file's. `done`: lines kept from an earlier run
    of the same job (the caller skips that many input lines), `kept` those lines (each with its "\n",
    for a caller that needs them again: mt-eval scores them); `lines`: all written, those included, and
    once a run has failed, those the partial file really holds (a full disk takes fewer than were
    written); `dropped`: whether an earlier run of another job (another input, model or options) had
    left lines, which this one starts over from nothing."""

    def __init__(self, file, done: int, partial: Path | None, dropped: bool = False):
        self.file, self.done, self.lines, self.partial, self.dropped = file, done, done, partial, dropped
        self.kept: list[str] = []

    def write(self, text: str) -> None:
        self.file.write(text)
        self.lines += text.count("\n")

    def flush(self) -> None:
        self.file.flush()


def on_disk(path: str | Path) -> list:
    """A file as it is on disk, for a job's description: its real path, size and modification time."""
    stat = os.stat(path)
    return [os.path.realpath(path), stat.st_size, stat.st_mtime_ns]


def model_identity(path: str | Path) -> str | list:
    """A model, for a job's description: a bundle directory by its config.json's sha256 (which records
    each file's), a checkpoint file as it is on disk."""
    import hashlib

    from .bundle_format import CONFIG_FILE

    path = Path(path)
    return on_disk(path) if path.is_file() else hashlib.sha256((path / CONFIG_FILE).read_bytes()).hexdigest()


def partial_paths(path: Path) -> tuple[Path, Path]:
    """The lines done so far and the job they belong to, beside the file `path` resolves to."""
    target = Path(os.path.realpath(path))
    return target.with_name(f".{target.name}.partial"), target.with_name(f".{target.name}.partial.json")


def kept_lines(partial: Path, earlier: str, job: dict, gz: bool) -> list[str]:
    """The whole lines an earlier run of `job` (`earlier`: the description it left) left in `partial`
    (gzip-compressed if `gz`): none if it was another job's, or unreadable."""
    try:
        if json.loads(earlier) != job:
            return []
    except ValueError:
        return []
    return whole_lines(partial, gz)


def whole_lines(partial: Path, gz: bool) -> list[str]:
    """The whole lines in `partial` (gzip-compressed if `gz`), each with its "\n": a line cut off
    mid-write is done again; none if it is unreadable."""
    try:
        data = read_partial(partial, gz)
    except OSError:
        return []
    text = data[:data.rfind(b"\n") + 1].decode("utf-8", "replace")
    # Split at "\n" only: splitlines() would also split at a "\x85" or a "\u2028" inside a line.
    return [line + "\n" for line in text.split("\n")[:-1]]


def other_job(earlier: str, job: dict) -> bool:
    """Whether `earlier`, the description a run left, is of another job than `job` (or unreadable)."""
    try:
        return bool(earlier) and json.loads(earlier) != job
    except ValueError:
        return True


def read_partial(partial: Path, gz: bool) -> bytes:
    """The bytes of `partial`, decompressed if `gz` (member after member), as far as they go if cut off."""
    data = partial.read_bytes()
    if not gz:
        return data
    out = []
    while data:
        member = zlib.decompressobj(wbits=31)           # gzip framing
        try:
            out.append(member.decompress(data))
        except zlib.error:
            break
        if not member.eof:
            break
        data = member.unused_data
    return b"".join(out)


@contextlib.contextmanager
def resumable_output(path: str | Path, job: dict):
    """Yield a `ResumableOutput` for the text file `path` (gzip if it ends in .gz), holding the lines an
    interrupted run of the same `job` (a JSON-able dict) left. On success the file takes its name; on
    any failure the lines written so far stay for the next run, unless there are none. A FIFO or a
    device is written into directly, with nothing to resume."""
    path = Path(path)
    check_output(path)
    if written_in_place(path):
        with atomic_output(path) as f:
            yield ResumableOutput(f, 0, None)
        return
    partial, record = partial_paths(path)
    try:
        description = open(record, "a+", encoding="utf-8")     # held, and locked, until the end
    except OSError as e:
        raise write_failed(path, e) from None
    done = False                # the job is over: its description goes, once closed (Windows deletes no open file)

    def forget() -> None:
        if done:
            with contextlib.suppress(OSError):
                record.unlink()

    with contextlib.ExitStack() as after:
        after.callback(forget)
        after.enter_context(description)
        if not locked(description):
            raise InputError(f"{path}: another run is writing it (its lines go to {partial}); wait for it to end")
        description.seek(0)
        earlier = description.read()
        kept = kept_lines(partial, earlier, job, is_gzip(path))
        dropped = not kept and other_job(earlier, job) and partial.is_file() and partial.stat().st_size > 0
        try:
            raw = open_output(partial, path)    # the kept lines are written again: a clean file to go on in
            description.seek(0)
            description.truncate()
            description.write(json.dumps(job, sort_keys=True))
            description.flush()
        except OSError as e:
            raise write_failed(path, e) from None
        out = ResumableOutput(None, len(kept), partial, dropped)
        out.kept = kept
        try:
            with raw, text_writer(raw, path) as f:
                f.writelines(kept)
                out.file = f
                yield out
            try:
                os.replace(partial, os.path.realpath(path))
            except OSError as e:
                raise write_failed(path, e) from None
            done = True
        except BaseException:
            out.lines = len(whole_lines(partial, is_gzip(path)))    # the file closed: what it really keeps
            if out.lines == 0:                  # nothing to go on from
                with contextlib.suppress(OSError):
                    partial.unlink()
                done = True
            raise


def locked(file) -> bool:
    """Whether this process now holds the only lock on `file` (POSIX flock; True where there is none)."""
    try:
        import fcntl
    except ImportError:                         # Windows
        return True
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True
