"""The request pipeline: models load and texts translate in thread workers, and a late answer to
an outdated request is dropped.

Typing restarts a debounce timer, so a translation starts after a pause, not at every key. Every
change that makes the shown result stale bumps `generation`; a request carries the generation it
was made for, and its result is delivered only if nothing changed meanwhile. Decodes run one at a
time (a running decode cannot be stopped), and a request that went stale while waiting for the
decoder is skipped. Loads are numbered the same way: only the newest load's outcome counts.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from textual.app import App
from textual.timer import Timer
from textual.worker import Worker, WorkerState, get_current_worker

from .state import DecodeSettings, Outcome, split_segments


@dataclass(frozen=True)
class Request:
    generation: int
    translator: object
    text: str
    direction: tuple[str, str]
    settings: DecodeSettings
    starts: dict[int, str | None] = field(default_factory=dict)   # lines' starts the user wrote (None: none)
    base: Outcome | None = None                 # a completion: the outcome whose lines (`starts`) it redoes
    glossary: object = None                     # a runtime Glossary that fits the translator's model, or None


class Requests:
    """Translation requests for `app`. `due()` is called when a translation should start (the app
    decides what to translate); `done(outcome)` and `failed(error)` receive fresh results only."""

    def __init__(self, app: App, debounce: float, due: Callable[[], None], done: Callable[[Outcome], None],
                 failed: Callable[[Exception], None]) -> None:
        self.app, self.debounce = app, debounce
        self.due, self.done, self.failed = due, done, failed
        self.generation = 0
        self._timer: Timer | None = None
        self._worker: Worker | None = None
        self._decode_lock = threading.Lock()

    @property
    def waiting(self) -> bool:
        """A translation waits on the debounce timer."""
        return self._timer is not None

    @property
    def pending(self) -> bool:
        """A translation waits on the debounce timer, or its worker has not finished."""
        return self.waiting or (self._worker is not None
                                and self._worker.state in (WorkerState.PENDING, WorkerState.RUNNING))

    def invalidate(self, delay: float | None = None, due: Callable[[], None] | None = None) -> None:
        """The shown result is stale: call `due` (default: the source's translation) after `delay`
        seconds (default: the debounce; 0: now)."""
        self.cancel()
        delay = self.debounce if delay is None else delay
        due = due or self.due
        if delay > 0:
            self._timer = self.app.set_timer(delay, partial(self._fire, due))
        else:
            due()

    def cancel(self) -> None:
        """Whatever is waiting or decoding is now stale."""
        self.generation += 1
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _fire(self, due: Callable[[], None]) -> None:
        self._timer = None
        due()

    def start(self, translator, text: str, direction: tuple[str, str], settings: DecodeSettings,
              starts: dict[int, str] | None = None, glossary=None) -> None:
        """Translate every line of `text` (with `glossary`, if given); those in `starts` begin with the
        start given (the user's)."""
        self._run(Request(self.generation, translator, text, direction, settings, starts or {}, glossary=glossary))

    def complete(self, translator, base: Outcome, starts: dict[int, str | None], settings: DecodeSettings,
                 glossary=None) -> None:
        """Translate the lines of `base` in `starts` again, each beginning with what the user wrote in it
        (None: afresh); `done` gets `base` with those lines replaced."""
        self._run(Request(self.generation, translator, base.source, base.direction, settings, starts, base,
                          glossary))

    def _run(self, request: Request) -> None:
        self._worker = self.app.run_worker(partial(self._decode, request), thread=True, exclusive=True,
                                           group="translate", exit_on_error=False)

    def _decode(self, request: Request) -> None:
        """In a worker thread: translate each line of the request on its own (or, for a completion,
        the lines it names)."""
        worker = get_current_worker()
        with self._decode_lock:
            # Exclusive workers cancel their predecessors, but a running decode cannot be
            # interrupted: skip the work entirely if it went stale while waiting for the lock.
            if worker.is_cancelled or request.generation != self.generation:
                return
            base = request.base
            segments = base.segments if base else split_segments(request.text)
            rows = list(request.starts) if base else [i for i, s in enumerate(segments) if s.strip()]
            prefix = [request.starts.get(i) for i in rows] if request.starts else None
            start = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    # An over-long sentence warns on stderr, which would scribble over the screen;
                    # the same message comes back in Translation.warnings and is shown in the UI.
                    warnings.simplefilter("ignore")
                    # The direction's source: a language the user picked, or "auto" (detected).
                    translations = request.translator.translate([segments[i] for i in rows],
                                                                to=request.direction[1],
                                                                options=request.settings.options(),
                                                                from_lang=request.direction[0], prefix=prefix,
                                                                glossary=request.glossary)
            except Exception as e:   # TranslationError, a CUDA failure, ...: shown, never a crash
                self.app.call_from_thread(self._deliver, request.generation, self.failed, e)
                return
            seconds = time.perf_counter() - start
        results = list(base.results) if base else [None] * len(segments)
        starts = dict(base.starts) if base else {}
        for i, translation in zip(rows, translations):
            results[i] = translation
            starts.pop(i, None)
            if request.starts.get(i):
                starts[i] = request.starts[i]
        outcome = Outcome(request.generation, request.text, request.direction, request.settings.describe(),
                          segments, results, seconds, starts)
        self.app.call_from_thread(self._deliver, request.generation, self.done, outcome)

    def _deliver(self, generation: int, callback: Callable, value) -> None:
        if generation == self.generation:      # else stale: the text or settings changed meanwhile
            callback(value)


class Loads:
    """Model loads for `app`: `ready(path, provider, translator)` or `failed(path, provider, error)`
    for the newest load only."""

    def __init__(self, app: App, ready: Callable, failed: Callable, threads: int | None, variant: str) -> None:
        self.app, self.ready, self.failed = app, ready, failed
        self.threads, self.variant = threads, variant
        self.loading = False
        self._load_id = 0

    def start(self, path: str | None, provider: str) -> None:
        self._load_id += 1
        self.loading = True
        self.app.run_worker(partial(self._load, self._load_id, path, provider), thread=True, exclusive=True,
                            group="load", exit_on_error=False)

    def _load(self, load_id: int, path: str | None, provider: str) -> None:
        from mtkit.runtime import Translator   # imported here so the UI is up before ONNX Runtime loads

        try:
            translator = Translator(path=path, provider=provider, threads=self.threads, variant=self.variant)
        except Exception as e:    # BundleError, ProviderError (CUDA), or anything unexpected: shown
            self.app.call_from_thread(self._deliver, load_id, self.failed, path, provider, e)
            return
        self.app.call_from_thread(self._deliver, load_id, self.ready, path, provider, translator)

    def _deliver(self, load_id: int, callback: Callable, *args) -> None:
        if load_id == self._load_id:
            self.loading = False
            callback(*args)
