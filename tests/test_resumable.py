"""Output that survives an interruption (runtime/resumable.py): the file appears whole under its name,
and the whole lines an interrupted job wrote are kept for the same job to go on after."""

from __future__ import annotations

import gzip
import json
import os
import threading

import pytest

from mtkit.runtime.resumable import partial_paths, resumable_output

JOB = {"input": "in.de", "options": {"beam_size": 4}}


class Stop(Exception):
    """Stands for Ctrl-C, SIGTERM or an error in the middle of a job."""


def interrupted(path, job, lines) -> None:
    with pytest.raises(Stop):
        with resumable_output(path, job) as out:
            for line in lines:
                out.write(line + "\n")
            out.flush()
            raise Stop


@pytest.mark.parametrize("name", ["out.txt", "out.txt.gz"])
def test_the_same_job_goes_on_after_the_lines_kept(tmp_path, name):
    path = tmp_path / name
    interrupted(path, JOB, ["one", "two"])
    partial, record = partial_paths(path)
    assert not path.exists() and partial.is_file() and json.loads(record.read_text()) == JOB
    with resumable_output(path, JOB) as out:
        assert out.done == 2
        out.write("three\n")
    read = gzip.open if name.endswith(".gz") else open
    with read(path, "rt", encoding="utf-8") as f:
        assert f.read() == "one\ntwo\nthree\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_another_job_starts_afresh(tmp_path):
    path = tmp_path / "out.txt"
    interrupted(path, JOB, ["one", "two"])
    with resumable_output(path, {**JOB, "options": {"beam_size": 1}}) as out:
        assert out.done == 0
        out.write("uno\n")
    assert path.read_text() == "uno\n"


def test_a_line_cut_off_mid_write_is_done_again(tmp_path):
    """A job killed outright (SIGKILL) may leave half a line: only the whole ones are kept."""
    path = tmp_path / "out.txt"
    interrupted(path, JOB, ["one", "two"])
    partial, _ = partial_paths(path)
    partial.write_bytes(b"one\ntwo\nthr")
    with resumable_output(path, JOB) as out:
        assert out.done == 2
        out.write("three\n")
    assert path.read_text() == "one\ntwo\nthree\n"


def test_only_a_newline_ends_a_line(tmp_path):
    """Other line breaks inside a line ("\\u2028", "\\x85": --format jsonl writes them as they are) do not
    make it several: the lines kept are the lines written."""
    path = tmp_path / "out.txt"
    interrupted(path, JOB, ["one\u2028two", "three\x85four\rfive"])
    with resumable_output(path, JOB) as out:
        assert out.done == 2
        out.write("six\n")
    assert path.read_bytes().decode() == "one\u2028two\nthree\x85four\rfive\nsix\n"


def test_a_cut_off_gzip_keeps_the_lines_it_holds(tmp_path):
    path = tmp_path / "out.txt.gz"
    interrupted(path, JOB, [f"line {i}" for i in range(2000)])
    partial, _ = partial_paths(path)
    data = partial.read_bytes()
    partial.write_bytes(data[:len(data) * 2 // 3])          # the end of the gzip stream lost
    with resumable_output(path, JOB) as out:
        assert 0 < out.done < 2000
        done = out.done
        for i in range(done, 2000):
            out.write(f"line {i}\n")
    with gzip.open(path, "rt") as f:
        assert f.read().splitlines() == [f"line {i}" for i in range(2000)]


def test_nothing_is_left_when_nothing_was_written(tmp_path):
    with pytest.raises(Stop):
        with resumable_output(tmp_path / "out.txt", JOB):
            raise Stop
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_written_into_with_nothing_to_resume(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, encoding="utf-8").read()))
    reader.start()
    with resumable_output(fifo, JOB) as out:
        assert out.done == 0 and out.partial is None
        out.write("one\n")
    reader.join(10)
    assert got == ["one\n"] and sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


@pytest.mark.skipif(os.name != "posix", reason="flock is POSIX")
def test_a_second_run_on_the_same_file_stops_at_once_and_harms_nothing(tmp_path):
    from mtkit.runtime.text_io import InputError
    path = tmp_path / "out.txt"
    with resumable_output(path, JOB) as out:
        out.write("one\n")
        out.flush()
        with pytest.raises(InputError, match="another run is writing it"):
            with resumable_output(path, JOB):
                pass
        out.write("two\n")
    assert path.read_text() == "one\ntwo\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
