"""Decoded sentences kept on disk (runtime/decode_cache.py): an interrupted document goes on where it
stopped. GERMAN[i] -> ENGLISH[i] is what the fixture model reproduces on any CPU (greedy)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

from office_files import docx, paragraph, texts

from conftest import ENGLISH, GERMAN, translate_cli as cli
from mtkit.runtime import translation_progress

GREEDY = {"beam_size": 1}


def decoded(translator, page: str, cache, **settings) -> tuple[str, int]:
    """The page translated inside `cache`, and how many sentences were decoded (not read back)."""
    counts = [(0, 0)]
    with translator.decode_cache(cache), translation_progress(lambda done, total: counts.append((done, total))):
        out = translator.translate_html(page, "en", from_lang="de", **{**GREEDY, **settings})
    return out, counts[-1][1]


def test_what_is_kept_is_read_back_and_nothing_else(fixture_translator, tmp_path):
    page = "".join(f"<p>{g} <b>{GERMAN[7]}</b></p>" for g in GERMAN[:10])
    first, count = decoded(fixture_translator, page, tmp_path / "kept.cache")
    assert count >= 10 and first == "".join(f"<p>{e} <b>{ENGLISH[7]}</b></p>" for e in ENGLISH[:10])
    again, count = decoded(fixture_translator, page, tmp_path / "kept.cache")
    assert (again, count) == (first, 0)                                   # all read back
    _, count = decoded(fixture_translator, page, tmp_path / "kept.cache", beam_size=2)
    assert count >= 10                                                    # other options: never read


def test_mt_translate_goes_on_after_an_interrupted_document(model, fixture_translator, tmp_path, capsys):
    """A run stopped half way leaves .FILE.partial.cache; the same command decodes only the rest, writes
    FILE and deletes the cache."""
    source = tmp_path / "brief.docx"
    source.write_bytes(docx("".join(paragraph(g) for g in GERMAN[:8])))
    kept = tmp_path / ".letter.docx.partial.cache"
    with fixture_translator.decode_cache(kept):                 # what a run stopped after 4 paragraphs kept
        fixture_translator.translate_docx(docx("".join(paragraph(g) for g in GERMAN[:4])), "en", from_lang="de",
                                          **GREEDY)
    code, out, err = cli(capsys, "-i", str(source), "-o", str(tmp_path / "letter.docx"))
    assert code == 0 and "going on with the 4 sentences an interrupted run decoded" in err
    assert texts((tmp_path / "letter.docx").read_bytes()) == ENGLISH[:8] and not kept.exists()


def test_a_cache_that_cannot_be_one_is_a_clear_error(model, tmp_path, capsys):
    (tmp_path / "brief.docx").write_bytes(docx(paragraph(GERMAN[0])))
    (tmp_path / ".letter.docx.partial.cache").write_bytes(b"not a database, but a file in the way " * 100)
    code, _, err = cli(capsys, "-i", str(tmp_path / "brief.docx"), "-o", str(tmp_path / "letter.docx"))
    assert code == 1 and err.count("\n") == 1 and "cannot keep decoded sentences there" in err
    assert not (tmp_path / "letter.docx").exists()


def test_a_damaged_cache_is_decoded_again_with_a_note(model, fixture_translator, tmp_path, capsys):
    """An interrupted run's cache, damaged (its pages scribbled over): a note, and the sentences decoded
    again; it was a traceback (sqlite3.DatabaseError from len()) or an error that refused the file."""
    source = tmp_path / "brief.docx"
    source.write_bytes(docx("".join(paragraph(g) for g in GERMAN[:8])))
    kept = tmp_path / ".letter.docx.partial.cache"
    with fixture_translator.decode_cache(kept):
        fixture_translator.translate_docx(source.read_bytes(), "en", from_lang="de", **GREEDY)
    data = bytearray(kept.read_bytes())
    data[4096 + 8:] = b"\xff" * (len(data) - 4096 - 8)        # the header stays: SQLite's file, damaged
    kept.write_bytes(data)
    code, _, err = cli(capsys, "-i", str(source), "-o", str(tmp_path / "letter.docx"))
    assert code == 0 and "Traceback" not in err and "could not be read" in err and "decoding them again" in err
    assert texts((tmp_path / "letter.docx").read_bytes()) == ENGLISH[:8] and not kept.exists()


def test_a_run_that_fails_before_decoding_leaves_no_cache(model, tmp_path, capsys):
    (tmp_path / "broken.docx").write_bytes(b"PK\x03\x04 and then no zip")
    code, _, err = cli(capsys, "-i", str(tmp_path / "broken.docx"), "-o", str(tmp_path / "letter.docx"))
    assert code == 1 and err.count("\n") == 1 and "not a .docx" in err
    assert [p.name for p in tmp_path.iterdir()] == ["broken.docx"]


def test_a_batch_that_ends_after_the_run_was_stopped_is_dropped(tmp_path):
    """A parallel batch may finish after the run stopped and closed the cache (ctrl+c, Escape in
    mt-tui): its write is dropped, not sent to a closed SQLite connection, which crashed the process."""
    from mtkit.runtime.decode_cache import DecodeCache
    from mtkit.runtime.decode_options import DecodeOptions
    from mtkit.runtime.search import Hypothesis, Result

    cache = DecodeCache(tmp_path / "kept.cache", "model")
    opts = DecodeOptions(beam_size=1)
    cache.keep([[5, 6, 3]], [None], opts, [Result([Hypothesis([7], -0.5)])])
    cache.close()
    cache.keep([[5, 8, 3]], [None], opts, [Result([Hypothesis([9], -0.5)])])       # no error, no crash
    again = DecodeCache(tmp_path / "kept.cache", "model")
    assert len(again) == 1 and list(again.lookup([[5, 6, 3]], [None], opts)) == [0]
    again.close()


def test_a_full_disk_is_one_line_and_leaves_no_empty_cache(fixture_bundle, tmp_path):
    """The disk fills up as a document's sentences are kept (a file size limit here, RLIMIT_FSIZE, in the
    command's process: a write past it fails with EFBIG): one line, and the sentences kept stay for the
    next run; a cache that could not even be made is not left behind, empty."""
    source, out = tmp_path / "in.srt", tmp_path / "out.srt"
    source.write_text("\n".join(f"{i}\n00:00:{i:02d},000 --> 00:00:{i:02d},900\n{g}\n"
                                for i, g in enumerate(GERMAN * 2, start=1)), encoding="utf-8")
    kept = tmp_path / ".out.srt.partial.cache"
    command = [str(Path(sys.executable).parent / "mt-translate"), "-m", str(fixture_bundle), "--from", "de",
               "--beam-size", "1", "--max-batch-sentences", "8", "-i", str(source), "-o", str(out)]
    for limit in (0, 20_000):           # bytes: none, or a few batches' sentences
        done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "MT_ORT_CACHE": "0"},
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
        assert done.returncode == 1 and "Traceback" not in done.stderr and not out.exists()
        assert done.stderr.splitlines()[-1].startswith(
            f"mt-translate: error: {kept}: cannot keep decoded sentences there ("), done.stderr
        assert kept.exists() == (limit > 0), done.stderr
        kept.unlink(missing_ok=True)
