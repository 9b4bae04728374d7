"""What the commands share (runtime/cli_support.py, runtime/cli_options.py): the same options with
the same help, --version, the exit statuses, and one line instead of a traceback when an extra is
missing.

The console scripts run in subprocesses. A missing extra is made real, without a second venv: a
`sitecustomize` on PYTHONPATH puts a meta-path finder in front of the others that finds nothing for
the packages named in MT_TEST_BLOCK, so importing them fails as it does where they are not
installed. The product code is not patched."""

from __future__ import annotations

import importlib.util
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import mtkit
from conftest import GERMAN, ENGLISH, ORT_THREADS
import office_files

BIN = Path(sys.executable).parent
COMMANDS = ["mt-translate", "mt-eval", "mt-tui", "mt-serve", "mt-score", "mt-train", "mt-export", "mt-bench"]
EXTRAS = "onnxruntime,torch,ctranslate2"
TATOEBA = Path(__file__).parent / "fixtures" / "tatoeba"

BLOCKER = '''\
import os
import sys

BLOCKED = set(os.environ.get("MT_TEST_BLOCK", "").split(","))


class NotInstalled:
    """Finds none of the blocked packages, as where they are not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
'''


@pytest.fixture(scope="module")
def without(tmp_path_factory):
    """run(block, command, *args): a console script with the packages in `block` missing."""
    shim = tmp_path_factory.mktemp("no-extras")
    (shim / "sitecustomize.py").write_text(BLOCKER)

    def run(block: str, command: str, *args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": str(shim), "MT_TEST_BLOCK": block, "OMP_NUM_THREADS": "1"}
        return subprocess.run([str(BIN / command), *map(str, args)], capture_output=True, text=True, timeout=120,
                              env=env, stdin=subprocess.DEVNULL)
    return run


def test_the_blocker_works(without):
    probe = without(EXTRAS, "python", "-c", "import onnxruntime")
    assert probe.returncode == 1 and "No module named 'onnxruntime'" in probe.stderr
    assert without("", "python", "-c", "import onnxruntime").returncode == 0


@pytest.mark.parametrize("command", COMMANDS)
def test_help_version_and_usage_errors_need_no_extra(without, command):
    version = without(EXTRAS, command, "--version")
    assert version.returncode == 0 and version.stdout == f"{command} {mtkit.__version__}\n", version.stderr
    shown = without(EXTRAS, command, "--help")
    assert shown.returncode == 0 and shown.stdout.startswith(f"Usage: {command} ") and "--version" in shown.stdout
    bad = without(EXTRAS, command, "--no-such-flag")
    assert bad.returncode == 2 and "No such option '--no-such-flag'" in bad.stderr
    assert "Traceback" not in version.stderr + shown.stderr + bad.stderr


@pytest.mark.parametrize("block, command, args, extras", [
    (EXTRAS, "mt-translate", ["Tom nickt."], ["'mtkit[cpu]'", "'mtkit[gpu]'"]),
    (EXTRAS, "mt-eval", ["-s", TATOEBA / "dev.de", "-r", TATOEBA / "dev.en"], ["'mtkit[cpu]'", "'mtkit[gpu]'"]),
    (EXTRAS, "mt-tui", [], ["'mtkit[cpu]'", "'mtkit[gpu]'"]),
    (EXTRAS, "mt-serve", ["--port", "0"], ["'mtkit[cpu]'", "'mtkit[gpu]'"]),
    (EXTRAS, "mt-score", [TATOEBA / "dev.de", TATOEBA / "dev.en"], ["'mtkit[cpu]'", "'mtkit[gpu]'"]),
    (EXTRAS, "mt-eval", ["-m", "CHECKPOINT", "-s", TATOEBA / "dev.de", "-r", TATOEBA / "dev.en"], ["'mtkit[train]'"]),
    (EXTRAS, "mt-train", ["configs/multi30k_de_en.toml"], ["'mtkit[train]'"]),
    (EXTRAS, "mt-export", ["CHECKPOINT"], ["'mtkit[train]'"]),
    (EXTRAS, "mt-bench", ["CHECKPOINT"], ["'mtkit[train]'"]),
    ("ctranslate2", "mt-bench", ["CHECKPOINT"], ["'mtkit[bench]'"]),
])
def test_a_missing_extra_is_one_line_naming_it(without, fixture_bundle, fixture_checkpoint, monkeypatch,
                                               block, command, args, extras):
    if block == "ctranslate2" and importlib.util.find_spec("torch") is None:
        pytest.skip("this case blocks ctranslate2 alone: it needs torch installed")
    monkeypatch.setenv("MT_MODEL", str(fixture_bundle))
    out = without(block, command, *[fixture_checkpoint if a == "CHECKPOINT" else a for a in args])
    assert out.returncode == 1 and out.stdout == "", out.stderr
    [line] = out.stderr.splitlines()
    assert line.startswith(f"{command}: error: ") and "is not installed" in line and "Traceback" not in out.stderr
    assert all(extra in line for extra in extras), line


def option_lines(command, runner=CliRunner()) -> dict[str, str]:
    """Each option's entry in `command --help` (flags, metavar, help, default), whitespace normalised,
    by its long flag (a wide terminal, so that no help text wraps)."""
    shown = runner.invoke(command, ["--help"], terminal_width=1000, max_content_width=1000).output
    options = shown.split("Options:\n", 1)[1].split("\n\n", 1)[0]          # the epilog follows a blank line
    lines, flag = {}, None
    for line in options.splitlines():
        words = line.split()
        if words[0].startswith("-"):        # an option's first line; its help may follow on the next
            flag = next(w.rstrip(",") for w in words if w.startswith("--"))
            lines[flag] = ""
        lines[flag] = " ".join([*lines[flag].split(), *words])
    return lines


def test_shared_options_read_the_same_in_every_command():
    from mtkit.runtime.cli import main as translate
    from mtkit.eval.cli import main as evaluate
    from mtkit.tui.cli import main as tui

    shared = ["--model", "--provider", "--variant", "--threads"]
    seen = {name: option_lines(cmd) for name, cmd in (("translate", translate), ("eval", evaluate), ("tui", tui))}
    for option in shared:
        assert seen["translate"][option] == seen["eval"][option] == seen["tui"][option], option
    # mt-eval's languages come from its files and are never detected: its own --from and --to (979f4ec)
    for option in ("--from", "--to"):
        assert seen["translate"][option] == seen["tui"][option] != seen["eval"][option], option
    assert "never detected" in seen["eval"]["--from"]
    # The decoding flags come from DecodeOptions: mt-eval has them all but the n-best and the alignment.
    decoding = ["--greedy", "--beam-size", "--length-penalty", "--sampling", "--temperature", "--top-k", "--top-p",
                "--seed", "--no-repeat-ngram", "--max-length-ratio"]
    for option in decoding:
        assert seen["translate"][option] == seen["eval"][option], option
    assert "--n-best" in seen["translate"] and "--n-best" not in seen["eval"]


def test_interrupted_exits_130_without_a_traceback(fixture_bundle):
    """Ctrl-C while mt-translate waits for the next line of stdin."""
    proc = subprocess.Popen([str(BIN / "mt-translate"), "-m", str(fixture_bundle), "--threads", str(ORT_THREADS),
                             "--batch-size", "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1"},
                            # A run started in the background (nohup, `&`) inherits SIGINT ignored.
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        proc.stdin.write(f"{GERMAN[0]}\n".encode())
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready and proc.stdout.readline().decode() == ENGLISH[0] + "\n"    # it is now reading stdin
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "mt-translate: interrupted" in err.decode()
    assert "Traceback" not in err.decode()


# Ctrl-C at a chosen moment of start-up, made exact: a `sitecustomize` on PYTHONPATH sends the process
# SIGINT as it starts to import the module named in MT_TEST_INTERRUPT_AT (after writing a byte to the
# descriptor MT_TEST_READY_FD, where given), as a user's Ctrl-C then would. Timing a signal from outside
# instead would be flaky: it may land in the interpreter's own start (site, .pth files), before any
# mtkit code runs.
INTERRUPTER = '''\
import os
import signal
import sys

AT = os.environ["MT_TEST_INTERRUPT_AT"]
READY = os.environ.get("MT_TEST_READY_FD")


class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == AT:
            sys.meta_path.remove(self)
            if READY:
                os.write(int(READY), b"x")
            else:
                os.kill(os.getpid(), signal.SIGINT)
        return None


sys.meta_path.insert(0, CtrlC())
'''


@pytest.fixture(scope="module")
def interrupter(tmp_path_factory) -> dict:
    """The environment that loads INTERRUPTER (MT_TEST_INTERRUPT_AT is still to add)."""
    shim = tmp_path_factory.mktemp("ctrl-c")
    (shim / "sitecustomize.py").write_text(INTERRUPTER)
    return {**os.environ, "PYTHONPATH": str(shim), "OMP_NUM_THREADS": "1"}


def start(args: list, env: dict, **popen) -> subprocess.Popen:
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            # A run started in the background (nohup, `&`) inherits SIGINT ignored.
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **popen)


def console_scripts() -> list[str]:
    """Every console script the installed mtkit has (pyproject.toml [project.scripts])."""
    from importlib.metadata import distribution

    return sorted(ep.name for ep in distribution("mtkit").entry_points if ep.group == "console_scripts")


@pytest.mark.parametrize("module", ["mtkit.runtime", "click", "numpy", "onnxruntime", "sentencepiece"])
def test_ctrl_c_while_importing_exits_130_without_a_traceback(fixture_bundle, interrupter, module):
    """Ctrl-C in mt-translate's first moments, while its modules load (from the first after the console
    script's own lines), is the same one line and status 130 as later."""
    proc = start([str(BIN / "mt-translate"), "-m", str(fixture_bundle), "--threads", str(ORT_THREADS), GERMAN[0]],
                 {**interrupter, "MT_TEST_INTERRUPT_AT": module})
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, err.decode(), out) == (130, "\nmt-translate: interrupted\n", b"")


