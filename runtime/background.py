"""One call on a thread of its own while the caller does something else.

What `ThreadPoolExecutor(1).submit(...)` gives the Translator's loading, without importing
concurrent.futures: that import (logging with it) is about 3 ms of a 150 ms cold start.
"""

from __future__ import annotations

import threading


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
