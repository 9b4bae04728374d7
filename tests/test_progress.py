"""Progress of long translations (runtime/progress.py): the callback a document's translation tells of
each batch decoded, and mt-translate's bar for a whole document on a terminal."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import ENGLISH, GERMAN, ORT_THREADS, stderr_on_terminal
from mtkit.runtime import Translator, translation_progress

BIN = Path(sys.executable).parent / "mt-translate"


def test_the_callback_counts_every_sentence_of_a_document_once(fixture_bundle):
    translator = Translator(fixture_bundle, variant="fp32", threads=ORT_THREADS, max_batch_sentences=4)
    page = "".join(f"<p>{g} <b>{GERMAN[7]}</b></p>" for g in GERMAN[:20])     # plain and aligned sentences
    calls = []
    with translation_progress(lambda done, total: calls.append((done, total))):
        translator.translate_html(page, "en", from_lang="de", beam_size=1)
    done, total = zip(*calls)
    assert list(done) == sorted(done) and list(total) == sorted(total)           # both only grow
    assert calls[-1][0] == calls[-1][1] >= 20 and len(calls) > 4                  # batch by batch, to the end
    translator.translate(GERMAN[0], from_lang="de", beam_size=1)         # outside the block: not counted
    assert calls[-1] == (done[-1], total[-1]) and len(calls) == len(done)


def test_a_callback_that_raises_cancels_the_translation(fixture_bundle):
    """As docs/python-api.md says: its error comes out of the call, the batches not yet started are not decoded,
    and the Translator translates as before afterwards."""
    translator = Translator(fixture_bundle, variant="fp32", threads=ORT_THREADS, max_batch_sentences=4)
    decoded = []

    class Cancelled(Exception):
        pass

    def cancel(done: int, total: int) -> None:
        decoded.append(done)
        if done:
            raise Cancelled

    with translation_progress(cancel), pytest.raises(Cancelled):
        translator.translate(GERMAN[:20], from_lang="de", beam_size=1)
    assert max(decoded) < 20
    assert translator.translate(GERMAN[0], from_lang="de", beam_size=1)[0].text


@pytest.mark.parametrize("callback, why", [
    (None, "not None"),
    (lambda done: None, "cannot be called as callback(done, total)"),
    (lambda done, total, extra: None, "cannot be called as callback(done, total)"),
])
def test_a_callback_that_cannot_be_called_is_refused_when_the_block_starts(callback, why):
    """It failed only at the first batch, deep in the batching code: "'NoneType' object is not callable"
    or "<lambda>() takes 1 positional argument but 2 were given"."""
    entered = False
    with pytest.raises(TypeError, match="translation_progress needs a function callback\\(done, total\\)") as error:
        with translation_progress(callback):
            entered = True
    assert why in str(error.value) and not entered
    with translation_progress(print), translation_progress(lambda *counts: None):     # these can be
        pass


def test_mt_translate_draws_a_documents_bar_on_a_terminal_only(fixture_bundle, tmp_path):
    page = tmp_path / "seite.html"
    page.write_text("".join(f"<p>{g}</p>" for g in GERMAN[:12]), encoding="utf-8")
    command = [str(BIN), "-m", str(fixture_bundle), "--threads", str(ORT_THREADS), "--beam-size", "1", "--from", "de",
               "--html", "-i", str(page)]
    code, shown = stderr_on_terminal([*command, "-o", str(tmp_path / "page.html")])
    assert code == 0 and b"translating" in shown
    assert (tmp_path / "page.html").read_text(encoding="utf-8") == "".join(f"<p>{e}</p>" for e in ENGLISH[:12])
    code, shown = stderr_on_terminal([*command, "-q", "-o", str(tmp_path / "quiet.html")])
    assert code == 0 and shown == b""
