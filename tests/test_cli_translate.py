"""`mt-translate` end to end on the fixture bundle: in-process for speed, in subprocesses where the
exit status, stderr or a terminal matter. GERMAN[i] -> ENGLISH[i] is what the fixture model
reproduces on any CPU, so those outputs are asserted exactly."""

from __future__ import annotations

import gzip
import io
import json
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import ENGLISH, GERMAN, ORT_THREADS, invoke, stderr_on_terminal
from mtkit.runtime.cli import main

BIN = Path(sys.executable).parent / "mt-translate"


@pytest.fixture(autouse=True)
def model(fixture_bundle, monkeypatch):
    monkeypatch.setenv("MT_MODEL", str(fixture_bundle))     # the default model for every call below
    return fixture_bundle


def cli(capsys, monkeypatch, *args, stdin: bytes | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    return invoke(main, ["--threads", str(ORT_THREADS), *args], capsys)


def run(*args, stdin: bytes = b"", tty_stderr: bool = False, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run([str(BIN), "--threads", str(ORT_THREADS), *args], input=stdin, capture_output=True, timeout=120,
                          env=environment)


def test_text_arguments_one_line_each(capsys, monkeypatch):
    code, out, err = cli(capsys, monkeypatch, "--beam-size", "1", GERMAN[0], GERMAN[1])
    assert code == 0 and err == ""
    assert out.splitlines() == ENGLISH[:2]


def test_stdin_keeps_line_count_and_empty_lines(capsys, monkeypatch):
    lines = [GERMAN[0], "", "   ", f"{GERMAN[1]} {GERMAN[2]}", "\t", GERMAN[3]]
    code, out, _ = cli(capsys, monkeypatch, "--beam-size", "1", "--batch-size", "2",
                       stdin=("\n".join(lines) + "\n").encode())
    assert code == 0
    got = out.split("\n")
    assert got == [ENGLISH[0], "", "", f"{ENGLISH[1]} {ENGLISH[2]}", "", ENGLISH[3], ""]
    # The same lines as arguments give the same output (batching does not change results).
    code, out2, _ = cli(capsys, monkeypatch, "--beam-size", "1", *lines)
    assert out2 == out


def test_crlf_and_bom_input(capsys, monkeypatch, tmp_path):
    # Each text line keeps its input line's ending (a Windows file stays CRLF); JSON lines end in LF.
    crlf = f"\ufeff{GERMAN[0]}\r\n\r\n{GERMAN[1]}\n{GERMAN[2]}".encode()
    _, a, _ = cli(capsys, monkeypatch, "--beam-size", "1", stdin=crlf)
    assert a == f"{ENGLISH[0]}\r\n\r\n{ENGLISH[1]}\n{ENGLISH[2]}\n"
    (tmp_path / "in.txt").write_bytes(crlf)
    code, _, err = cli(capsys, monkeypatch, "--beam-size", "1", "-i", str(tmp_path / "in.txt"), "-o", str(tmp_path / "out.txt"))
    assert code == 0 and (tmp_path / "out.txt").read_bytes() == a.encode()
    _, jsonl, _ = cli(capsys, monkeypatch, "--beam-size", "1", "--format", "jsonl", stdin=crlf)
    assert "\r" not in jsonl and len(jsonl.splitlines()) == 4


def test_stdout_is_utf8_with_the_line_ends_given_whatever_the_locale():
    """A Windows pipe's stdout is cp1252 and turns "\n" into "\r\n"; ASCII here stands in for any such
    encoding: the output is still the UTF-8 bytes a file gets, never a UnicodeEncodeError."""
    crlf = f"{GERMAN[0]} 🍕\r\n{GERMAN[1]}\n".encode()
    result = run("--beam-size", "1", "--from", "de", stdin=crlf, env={"PYTHONIOENCODING": "ascii"})
    assert result.returncode == 0 and b"Traceback" not in result.stderr
    first, second = result.stdout.split(b"\r\n")
    assert "🍕".encode() in first and second == f"{ENGLISH[1]}\n".encode()


def test_jsonl_carries_scores_nbest_and_timings(capsys, monkeypatch):
    code, out, _ = cli(capsys, monkeypatch, "--format", "jsonl", "--n-best", "3", "--beam-size", "3", "--alignment",
                       GERMAN[0], "")
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["line"] for r in records] == [1, 2]
    first = records[0]
    assert first["source"] == GERMAN[0] and first["text"] == ENGLISH[0] and len(first["n_best"]) == 3
    assert first["n_best"][0]["text"] == first["text"] and first["score"] == first["n_best"][0]["score"]
    assert [h["score"] for h in first["n_best"]] == sorted((h["score"] for h in first["n_best"]), reverse=True)
    assert {"decode_ms", "preprocess_ms"} <= set(first["timings"])
    assert len(first["alignment"]["weights"]) == len(first["tokens"]) + 1
    assert records[1]["text"] == "" and records[1]["n_best"][0]["text"] == ""


def test_jsonl_is_one_line_a_record_for_any_reader(capsys, monkeypatch):
    source = f"{GERMAN[0]}\u2028{GERMAN[1]}\u2029"
    code, out, err = cli(capsys, monkeypatch, "--beam-size", "1", "--format", "jsonl", stdin=f"{source}\n".encode())
    assert code == 0 and len(out.splitlines()) == 1, err
    assert json.loads(out)["source"] == source


def test_text_nbest_is_tab_separated(capsys, monkeypatch):
    _, out, _ = cli(capsys, monkeypatch, "--n-best", "2", "--beam-size", "2", GERMAN[0], "")
    assert out.count("\n") == 2 and out.startswith(ENGLISH[0] + "\t")
    assert [line.count("\t") for line in out.splitlines()] == [1, 1]       # an empty line has its two columns too


def test_sampling_with_seed_is_reproducible(capsys, monkeypatch):
    args = ["--sampling", "--seed", "3", "--temperature", "1.5", "--format", "jsonl", GERMAN[1], GERMAN[2]]
    _, a, _ = cli(capsys, monkeypatch, *args)
    _, b, _ = cli(capsys, monkeypatch, *args)
    assert [json.loads(x)["tokens"] for x in a.splitlines()] == [json.loads(x)["tokens"] for x in b.splitlines()]


def test_to_and_bad_options(capsys, monkeypatch):
    code, out, _ = cli(capsys, monkeypatch, "--to", "de", ENGLISH[0])
    assert code == 0 and out == GERMAN[0] + "\n"
    code, _, err = cli(capsys, monkeypatch, "--to", "fr", "Hallo")
    assert code == 1 and "cannot translate into 'fr'" in err and "Traceback" not in err
    code, out, _ = cli(capsys, monkeypatch, "--list-languages")
    assert out.split() == ["de", "en"]


def test_from_is_checked_and_picks_the_target(capsys, monkeypatch):
    code, out, err = cli(capsys, monkeypatch, "--from", "en", ENGLISH[0])        # en -> its one target, de
    assert code == 0 and out == GERMAN[0] + "\n", err
    code, out, _ = cli(capsys, monkeypatch, "--from", "de", "--to", "en", GERMAN[0])
    assert code == 0 and out == ENGLISH[0] + "\n"
    code, _, err = cli(capsys, monkeypatch, "--from", "fr", "Bonjour")
    assert code == 1 and "cannot translate from 'fr'; its source languages are: de, en" in err
    code, _, err = cli(capsys, monkeypatch, "--from", "de", "--to", "de", GERMAN[0])
    assert code == 1 and "does not translate de -> de" in err


@pytest.mark.parametrize("args, message", [
    (["--n-best", "5", "--beam-size", "4"], "--n-best (5) cannot exceed --beam-size (4) without --sampling"),
    (["--n-best", "2", "--greedy"], "--n-best (2) cannot exceed --beam-size (1)"),
    (["--beam-size", "0"], "--beam-size must be from 1 to 256, not 0"),
    (["--beam-size", "100000"], "--beam-size must be from 1 to 256, not 100000"),
    (["--length-penalty", "nan"], "--length-penalty must be a finite number, not nan"),
    (["--max-length-ratio", "inf"], "--max-length-ratio must be a finite number, not inf"),
    (["--sampling", "--seed", "-1"], "--seed must be 0 or positive, not -1"),
    (["--sampling", "--top-p", "0"], "--top-p must be in (0, 1], not 0.0"),
    (["--sampling", "--temperature", "-1"], "--temperature must be positive, not -1.0"),
    (["--temperature", "0.5"], "--temperature applies only with --sampling"),
    (["--seed", "1", "--top-k", "5"], "--top-k and --seed apply only with --sampling"),
    (["--sampling", "--beam-size", "3"], "--sampling does not search a beam"),
    (["--sampling", "--greedy"], "--sampling does not search a beam"),
    (["--no-repeat-ngram", "-2"], "--no-repeat-ngram must be 0 (off) or positive, not -2"),
    (["--greedy", "--beam-size", "3"], "--greedy is --beam-size 1"),
    (["--alignment"], "--alignment needs --format jsonl"),
    (["-i", "in.txt"], "give TEXT arguments or --input, not both"),
    (["--beam-size", "four"], "'four' is not a valid integer"),
    (["--max-batch-tokens", "0"], "Invalid value for '--max-batch-tokens'"),
    (["--max-batch-sentences", "-1"], "Invalid value for '--max-batch-sentences'"),
    (["--threads", "100000"], "Invalid value for '--threads': 100000 is not in the range 1<=x<=1024"),
])
def test_bad_flags_are_usage_errors_that_name_the_flags(capsys, monkeypatch, args, message):
    """Checked by DecodeOptions (the API's rules) but reported by flag, before any model loads."""
    monkeypatch.setenv("MT_MODEL", "/nonexistent")           # so a usage error cannot wait for a model
    code, out, err = cli(capsys, monkeypatch, *args, "Hallo")
    assert code == 2 and out == "" and message in err, err
    assert "num_hypotheses" not in err and "beam_size" not in err and "Traceback" not in err


def test_the_decode_budget_is_the_translators_and_does_not_change_output(capsys, monkeypatch):
    """--max-batch-tokens / --max-batch-sentences reach the Translator (memory against speed); a budget of
    one sentence at a time translates as the default does."""
    from mtkit.runtime import translator

    budgets = []

    class Recording(translator.Translator):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            budgets.append((self.max_batch_tokens, self.max_batch_sentences))

    lines = ("\n".join(GERMAN[:4]) + "\n").encode()
    code, default, _ = cli(capsys, monkeypatch, "--variant", "int8", stdin=lines)
    monkeypatch.setattr(translator, "Translator", Recording)
    code2, small, _ = cli(capsys, monkeypatch, "--variant", "int8", "--max-batch-tokens", "8", "--max-batch-sentences",
                          "4", stdin=lines)
    assert code == code2 == 0 and small == default and len(default.splitlines()) == 4
    assert budgets == [(8, 4)]


def test_greedy_and_sampling_flags(capsys, monkeypatch):
    code, out, _ = cli(capsys, monkeypatch, "--greedy", GERMAN[0])
    assert code == 0 and out == ENGLISH[0] + "\n"
    code, out, _ = cli(capsys, monkeypatch, "--sampling", "--n-best", "3", "--seed", "1", "--format", "jsonl", GERMAN[0])
    assert code == 0 and len(json.loads(out)["n_best"]) == 3             # n-best samples may exceed the beam


def test_long_line_is_split_with_a_warning(capsys, monkeypatch):
    long_line = " ".join(["Hund Katze Maus Haus Baum"] * 60)
    code, out, err = cli(capsys, monkeypatch, "--beam-size", "1", "--max-length-ratio", "0.3", GERMAN[0], long_line)
    assert code == 0 and out.count("\n") == 2
    assert "warning: line 2:" in err and "longer than the model's maximum" in err


def test_a_line_of_many_long_sentences_says_so_in_a_few_warnings(capsys, monkeypatch):
    """Each sentence over the model's length was a warning of its own: one line of a 1 MB file gave
    hundreds of lines on stderr. The first five are shown, and the rest counted."""
    long_line = " ".join(" ".join(["Hund Katze Maus Haus Baum"] * 20) + "." for _ in range(12))
    code, out, err = cli(capsys, monkeypatch, "--beam-size", "1", "--max-length-ratio", "0.3", long_line)
    assert code == 0 and out.count("\n") == 1
    assert err.count("longer than the model's maximum") == 5 and err.endswith("line 1: 7 more warnings\n")


def test_file_to_file(capsys, monkeypatch, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text(f"{GERMAN[0]}\n\n{GERMAN[1]}\n", encoding="utf-8")
    out_file = tmp_path / "out.txt"
    code, out, err = cli(capsys, monkeypatch, "-i", str(src), "-o", str(out_file), "--beam-size", "1")
    assert code == 0 and out == "" and err == ""          # not a terminal: no progress bar
    assert out_file.read_text(encoding="utf-8") == f"{ENGLISH[0]}\n\n{ENGLISH[1]}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt"]


def test_invalid_utf8_names_the_line_and_leaves_no_output(capsys, monkeypatch, tmp_path):
    src = tmp_path / "in.txt"
    src.write_bytes("Hallo.\nJa.\n".encode() + b"caf\xe9 au lait\n" + b"Nein.\n")
    out_file = tmp_path / "out.txt"
    code, out, err = cli(capsys, monkeypatch, "-i", str(src), "-o", str(out_file))
    assert code == 1 and "line 3: invalid UTF-8" in err and str(src) in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]   # no output, no temporary file
    # On stdin, too (read as a stream): the error names the line; -o is still not created.
    code, _, err = cli(capsys, monkeypatch, "-o", str(out_file), stdin=b"Hallo\n\xff\xfe\n")
    assert code == 1 and "stdin, line 2: invalid UTF-8" in err
    assert not out_file.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_missing_input_file(capsys, monkeypatch, tmp_path):
    code, _, err = cli(capsys, monkeypatch, "-i", str(tmp_path / "nope.txt"))
    assert code == 1 and "nope.txt: cannot open" in err


