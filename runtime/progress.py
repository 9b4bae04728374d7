"""How far a long translation has got: a callback told after each batch the decoder finishes, for a
document's progress bar (`mt-translate --epub`, ...) or an application's.

    from mtkit.runtime import translation_progress
    with translation_progress(lambda done, total: print(f"{done}/{total}")):
        translator.translate_epub(book, "en")

Counted in sentences (parts of sentences, for very long ones) over every decode inside the block: a
document that translates in several calls (its text, then the sentences whose markup needs the
alignment) adds each call's count to the total when the call starts. Kept in a context variable, so
that no document function passes it along, and each thread or task has its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_report: ContextVar[Callable[[int, int], None] | None] = ContextVar("translation_progress", default=None)


@contextmanager
def translation_progress(callback: Callable[[int, int], None]) -> Iterator[None]:
    """Within the block, `callback(done, total)` each time the count of sentences decoded or to decode
    changes. It is called from the threads that decode the batches too, one call at a time: a GUI hands
    the count to its own thread. An exception it raises stops the translation and is raised by the call
    (a way to cancel one, as mt-serve does when its client has gone)."""
    check_callback(callback)
    counts = [0, 0]
    lock = threading.Lock()         # batches end on several threads

    def report(done: int, total: int) -> None:
        with lock:
            counts[0] += done
            counts[1] += total
            callback(counts[0], counts[1])

    token = _report.set(report)
    try:
        yield
    finally:
        _report.reset(token)


def check_callback(callback) -> None:
    """Refuse a callback that cannot take (done, total) when the block starts: it would fail only at the
    first batch decoded, with a TypeError from deep inside the batching code."""
    import inspect

    if not callable(callback):
        raise TypeError(f"translation_progress needs a function callback(done, total), not {callback!r}")
    try:
        signature = inspect.signature(callback)
    except (TypeError, ValueError):         # some built-ins have none to check: taken as they are
        return
    try:
        signature.bind(0, 0)
    except TypeError:
        name = getattr(callback, "__qualname__", type(callback).__name__)
        raise TypeError(f"translation_progress needs a function callback(done, total); {name}{signature} "
                        f"cannot be called as callback(done, total)") from None


def reporter() -> Callable[[int, int], None] | None:
    """The block's `report(done, total)` (more sentences decoded, more to decode), if in one: taken in
    the calling thread, since the threads that decode batches do not see the context variable."""
    return _report.get()
