"""Decoded sentences kept on disk, so that a long document interrupted (Ctrl-C, a crash, a closed
laptop) goes on where it stopped: `mt-translate --epub -i book.epub -o out.epub` keeps each sentence's
result in `.out.epub.partial.cache` (SQLite) as it is decoded, the same command reads them back
instead of decoding them again, and a run that finishes deletes the file.

A result is kept by everything that decides it: the model's files and graphs, the decoding options,
the sentence's tokens and its prefix, so a cache made with other options or another model is never
read (its entries just go unused). Sampling without a seed is never cached: each draw is its own.

    with translator.decode_cache(path):
        translator.translate_epub(book, "en")
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict
from pathlib import Path

from .errors import TranslationError
from .search import Hypothesis, Result

_active: ContextVar[DecodeCache | None] = ContextVar("decode_cache", default=None)


class DecodeCache:
    """A SQLite file of results by key; `namespace` (the model's identity) starts every key."""

    def __init__(self, path: str | Path, namespace: str):
        import sqlite3  # only here: the start-up of plain translation stays as quick

        self.path, self.namespace = Path(path), namespace
        self.lock = threading.Lock()         # batches are kept from the threads that decode them
        self.closed = False
        self.damaged: str | None = None      # why an earlier run's cache was unreadable, and started afresh
        self.connection = None
        try:
            self.open()
        except sqlite3.DatabaseError as e:
            if not made_by_sqlite(self.path):       # a stray file of that name is not ours to delete
                raise self.failed(e) from None
            # An earlier run's cache, damaged (cut short, a bad disk): it only saves decoding, so its
            # sentences are decoded again rather than the run refused.
            self.damaged = str(e)
            for damaged in (self.path, self.path.with_name(self.path.name + "-journal")):
                damaged.unlink(missing_ok=True)
            self.open()

    def open(self) -> None:
        """Connect, with the table made and the file checked (a damaged one fails here, not mid-run)."""
        import sqlite3

        existed = self.path.exists()
        try:
            self.connection = sqlite3.connect(self.path, check_same_thread=False)
            with self.connection:
                self.connection.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, result TEXT)")
            if self.connection.execute("PRAGMA quick_check(1)").fetchone()[0] != "ok":   # its details: lines of pages
                raise sqlite3.DatabaseError("database disk image is malformed")
        except sqlite3.Error as e:              # not a cache file (a stray file of that name), or unwritable
            if self.connection is not None:
                self.connection.close()
            if not existed:                     # SQLite made it before failing (a full disk): none is left
                self.path.unlink(missing_ok=True)
            if existed and damage(e):
                raise                           # the caller tells a damaged cache from a stray file
            raise self.failed(e) from None

    def failed(self, error: Exception) -> TranslationError:
        return TranslationError(f"{self.path}: cannot keep decoded sentences there ({error})")

    def __len__(self) -> int:
        import sqlite3
        try:
            return self.connection.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        except sqlite3.Error as e:
            raise self.failed(e) from None

    def key(self, source: list[int], prefix, opts) -> str:
        return json.dumps([self.namespace, repr(opts), list(source), repr(prefix)])

    def lookup(self, sources: list[list[int]], prefixes: list, opts) -> dict[int, Result]:
        """The results kept for these sources, by their index."""
        import sqlite3
        keys = [self.key(s, p, opts) for s, p in zip(sources, prefixes)]
        found: dict[str, Result] = {}
        for start in range(0, len(keys), 500):              # SQLite's limit on one query's parameters
            chunk = keys[start:start + 500]
            query = f"SELECT key, result FROM results WHERE key IN ({','.join('?' * len(chunk))})"
            try:
                found.update((key, _result(text)) for key, text in self.connection.execute(query, chunk))
            except sqlite3.Error as e:
                raise self.failed(e) from None
        return {i: found[key] for i, key in enumerate(keys) if key in found}

    def keep(self, sources: list[list[int]], prefixes: list, opts, results: list[Result]) -> None:
        """These sources' results, written at once (a batch: what an interruption may cost)."""
        import sqlite3
        rows = [(self.key(s, p, opts), json.dumps(asdict(r))) for s, p, r in zip(sources, prefixes, results)]
        with self.lock:
            if self.closed:             # the run was stopped while this batch decoded on another thread
                return
            try:
                with self.connection:
                    self.connection.executemany("INSERT OR REPLACE INTO results VALUES (?, ?)", rows)
            except sqlite3.Error as e:          # a full disk
                raise self.failed(e) from None

    def close(self) -> None:
        """Closed; deleted if it holds nothing (a run that failed at once leaves no file behind). Under
        the lock: SQLite closed under a batch thread's write crashed the process (a segfault)."""
        with self.lock:
            try:
                empty = not len(self)
            except TranslationError:            # unreadable now: left for the next run to judge
                empty = False
            self.connection.close()
            self.closed = True
        if empty:
            self.path.unlink(missing_ok=True)


def damage(error: Exception) -> bool:
    """Whether SQLite's `error` says a file is no sound database (not: unwritable, locked, a full disk)."""
    import sqlite3
    return isinstance(error, sqlite3.DatabaseError) and not isinstance(error, sqlite3.OperationalError)


def made_by_sqlite(path: Path) -> bool:
    """Whether the file at `path` starts as every SQLite database does (damaged or not)."""
    try:
        with open(path, "rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _result(text: str) -> Result:
    return Result([Hypothesis(**h) for h in json.loads(text)["hypotheses"]])


def beside(output: str | Path) -> Path:
    """Where the sentences of a document being written to `output` are kept: `.NAME.partial.cache` beside it."""
    output = Path(output)
    return output.with_name(f".{output.name}.partial.cache")


@contextmanager
def keeping(cache: DecodeCache) -> Iterator[DecodeCache]:
    """Within the block, every decode reads and writes `cache`."""
    token = _active.set(cache)
    try:
        yield cache
    finally:
        _active.reset(token)


def active(opts) -> DecodeCache | None:
    """The cache of the block we are in, if any, and if results of `opts` may be kept."""
    return None if opts.sampling and opts.seed is None else _active.get()