def test_output_that_cannot_be_written_fails_before_any_work(capsys, monkeypatch, tmp_path):
    (tmp_path / "dir").mkdir()
    code, out, err = cli(capsys, monkeypatch, "--beam-size", "1", "-o", str(tmp_path / "dir"), GERMAN[0])
    assert code == 1 and out == "" and err == f"mt-translate: error: {tmp_path / 'dir'}: is a directory\n"
    assert list((tmp_path / "dir").iterdir()) == [] and [p.name for p in tmp_path.iterdir()] == ["dir"]
    # Checked before the model loads (this one does not exist): nothing is translated in vain.
    monkeypatch.setenv("MT_MODEL", str(tmp_path / "no-model"))
    code, _, err = cli(capsys, monkeypatch, "-o", str(tmp_path / "dir"), GERMAN[0])
    assert code == 1 and "dir: is a directory" in err
    code, _, err = cli(capsys, monkeypatch, "-o", str(tmp_path / "no-dir" / "out.txt"), GERMAN[0])
    assert code == 1 and f"out.txt: cannot write ({tmp_path / 'no-dir'}: no such directory)" in err
    assert [p.name for p in tmp_path.iterdir()] == ["dir"]
    if Path("/sys/kernel").is_dir():        # read-only even for root, whom permission bits let through
        code, _, err = cli(capsys, monkeypatch, "-o", "/sys/out.txt", GERMAN[0])
        assert code == 1 and err.startswith("mt-translate: error: /sys/out.txt: cannot write (/sys: ")


