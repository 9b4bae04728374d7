"""The "translate a file" dialog (ctrl+t): a document, a book, a subtitle or a text file translated
whole into a file beside it (runtime/documents.py says which kinds), in the direction and decoding
the app uses, with a progress bar. Escape stops a translation after the batch being decoded: the
sentences decoded are kept (runtime/decode_cache.py), and translating the same file again goes on
from there. The file appears only once complete."""

from __future__ import annotations

import os
import threading
import time
import warnings
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, ProgressBar

from .state import direction_label


class Stopped(Exception):
    """Raised in the decoding thread, after a batch, when the user stopped the translation."""


@dataclass(frozen=True)
class FileJob:
    source: Path
    target: Path
    direction: tuple[str, str]          # (source language or "auto", target language)
    options: object                     # the runtime's DecodeOptions
    stop: threading.Event               # set: stop after the batch being decoded
    glossary: object = None             # the runtime Glossary the app translates with, or None


def default_target(source: Path, to: str, languages: set[str]) -> Path:
    """bericht.docx -> bericht.en.docx; bericht.de.docx -> bericht.en.docx, when "de" is a language
    of the model."""
    stem, suffix = source.stem, source.suffix
    base, _, code = stem.rpartition(".")
    return source.with_name(f"{base if base and code.lower() in languages else stem}.{to}{suffix}")


def check_job(source: Path, target: Path) -> str | None:
    """Why the file cannot be translated into `target`, if it cannot: said before any work."""
    from mtkit.runtime.documents import METHODS, suffix
    from mtkit.runtime.text_io import InputError, check_output, same_file

    if source.is_dir():
        return f"{source}: is a directory; name a file in it"
    if not source.is_file():
        return f"{source}: no such file"
    if suffix(source.name) not in METHODS:
        return f"{source.name}: files of type {suffix(source.name) or '(no extension)'} are not translated; " \
               f"these are: {', '.join(METHODS)}"
    if suffix(target.name) != suffix(source.name):
        return f"{target.name}: the translation is a {suffix(source.name)} file, as its source: name it so"
    if target.exists() and same_file(source, target):
        return f"{target}: that is the file to translate; save the translation under another name"
    try:
        check_output(target)
    except InputError as e:
        return str(e)
    return None


class TranslateFileScreen(ModalScreen[None]):
    """Asks for a file and where its translation goes, and translates it there."""

    BINDINGS = [Binding("escape", "close", "Close")]

    def __init__(self, translator, direction: tuple[str, str], options, languages: set[str], glossary=None) -> None:
        super().__init__()
        self.translator, self.direction, self.options, self.glossary = translator, direction, options, glossary
        self.languages = languages
        self.job: FileJob | None = None         # the translation running, if one is
        self.replacing: Path | None = None      # an existing file the user agreed to replace (enter twice)

    def compose(self) -> ComposeResult:
        with Vertical(id="file-dialog"):
            glossary = ", with the glossary" if self.glossary else ""
            yield Label(f"Translate a file, {direction_label(self.direction)}{glossary}: a document, a PDF, a book, "
                        f"subtitles, or text line by line.")
            yield Input(placeholder="path/to/file.docx", id="file-source")
            yield Input(placeholder="where its translation goes", id="file-target")
            yield ProgressBar(id="file-progress", show_eta=False)
            yield Label("", id="file-status", markup=False)
            yield Label("enter: translate    escape: close (during a translation: stop it, keeping what is done)",
                        classes="hint")

    @on(Input.Submitted, "#file-source")
    def source_given(self, event: Input.Submitted) -> None:
        target = self.query_one("#file-target", Input)
        if event.value.strip():
            target.value = str(default_target(Path(event.value.strip()), self.direction[1], self.languages))
        target.focus()

    @on(Input.Submitted, "#file-target")
    def start(self) -> None:
        if self.job is not None:
            return
        given = [self.query_one(f"#file-{name}", Input).value.strip() for name in ("source", "target")]
        if not all(given):          # Path("") is ".", which no message would make sense of
            self.report("Name the file to translate." if not given[0] else "Name the file its translation goes to.",
                        error=True)
            return
        source, target = (Path(os.path.expanduser(name)) for name in given)
        if problem := check_job(source, target):
            self.report(problem, error=True)
            return
        if target.is_file() and target != self.replacing:     # maybe a translation corrected by hand
            self.replacing = target
            self.report(f"{target} exists: enter again replaces it.", error=True)
            return
        self.replacing = None
        self.job = FileJob(source, target, self.direction, self.options, threading.Event(), self.glossary)
        self.query_one(ProgressBar).update(total=None, progress=0)
        self.report(f"Translating {source.name}…")
        self.run_worker(partial(self.translate, self.job), thread=True, group="file", exit_on_error=False)

    def translate(self, job: FileJob) -> None:
        """In a worker thread: the file translated and written, or what stopped it said."""
        from mtkit.runtime import decode_cache, translation_progress
        from mtkit.runtime.documents import translate_file
        from mtkit.runtime.text_io import InputError, atomic_output

        started, counts = time.perf_counter(), [0, 0]
        kept = decode_cache.beside(job.target)

        def progress(done: int, total: int) -> None:     # on the decoding threads, after each batch
            counts[:] = done, total
            self.app.call_from_thread(self.query_one(ProgressBar).update, total=total, progress=done)
            if done and job.stop.is_set():
                raise Stopped

        try:
            data = job.source.read_bytes()
            with warnings.catch_warnings(), self.translator.decode_cache(kept) as cache:
                warnings.simplefilter("ignore")         # stderr would scribble over the screen
                if earlier := len(cache):
                    self.app.call_from_thread(self.report, f"Going on with the {earlier:,} sentences decoded before…")
                with translation_progress(progress):
                    result = translate_file(self.translator, job.source.name, data, job.direction[1], job.options,
                                            from_lang=job.direction[0], glossary=job.glossary)
            with atomic_output(job.target, binary=True) as out:
                out.write(result)
            kept.unlink(missing_ok=True)
            # No count of sentences: the cache counts decodings, and a sentence may be decoded twice
            # (Translator._decode_again).
            before = f", going on from the {earlier:,} sentences decoded before" if earlier else ""
            message = (f"Wrote {job.target} in {time.perf_counter() - started:.1f} s{before}.", False)
        except Stopped:
            message = (f"Stopped: the {counts[0]:,} sentences decoded are kept; enter goes on from there.", False)
        except InputError as e:                 # names its file
            message = (str(e), True)
        except Exception as e:      # TranslationError, OSError, ...: said, never a crash
            message = (f"{job.source.name}: {getattr(e, 'strerror', None) or e}", True)
        self.app.call_from_thread(self.finished, *message)

    def finished(self, message: str, error: bool) -> None:
        self.job = None
        self.report(message, error)

    def report(self, message: str, error: bool = False) -> None:
        status = self.query_one("#file-status", Label)
        status.update(message)
        status.set_class(error, "error")

    def action_close(self) -> None:
        if self.job is None:
            self.dismiss(None)
        elif not self.job.stop.is_set():
            self.job.stop.set()
            self.report("Stopping after the batch being decoded…")
