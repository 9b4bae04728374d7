"""Work on other threads, with any error raised in the calling one.

What concurrent.futures would give, without importing it: that import (logging with it) is about
3 ms of a 150 ms cold start.
"""

from __future__ import annotations

import threading

# ONNX Runtime's threads at most: more than a CPU has. 100,000 hung or crashed its session creation.
MAX_THREADS = 1024


class Background:
    """`fn(*args)` started at once. As a context manager it is waited for on leaving, also when the
    caller's own work failed, so that error is the one raised and nothing is left running."""

    def __init__(self, fn, *args):
        self._value = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), name="mtkit-background")
        self._thread.start()

    def _run(self, fn, args) -> None:
        try:
            self._value = fn(*args)
        except BaseException as e:   # handed to result()
            self._error = e

    def result(self):
        """Wait for the call: its value, or its error raised here."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value

    def __enter__(self) -> "Background":
        return self

    def __exit__(self, *exc) -> None:
        self._thread.join()


def run_in_threads(run, batches: list, threads: int) -> list:
    """[run(b) for b in batches] on `threads` threads, the calling one among them: each takes the next
    batch not yet started. The caller works rather than waits, so the process has one thread fewer,
    and one glibc malloc arena fewer holding freed memory: 2 MB less peak RSS in mt-bench's probe on
    the int8 graphs, at the same speed (PERF_NOTES.md, session 25). On an error or Ctrl-C in any of
    them, batches not yet started are dropped and the first error is raised here, once the batches
    already running have ended: a helper still inside ONNX Runtime when the interpreter exits makes the
    process abort ("terminate called without an active exception", exit 134) instead of exiting 130."""
    decoded: list = [None] * len(batches)
    order = iter(range(len(batches)))
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work() -> None:
        while True:
            with lock:
                i = None if errors else next(order, None)
            if i is None:
                return
            decoded[i] = run(batches[i])

    def helper() -> None:
        try:
            work()
        except BaseException as e:
            with lock:
                errors.append(e)

    helpers = [threading.Thread(target=helper, name="mtkit-decode", daemon=True) for _ in range(threads - 1)]
    for thread in helpers:
        thread.start()
    try:
        work()
        for thread in helpers:
            thread.join()
    except BaseException as e:          # the caller's own error or Ctrl-C: the helpers stop after their batch
        with lock:
            errors.append(e)
        for thread in helpers:
            thread.join()
        raise
    if errors:
        raise errors[0]
    return decoded