def test_every_console_script_is_quiet_when_interrupted_while_importing(interrupter):
    """Each console script, interrupted as it imports click (each does, before anything else of its own)."""
    scripts = console_scripts()
    assert "mt-translate" in scripts and "mt-serve" in scripts
    for script in scripts:
        proc = start([str(BIN / script), "--help"], {**interrupter, "MT_TEST_INTERRUPT_AT": "click"})
        out, err = proc.communicate(timeout=120)
        assert (script, proc.returncode, err.decode(), out) == (script, 130, f"\n{script}: interrupted\n", b"")


@pytest.mark.parametrize("raised, status, line", [
    # An extension module stopped by Ctrl-C as it loads (ONNX Runtime's) says it so.
    ("raise ImportError('initialization failed') from KeyboardInterrupt()", 130, "\nmt-x: interrupted\n"),
    ("raise KeyboardInterrupt", 130, "\nmt-x: interrupted\n"),
    ("raise ImportError('a real one')", 1, "ImportError: a real one\n"),     # not hidden
    ("raise SystemExit(3)", 3, ""),                                         # the command's own exit
])
def test_a_console_script_says_interrupted_for_what_ctrl_c_caused(tmp_path, raised, status, line):
    (tmp_path / "command.py").write_text(f"def main():\n    {raised}\n")
    script = "from mtkit.scripts import _script\n_script('mt-x', 'command:main')()\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == status and done.stderr.endswith(line), done.stderr