def test_output_symlink_is_followed(capsys, monkeypatch, tmp_path):
    (tmp_path / "target.txt").write_text("old\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "link.txt").symlink_to(tmp_path / "target.txt")
    code, _, err = cli(capsys, monkeypatch, "--beam-size", "1", "-o", str(tmp_path / "sub" / "link.txt"), GERMAN[0])
    assert code == 0, err
    assert (tmp_path / "sub" / "link.txt").is_symlink() and (tmp_path / "target.txt").read_text() == ENGLISH[0] + "\n"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["link.txt", "sub", "target.txt"]   # no temporary file


def test_output_fifo_and_device_are_written_into(capsys, monkeypatch, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, _, err = cli(capsys, monkeypatch, "--beam-size", "1", "-o", str(fifo), GERMAN[0], GERMAN[1])
    reader.join(60)
    assert code == 0 and got == [f"{ENGLISH[0]}\n{ENGLISH[1]}\n".encode()], err
    assert fifo.is_fifo() and [p.name for p in tmp_path.iterdir()] == ["fifo"]
    # A character device: a pseudo-terminal's follower (as /dev/stdout is on a terminal).
    leader, follower = pty.openpty()
    try:
        device = os.ttyname(follower)
        code, _, err = cli(capsys, monkeypatch, "--beam-size", "1", "-o", device, GERMAN[0])
        assert code == 0, err
        assert os.read(leader, 4096).replace(b"\r\n", b"\n") == f"{ENGLISH[0]}\n".encode()
    finally:
        os.close(leader)
        os.close(follower)


def test_typing_at_a_terminal_has_line_editing(model):
    """stdin and stdout a terminal: a prompt, each line translated when entered, and readline edits it
    (Ctrl-A goes to the line's start, where "Tom " is typed in front of "schrie."); Ctrl-D ends."""
    import select

    leader, follower = pty.openpty()
    proc = subprocess.Popen([str(BIN), "--threads", str(ORT_THREADS), "--from", "de", "--greedy"], stdin=follower,
                            stdout=follower, stderr=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1",
                                                                          "TERM": "xterm"})
    os.close(follower)
    def read_until(wanted: bytes) -> bytes:
        shown, deadline = b"", time.time() + 60
        while wanted not in shown and time.time() < deadline:
            if select.select([leader], [], [], 0.5)[0]:
                shown += os.read(leader, 4096)
        return shown

    try:
        assert read_until(b"> ").endswith(b"> ")               # the model is loaded: type
        os.write(leader, "schrie.\x01Tom \n".encode())
        shown = read_until(f"{ENGLISH[6]}\r\n> ".encode())
        os.write(leader, b"\x04")
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
        assert f"\r\n{ENGLISH[6]}\r\n".encode() in shown, shown
    finally:
        proc.kill()
        os.close(leader)


def test_gz_output_is_gzip(capsys, monkeypatch, tmp_path):
    from mtkit.runtime.text_io import read_lines

    out_file = tmp_path / "out.en.gz"
    code, _, err = cli(capsys, monkeypatch, "--beam-size", "1", "-o", str(out_file), GERMAN[0], "", GERMAN[1])
    assert code == 0, err
    assert gzip.decompress(out_file.read_bytes()) == f"{ENGLISH[0]}\n\n{ENGLISH[1]}\n".encode()
    assert read_lines(out_file) == [ENGLISH[0], "", ENGLISH[1]] and [p.name for p in tmp_path.iterdir()] == ["out.en.gz"]


def test_mt_model_is_named_when_it_is_wrong(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("MT_MODELS_DIR", str(tmp_path))       # no installed model of that name
    monkeypatch.setenv("MT_MODEL", "nosuch")
    code, _, err = cli(capsys, monkeypatch, "Hallo")
    assert code == 1 and err.startswith("mt-translate: error: $MT_MODEL=nosuch: no such file or directory, nor a model")
    code, _, err = cli(capsys, monkeypatch, "-m", "nosuch", "Hallo")         # given with -m: no $MT_MODEL
    assert code == 1 and err.startswith("mt-translate: error: nosuch: no such file or directory, nor a model")


# Subprocesses: the real console script, exit codes and stderr.

def test_console_script_pipe(model):
    out = run("--beam-size", "1", stdin=f"{GERMAN[0]}\n\n{GERMAN[1]}\n".encode())
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode() == f"{ENGLISH[0]}\n\n{ENGLISH[1]}\n" and out.stderr == b""


@pytest.mark.parametrize("damage, message", [
    ("truncate", "decoder.int8.onnx: 1000 bytes, but config.json records"),
    ("schema", "config.json: schema_version"),
    ("tokenizer", "tokenizer.model: missing"),
])
def test_broken_bundle_exits_without_traceback(model, tmp_path, damage, message):
    import shutil

    bundle = shutil.copytree(model, tmp_path / "b")
    if damage == "truncate":
        (bundle / "decoder.int8.onnx").write_bytes((bundle / "decoder.int8.onnx").read_bytes()[:1000])
    elif damage == "schema":
        cfg = json.loads((bundle / "config.json").read_text())
        cfg["schema_version"] = 0
        (bundle / "config.json").write_text(json.dumps(cfg))
    else:
        (bundle / "tokenizer.model").unlink()
    out = run("-m", str(bundle), "Hallo")
    err = out.stderr.decode()
    assert out.returncode == 1 and message in err and "Traceback" not in err and out.stdout == b""


def test_no_model_at_all_says_to_pass_m(tmp_path):
    env = {"MT_MODEL": str(tmp_path / "missing")}
    out = run("Hallo", env=env)
    assert out.returncode == 1 and f"$MT_MODEL={tmp_path / 'missing'}: no such file".encode() in out.stderr
    assert b"Traceback" not in out.stderr


def test_invalid_utf8_argument_is_an_error_as_in_a_file():
    """Python keeps argv bytes that are not UTF-8 as lone surrogates; they must not become U+FFFD."""
    out = run("--beam-size", "1", GERMAN[0], b"\xe4pfel sind gut")
    assert out.returncode == 1 and out.stdout == b""
    assert out.stderr.decode() == ("mt-translate: error: argument 2: invalid UTF-8 (byte 0xe4 at column 1); "
                                   "pass UTF-8 text (check the terminal's encoding and the locale)\n")


def start_and_stop(tmp_path, *args) -> tuple[int, str]:
    """mt-translate -i in.de -o out.en, stopped by SIGTERM once some lines are done (at one line a batch it
    would take minutes): its exit status and stderr."""
    src = tmp_path / "in.de"
    src.write_text("\n".join(GERMAN * 20) + "\n", encoding="utf-8")
    proc = subprocess.Popen([str(BIN), "--threads", str(ORT_THREADS), "--from", "de", "--beam-size", "1",
                             "--batch-size", "1", *args,
                             "-i", str(src), "-o", str(tmp_path / "out.en")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1"})
    partial = tmp_path / ".out.en.partial"
    try:
        deadline = time.monotonic() + 120
        while not partial.is_file() or partial.read_bytes().count(b"\n") < 3:
            assert proc.poll() is None and time.monotonic() < deadline, "no lines were written"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return proc.returncode, err.decode()


def test_sigterm_keeps_the_lines_done_and_the_same_command_goes_on(tmp_path):
    """timeout, docker stop and systemd send SIGTERM: as on Ctrl-C, nothing appears under the output's
    name, and the lines done are kept for the same command to go on from."""
    code, err = start_and_stop(tmp_path)
    kept = re.fullmatch(r"mt-translate: (\d+) of 1,920 lines are kept in (.*); the same command goes on from there\n"
                        r"mt-translate: terminated\n", err)
    assert code == 143 and kept, err
    assert kept.group(2) == str(tmp_path / ".out.en.partial")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.en.partial", ".out.en.partial.json", "in.de"]
    done = int(kept.group(1))
    assert done >= 3 and (tmp_path / ".out.en.partial").read_text(encoding="utf-8").splitlines() == \
        (ENGLISH * 20)[:done]
    # The same command (a batch size does not change a search's output) goes on after those lines.
    again = run("--from", "de", "--beam-size", "1", "-i", str(tmp_path / "in.de"), "-o", str(tmp_path / "out.en"))
    assert again.returncode == 0
    assert again.stderr.decode() == (f"mt-translate: note: going on after the {done:,} lines an interrupted run wrote "
                                     f"({tmp_path / '.out.en.partial'})\n")
    assert (tmp_path / "out.en").read_text(encoding="utf-8") == "\n".join(ENGLISH * 20) + "\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.de", "out.en"]


def test_another_job_on_the_same_output_starts_afresh(tmp_path):
    code, _ = start_and_stop(tmp_path)
    assert code == 143 and (tmp_path / ".out.en.partial.json").is_file()
    other = run("--from", "de", "--beam-size", "1", "--format", "jsonl", "-i", str(tmp_path / "in.de"),
                "-o", str(tmp_path / "out.en"))
    assert other.returncode == 0 and other.stderr.decode() == (
        f"mt-translate: note: the lines an interrupted run wrote ({tmp_path / '.out.en.partial'}) were made with "
        f"another input or other options; starting over\n")
    out = (tmp_path / "out.en").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["text"] for line in out] == ENGLISH * 20
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.de", "out.en"]


def test_cuda_provider_without_cuda_fails_cleanly():
    import onnxruntime as ort

    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this machine has the CUDA provider")
    out = run("--provider", "cuda", "Hallo")
    err = out.stderr.decode()
    assert out.returncode == 1 and "CUDA" in err and "Traceback" not in err and out.stdout == b""
    auto = run("--provider", "auto", "--beam-size", "1", "Hallo")
    assert auto.returncode == 0 and b"provider auto: using cpu" in auto.stderr and auto.stdout.count(b"\n") == 1
    default = run("--beam-size", "1", GERMAN[0])            # auto is the default; said only when asked for
    assert default.returncode == 0 and default.stderr == b"" and default.stdout.count(b"\n") == 1


def test_progress_bar_on_a_terminal_only(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("\n".join(GERMAN[:3]) + "\n", encoding="utf-8")     # sure to be German: no warnings
    piped = run("-i", str(src), "-o", str(tmp_path / "a.txt"), "--beam-size", "1")
    assert piped.returncode == 0 and piped.stderr == b""
    # stderr on a pseudo-terminal: rich draws the bar there.
    code, shown = stderr_on_terminal([str(BIN), "--threads", str(ORT_THREADS), "-i", str(src), "-o",
                                      str(tmp_path / "b.txt"), "--beam-size", "1"])
    assert code == 0
    assert b"translating" in shown
    assert (tmp_path / "a.txt").read_bytes() == (tmp_path / "b.txt").read_bytes()


def test_a_partial_output_of_other_options_is_said_to_start_over(capsys, monkeypatch, tmp_path):
    """Quick, in-process: the lines another job left (here: a description no run of mt-translate makes)."""
    from mtkit.runtime.resumable import partial_paths, resumable_output
    src, out = tmp_path / "in.de", tmp_path / "out.en"
    src.write_text(f"{GERMAN[0]}\n{GERMAN[1]}\n", encoding="utf-8")
    with pytest.raises(KeyboardInterrupt):
        with resumable_output(out, {"options": "other"}) as partial:
            partial.write("an earlier line\n")
            raise KeyboardInterrupt
    code, stdout, err = cli(capsys, monkeypatch, "--beam-size", "1", "--from", "de", "-i", str(src), "-o", str(out))
    assert code == 0 and stdout == ""
    assert err == (f"mt-translate: note: the lines an interrupted run wrote ({partial_paths(out)[0]}) were made with "
                   f"another input or other options; starting over\n")
    assert out.read_text(encoding="utf-8") == f"{ENGLISH[0]}\n{ENGLISH[1]}\n"
    code, _, err = cli(capsys, monkeypatch, "-q", "--beam-size", "1", "--from", "de", "-i", str(src), "-o", str(out))
    assert code == 0 and err == ""


@pytest.mark.parametrize("same", ["in.de", "./in.de", "link.de"])
def test_output_onto_the_input_is_refused_before_the_model_loads(capsys, monkeypatch, tmp_path, same):
    src = tmp_path / "in.de"
    src.write_text(f"{GERMAN[0]}\n", encoding="utf-8")
    (tmp_path / "link.de").symlink_to(src)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, monkeypatch, "-m", str(tmp_path / "no-model"), "-i", "in.de", "-o", same)
    assert code == 1 and out == "" and "Traceback" not in err
    assert err == f"mt-translate: error: {same}: is the file given to -i (in.de); write the output to another file\n"
    assert src.read_text(encoding="utf-8") == f"{GERMAN[0]}\n"


def test_a_document_named_as_one_is_read_whole_unless_lines_are_asked_for(capsys, monkeypatch, tmp_path):
    page = tmp_path / "seite.html"
    page.write_text(f"<p>{GERMAN[0]}</p>\n", encoding="utf-8")
    code, out, _ = cli(capsys, monkeypatch, "--beam-size", "1", "--from", "de", "-i", str(page))
    assert code == 0 and out == f"<p>{ENGLISH[0]}</p>\n"                        # .html: --html, unasked
    code, out, _ = cli(capsys, monkeypatch, "--beam-size", "1", "--from", "de", "--format", "jsonl", "-i", str(page))
    assert code == 0 and json.loads(out)["source"] == f"<p>{GERMAN[0]}</p>"      # jsonl is for lines: read as one


def test_a_documents_byte_order_mark_is_kept_around_it(capsys, monkeypatch, tmp_path, fixture_translator):
    """A whole document keeps its BOM (some players read a subtitle file as UTF-8 only with one), and its
    parser never sees it: "\\ufeff# Titel" stayed a paragraph, its "#" lost. Lines of text drop it."""
    from mtkit.runtime.documents import translate_file

    srt = f"\ufeff1\r\n00:00:01,000 --> 00:00:02,000\r\n{GERMAN[0]}\r\n".encode()
    (tmp_path / "in.srt").write_bytes(srt)
    code, _, err = cli(capsys, monkeypatch, "--beam-size", "1", "--from", "de", "--subtitles", "-i",
                       str(tmp_path / "in.srt"), "-o", str(tmp_path / "out.srt"))
    assert code == 0, err
    assert (tmp_path / "out.srt").read_bytes() == srt.replace(GERMAN[0].encode(), ENGLISH[0].encode())
    code, out, err = cli(capsys, monkeypatch, "--beam-size", "1", "--from", "de", "--markdown",
                         stdin=f"\ufeff# {GERMAN[1]}\n".encode())
    assert code == 0 and out == f"\ufeff# {ENGLISH[1]}\n", err
    assert fixture_translator.translate_markdown(f"\ufeff# {GERMAN[1]}\n", beam_size=1) == f"\ufeff# {ENGLISH[1]}\n"
    assert translate_file(fixture_translator, "a.srt", srt, beam_size=1).startswith(b"\xef\xbb\xbf1\r\n")
    assert translate_file(fixture_translator, "a.txt", f"\ufeff{GERMAN[0]}".encode(), beam_size=1) == ENGLISH[0].encode()


def test_a_line_on_a_pipe_is_translated_before_the_next_arrives():
    """A program that writes a line and waits for its translation gets it: a whole batch (64 lines) or the
    end of the input was awaited first, so such a program and mt-translate waited on each other forever."""
    proc = subprocess.Popen([str(BIN), "--threads", str(ORT_THREADS), "--beam-size", "1", "--from", "de"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        answers = []
        for german in GERMAN[:2]:
            proc.stdin.write(f"{german}\n".encode())
            proc.stdin.flush()                  # and the pipe stays open
            reader = threading.Thread(target=lambda: answers.append(proc.stdout.readline()), daemon=True)
            reader.start()
            reader.join(30)
            assert not reader.is_alive(), "no translation while stdin stays open"
        proc.stdin.close()
        assert [a.decode() for a in answers] == [f"{english}\n" for english in ENGLISH[:2]]
        assert proc.wait(60) == 0 and proc.stdout.read() == b""
    finally:
        proc.kill()
        proc.wait()


def test_arriving_lines_are_the_lines_of_the_stream():
    """stdin's reader (text_io.ArrivingLines) splits as a file's lines are split, long lines and a last
    line without "\\n" included, and says whether the next line has arrived without waiting for it."""
    from mtkit.runtime.text_io import ArrivingLines

    read_end, write_end = os.pipe()
    lines = ArrivingLines(read_end)
    try:
        assert not lines.ready()                                # nothing yet: not ready, and no wait
        os.write(write_end, b"eins\r\n\nzwei")
        assert lines.ready() and next(lines) == b"eins\r\n" and lines.ready() and next(lines) == b"\n"
        assert not lines.ready()                                # "zwei" has no end yet
        long = b"x" * 200_000 + b"\n"                           # more than one read
        threading.Thread(target=os.write, args=(write_end, long + b"drei\f\x00\xe2\x80\xa8")).start()
        assert next(lines) == b"zwei" + long
        os.close(write_end)
        assert lines.ready() and list(lines) == [b"drei\f\x00\xe2\x80\xa8"]
    finally:
        os.close(read_end)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM in /proc (Linux)")
def test_an_input_file_is_streamed_not_held(tmp_path):
    """mt-translate -i FILE reads its lines as it translates them: it read them all into a list first, so
    a 30 MB file of blank lines took 29 MB more memory than one line did (peak RSS, its own process)."""
    measure = ("import re, sys\nfrom mtkit.runtime.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n"
               "    pass\nprint(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())[1])")

    def peak_kb(lines: int) -> int:
        source = tmp_path / "in.txt"
        source.write_text((" " * 3000 + "\n") * lines)
        done = subprocess.run([sys.executable, "-c", measure, "--threads", str(ORT_THREADS), "--from", "de", "-q",
                               "-i", str(source), "-o", str(tmp_path / "out.txt")], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"})
        assert (tmp_path / "out.txt").read_text() == "\n" * lines, done.stderr
        return int(done.stdout)

    assert peak_kb(10_000) - peak_kb(1) < 10_000


def test_an_input_fifo_is_read_once(capsys, monkeypatch, tmp_path):
    """-i <(zcat big.gz): a FIFO cannot be read twice, as a file is (once to check, once to translate)."""
    fifo = tmp_path / "lines"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text(f"{GERMAN[0]}\r\n\n{GERMAN[1]}"))
    writer.start()
    code, out, _ = cli(capsys, monkeypatch, "--beam-size", "1", "--from", "de", "-i", str(fifo))
    writer.join()
    assert code == 0 and out == f"{ENGLISH[0]}\r\n\n{ENGLISH[1]}\n"


def test_a_training_runs_directory_says_to_export_its_checkpoint(capsys, monkeypatch, tmp_path):
    """-m runs/NAME (the run's directory, as other toolkits take a model directory) said only
    'config.json: missing; is runs/NAME a model bundle written by mt-export?'."""
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints" / "last.pt").write_bytes(b"")
    code, _, err = cli(capsys, monkeypatch, "-m", str(run_dir), "Hallo")
    assert code == 1 and err == (f"mt-translate: error: {run_dir}: a training run's directory, not a bundle; export "
                                 f"its checkpoint with mt-export first, e.g. mt-export {run_dir / 'checkpoints' / 'last.pt'} "
                                 f"(mt-eval can score a checkpoint directly)\n")
    (run_dir / "final.pt").write_bytes(b"")
    code, _, err = cli(capsys, monkeypatch, "-m", str(run_dir), "Hallo")
    assert code == 1 and f"e.g. mt-export {run_dir / 'final.pt'} (mt-eval" in err


def test_an_argument_that_names_a_file_gets_a_note_pointing_to_i(capsys, monkeypatch, tmp_path):
    """'mt-translate notes.txt' translates the words 'notes.txt', as documented (files go through -i), and
    said nothing: a user who meant the file got its name back."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text(f"{GERMAN[0]}\n", encoding="utf-8")
    code, out, err = cli(capsys, monkeypatch, "--beam-size", "1", "notes.txt", GERMAN[1])
    assert code == 0 and out.splitlines()[1] == ENGLISH[1]        # the name's "translation" is the model's
    assert err == "mt-translate: note: 'notes.txt' is a file; its name is translated as text (-i notes.txt translates what it holds)\n"
    code, out, err = cli(capsys, monkeypatch, "-q", "--beam-size", "1", "notes.txt")
    assert code == 0 and err == ""