def test_ctrl_c_at_any_moment_of_a_translation_is_quiet(fixture_bundle, interrupter):
    """A real Ctrl-C at a range of moments, from the first import after the console script's own lines
    (a byte on a pipe says it has begun) to the end: 130 and one line, or done (0) if it finished."""
    for delay in [0, 0.005, 0.01, 0.02, 0.04, 0.08, 0.15, 0.3]:
        ready, signal_pipe = os.pipe()
        env = {**interrupter, "MT_TEST_INTERRUPT_AT": "mtkit.runtime", "MT_TEST_READY_FD": str(signal_pipe)}
        proc = start([str(BIN / "mt-translate"), "-m", str(fixture_bundle), "--threads", str(ORT_THREADS),
                      GERMAN[0]], env, pass_fds=[signal_pipe])
        os.close(signal_pipe)
        try:
            assert os.read(ready, 1) == b"x"
        finally:
            os.close(ready)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        outcome = (delay, proc.returncode, err.decode())
        assert outcome in [(delay, 130, "\nmt-translate: interrupted\n"), (delay, 0, "")], outcome
        assert proc.returncode == 130 or out.decode() == ENGLISH[0] + "\n"


# ----- writing fails: a full disk -----------------------------------------------------------------------

FULL = "cannot write (No space left on device)"


def full_disk_cases(tmp_path) -> list[tuple[list[str], str]]:
    """(a command line, what it writes into: -o /dev/full, or stdout sent there)."""
    de, en, doc = tmp_path / "in.de", tmp_path / "in.en", tmp_path / "in.docx"
    de.write_text("".join(line + "\n" for line in GERMAN[:3]), encoding="utf-8")
    en.write_text("".join(line + "\n" for line in ENGLISH[:3]), encoding="utf-8")
    doc.write_bytes(office_files.docx(office_files.paragraph(office_files.run(GERMAN[0]))))
    return [(["mt-translate", "-i", de, "-o", "/dev/full"], "/dev/full"),      # lines, going on after a failure
            (["mt-translate", GERMAN[0]], "stdout"),
            (["mt-translate", "-i", doc, "-o", "/dev/full"], "/dev/full"),     # a document, bytes
            (["mt-translate", "-i", doc], "stdout"),
            (["mt-score", de, en, "-o", "/dev/full"], "/dev/full"),
            (["mt-score", de, en], "stdout")]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_a_full_disk_is_one_line(fixture_bundle, tmp_path, unbuffered):
    """/dev/full fails every write with ENOSPC, as a full disk does: one line naming what could not be
    written, exit status 1, for a file and for stdout, whether stdout's writes fail at once
    (PYTHONUNBUFFERED) or only when its buffer is flushed, at the end (also for --help and mt-models,
    whose writes no code of ours guards); not the interpreter's "Exception ignored" and exit 120."""
    cases = [*full_disk_cases(tmp_path), (["mt-translate", "--help"], "stdout"), (["mt-models", "list"], "stdout")]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": unbuffered}
    for (command, *args), where in cases:
        prog = [str(BIN / command)]
        if command != "mt-models":
            prog += ["-m", str(fixture_bundle), "--threads", str(ORT_THREADS)]
        if command == "mt-translate":
            prog += ["--from", "de"]
        with open("/dev/full", "wb") as full:
            done = subprocess.run([*prog, *map(str, args)], stdout=None if "-o" in args else full,
                                  stderr=subprocess.PIPE, text=True, timeout=120, stdin=subprocess.DEVNULL, env=env)
        assert (done.returncode, done.stderr) == (1, f"{command}: error: {where}: {FULL}\n"), args


@pytest.mark.skipif(not hasattr(os, "fork"), reason="RLIMIT_FSIZE is POSIX")
def test_a_write_failing_mid_file_says_what_it_kept_and_the_same_command_goes_on(fixture_bundle, tmp_path):
    """A disk that fills up in the middle of the output: the lines said to be kept are those the partial
    file holds (a line cut off is not one), and once there is room, the same command goes on to the
    whole translation. The disk fills as a file size limit makes it (RLIMIT_FSIZE: a write past it
    fails with EFBIG), in the command's process only."""
    import resource

    lines = (GERMAN * 4)[:300]
    source, out = tmp_path / "in.de", tmp_path / "out.en"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    command = [str(BIN / "mt-translate"), "-m", str(fixture_bundle), "--threads", str(ORT_THREADS), "--from", "de",
               "--beam-size", "1", "--batch-size", "16", "-i", str(source), "-o", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MT_ORT_CACHE": "0"}     # only the output is written

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))

    full = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, preexec_fn=small_disk)
    partial = tmp_path / ".out.en.partial"
    kept = partial.read_bytes().count(b"\n")
    assert 0 < kept < 300 and not out.exists()
    assert (full.returncode, full.stderr.splitlines()) == (1, [
        f"mt-translate: {kept} of 300 lines are kept in {partial}; the same command goes on from there",
        f"mt-translate: error: {out}: cannot write (File too large)"])
    again = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert again.returncode == 0 and again.stderr == (f"mt-translate: note: going on after the {kept} lines an "
                                                      f"interrupted run wrote ({partial})\n")
    assert out.read_text(encoding="utf-8") == "".join(ENGLISH[GERMAN.index(line)] + "\n" for line in lines)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.de", "out.en"]


def test_a_closed_pipe_ends_quietly(fixture_bundle, tmp_path):
    """`mt-translate ... | head -1`: once the reader is gone the rest is not written, and that is no error."""
    source = tmp_path / "in.de"
    source.write_text("".join(line + "\n" for line in GERMAN * 3), encoding="utf-8")
    proc = subprocess.Popen([str(BIN / "mt-translate"), "-m", str(fixture_bundle), "--threads", str(ORT_THREADS),
                             "--from", "de", "--format", "jsonl", "-i", str(source)],   # more than a pipe holds
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        assert proc.stdout.readline().startswith(b'{"line": 1,')
        proc.stdout.close()
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert (proc.returncode, err) == (0, b"")


# ----- stderr fails: its diagnostics are lost, never the work -------------------------------------------

def wrapped_source(tmp_path) -> Path:
    """A file whose lines break off mid-sentence: mt-translate notes on stderr that it looks wrapped."""
    source = tmp_path / "in.de"
    source.write_text("".join(line.rstrip(".!?") + " und dann noch etwas mehr\n" for line in GERMAN[:6]),
                      encoding="utf-8")
    return source


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_stderr_that_cannot_be_written_does_not_stop_the_translation(fixture_bundle, tmp_path):
    """`mt-translate -i in -o out 2>&1 | head -1` (the reader of stderr gone), `2>/dev/full` (the log's
    disk full) and `2>&-` (closed): a note lost on stderr does not end the run; it ended at the first
    (exit 0, as a closed stdout does, with no output file, when the pipe closed)."""
    source = wrapped_source(tmp_path)
    command = [str(BIN / "mt-translate"), "-m", str(fixture_bundle), "--threads", str(ORT_THREADS), "--from", "de",
               "-i", str(source)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    reference = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert reference.returncode == 0 and "looks like wrapped paragraphs" in reference.stderr

    read_end, write_end = os.pipe()
    os.close(read_end)                  # the reader is gone before the first note
    with open("/dev/full", "wb") as full:
        for name, stderr in [("pipe", write_end), ("full", full), ("closed", None)]:
            out = tmp_path / f"out-{name}.en"
            closed = {"preexec_fn": lambda: os.close(2)} if stderr is None else {}
            done = subprocess.run([*command, "-o", str(out)], stderr=stderr, stdout=subprocess.PIPE, timeout=120,
                                  env=env, **closed)
            assert done.returncode == 0, name
            assert out.read_text(encoding="utf-8") == reference.stdout, name
    os.close(write_end)


def test_a_closed_stdin_or_stdout_is_one_line_not_a_traceback(fixture_bundle):
    """`mt-translate <&-` reads nothing, as from /dev/null; `mt-translate TEXT >&-` (and mt-models)
    cannot write its result: one line saying so, exit 1. Both were an AttributeError traceback."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    translate = [str(BIN / "mt-translate"), "-m", str(fixture_bundle), "--threads", str(ORT_THREADS), "--from", "de"]
    no_stdin = subprocess.run(translate, capture_output=True, text=True, timeout=120, env=env,
                              preexec_fn=lambda: os.close(0))
    assert (no_stdin.returncode, no_stdin.stdout, no_stdin.stderr) == (0, "", "")
    for command in [[*translate, GERMAN[0]], [str(BIN / "mt-models"), "list"]]:
        no_stdout = subprocess.run(command, stderr=subprocess.PIPE, text=True, timeout=120, env=env,
                                   preexec_fn=lambda: os.close(1))
        name = Path(command[0]).name
        assert (no_stdout.returncode, no_stdout.stderr) == (1, f"{name}: error: stdout: cannot write "
                                                               f"(Bad file descriptor)\n"), name


def test_an_extra_installed_but_broken_is_one_line(tmp_path, fixture_bundle):
    """onnxruntime installed but failing to load (its shared library missing or built for another numpy)
    gave ImportError's traceback: only a module not installed at all was one line."""
    broken = tmp_path / "onnxruntime"
    broken.mkdir()
    (broken / "__init__.py").write_text(
        "raise ImportError('libonnxruntime.so.1: cannot open shared object file: No such file or directory')\n")
    done = subprocess.run([str(BIN / "mt-translate"), "-m", str(fixture_bundle), "Hallo"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == ("mt-translate: error: onnxruntime is installed but cannot be loaded (libonnxruntime.so.1: "
                           "cannot open shared object file: No such file or directory); reinstall it: pip install "
                           "--force-reinstall 'mtkit[cpu]' (or 'mtkit[gpu]' for CUDA)\n")
