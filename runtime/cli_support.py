"""What all the commands share: exit codes, --version, and no traceback for what the user can fix.

Exit status: 0 done, 1 error, 2 usage (a bad flag or argument), 130 interrupted (Ctrl-C), 143
terminated (SIGTERM: timeout, docker stop, systemd), and the special ones a command documents
(mt-export: 3 parity failed; mt-train: 3 training diverged).
A missing optional dependency (onnxruntime, torch, ...) is one line naming the extra to install, and
running out of memory (`out_of_memory_line`) one line saying so.
A closed pipe (`| head`) ends quietly with 0. A write to stderr that fails (its reader gone, its disk
full, stderr closed) is dropped: diagnostics lost never end the work. Only click is imported here:
`--help` and `--version` work without any extra installed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import threading

import click

import mtkit

# The extra that installs each optional module (top-level import name -> pip requirement).
EXTRAS = {
    "onnxruntime": "'mtkit[cpu]' (or 'mtkit[gpu]' for CUDA)",
    "torch": "'mtkit[train]'",
    "onnx": "'mtkit[train]'",
    "ctranslate2": "'mtkit[bench]'",
    "matplotlib": "'mtkit[train]' (or 'mtkit[bench]')",
}

CONTEXT = {"help_option_names": ["-h", "--help"]}
# What a write into a full, failing or closed stdout raises: said as "stdout: ..." when no file is named.
WRITE_ERRORS = {getattr(errno, name) for name in ("ENOSPC", "EIO", "EFBIG", "EDQUOT", "EBADF") if hasattr(errno, name)}


class CommandError(click.ClickException):
    """An error the user can fix, shown as `PROG: error: MESSAGE` with exit status 1."""


class Terminated(BaseException):
    """SIGTERM arrived. Raised where the program is, as KeyboardInterrupt is for Ctrl-C, so that the
    same cleanup runs (an unfinished output file is removed) instead of the process dying at once."""


def _raise_terminated(signum, frame):
    raise Terminated


@contextlib.contextmanager
def sigterm_raises():
    """SIGTERM raises Terminated while inside, then the previous handler is back. Not where SIGTERM is
    ignored (on purpose, as Python leaves SIGINT then), nor off the main thread (no handler can be set)."""
    previous = signal.getsignal(signal.SIGTERM)
    ours = previous is not signal.SIG_IGN and threading.current_thread() is threading.main_thread()
    if ours:
        signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        if ours:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def missing_extra(error: ImportError) -> str | None:
    """The line to show for an optional module that is not installed, or installed but failing to load (its
    shared library missing, built for another numpy), or None for any other ImportError."""
    name = (error.name or "").split(".")[0]
    if isinstance(error, ModuleNotFoundError) and name in EXTRAS:
        return f"{name} is not installed; install it with: pip install {EXTRAS[name]}"
    frame = error.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    raised_in = frame.tb_frame.f_globals.get("__name__", "").split(".")[0] if frame else ""
    if raised_in in EXTRAS:             # raised by the extra's own code as it loads
        return (f"{raised_in} is installed but cannot be loaded ({error}); reinstall it: "
                f"pip install --force-reinstall {EXTRAS[raised_in]}")
    return None


def out_of_memory_line(error: BaseException) -> str | None:
    """The line for running out of memory (a `ulimit -v`, a container's limit) as Python, numpy or a
    shared library says it: a MemoryError, a library that could not be mapped, a thread that could not
    start; None for any other error."""
    if isinstance(error, MemoryError):
        return f"out of memory ({error})" if str(error) else "out of memory"
    chain = [error, error.__cause__, error.__context__]      # numpy's ImportError wraps the loader's
    if isinstance(error, ImportError) and any("failed to map segment" in str(e) for e in chain if e):
        return "out of memory (a shared library could not be mapped)"
    if isinstance(error, RuntimeError) and "can't start new thread" in str(error):
        return "out of memory, or of threads (can't start new thread)"
    return None


def require(*modules: str) -> None:
    """Fail now if an optional module is missing (the line `Command` prints for it). Looked up, not
    imported, so a command can check before its slow start-up and import later."""
    import importlib.util

    for name in modules:
        if importlib.util.find_spec(name) is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


class Command(click.Command):
    """A click command with mtkit's exit statuses and error lines (see the module docstring)."""

    def main(self, args=None, prog_name=None, standalone_mode: bool = True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name or self.name, standalone_mode=False, **extra)
        prog = self.name
        with standard_streams():        # also for the error lines below
            try:
                with sigterm_raises():
                    code = super().main(args, prog_name or prog, standalone_mode=False, **extra)
                    sys.stdout.flush()      # a full stdout fails here, as one line below, not at exit (status 120)
            except click.UsageError as e:
                e.show()
                code = e.exit_code
            except click.ClickException as e:
                click.echo(f"{prog}: error: {e.format_message()}", err=True)
                code = e.exit_code
            except (click.Abort, KeyboardInterrupt):
                click.echo(f"{prog}: interrupted", err=True)
                code = 130
            except Terminated:
                click.echo(f"{prog}: terminated", err=True)
                code = 143
            except (ImportError, MemoryError, RuntimeError) as e:
                # Out of memory first: a library that could not be mapped is no broken install
                message = out_of_memory_line(e) or (missing_extra(e) if isinstance(e, ImportError) else None)
                if message is None:
                    raise
                click.echo(f"{prog}: error: {message}", err=True)
                code = 1
            except BrokenPipeError:         # --help | head: quiet, as in invoke
                quiet_stdout()
                code = 0
            except OSError as e:            # a write the commands do not guard (--help > /dev/full): one line
                stdout = not e.filename and e.errno in WRITE_ERRORS
                message = (f"{e.filename}: {e.strerror or e}" if e.filename else
                           f"stdout: cannot write ({e.strerror})" if stdout else str(e.strerror or e))
                click.echo(f"{prog}: error: {message}", err=True)
                if stdout:
                    quiet_stdout()          # what its buffer holds goes nowhere at exit, instead of failing again
                code = 1
        if isinstance(code, int) and code:
            sys.exit(code)          # success returns, as a function does (the console script exits 0)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            quiet_stdout()
            raise click.exceptions.Exit(0) from None


class ForgivingStderr:
    """stderr, whose failed writes are dropped: what a command says there is for the user, its work is
    what goes to stdout or its files, and a diagnostic that cannot be written must not end it (a
    BrokenPipeError would even read as stdout's closed pipe: exit 0, the output never written)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except (OSError, ValueError):       # ValueError: written to after it was closed
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def __getattr__(self, name):            # isatty, encoding, fileno, ...: the stream's own
        return getattr(self.stream, name)


class ClosedStdout:
    """sys.stdout when descriptor 1 is closed (`>&-`): each write fails as one into a closed descriptor
    does, said in one line (WRITE_ERRORS), not an AttributeError traceback nor results silently lost."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return 1                # /dev/null holds it (standard_streams)


@contextlib.contextmanager
def standard_streams():
    """Within the block, sys.stderr is a ForgivingStderr. A closed descriptor 0, 1 or 2 (`<&-`, `>&-`,
    `2>&-`) is /dev/null, so that no file opened later takes its number (and gets ONNX Runtime's log):
    stdin then reads nothing, as `< /dev/null`; stdout is a ClosedStdout; stderr takes nothing."""
    previous = sys.stdin, sys.stdout, sys.stderr
    if sys.stdin is None:       # the lowest free descriptor: 0, then 1, then 2, as these are opened in order
        sys.stdin = open(os.open(os.devnull, os.O_RDONLY), encoding="utf-8")
    if sys.stdout is None:
        os.open(os.devnull, os.O_WRONLY)
        sys.stdout = ClosedStdout()
    if sys.stderr is None:
        sys.stderr = open(os.open(os.devnull, os.O_WRONLY), "w", encoding="utf-8")
    if not isinstance(sys.stderr, ForgivingStderr):
        sys.stderr = ForgivingStderr(sys.stderr)
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = previous


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so that Python does not complain again of a closed pipe while exiting."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class Group(Command, click.Group):
    """A click group (mt-models) with the same exit statuses and error lines as `Command`."""


def command(name: str, cls: type[Command] = Command, **settings):
    """`@click.command` for an mtkit command: its name, `Command` (or `Group`), -h/--help and --version."""
    def decorate(callback) -> Command:
        cmd = click.command(name, cls=cls, context_settings=CONTEXT, **settings)(callback)
        return click.version_option(mtkit.__version__, "--version", prog_name=name, message="%(prog)s %(version)s")(cmd)
    return decorate


def run_and_exit(command: Command) -> None:
    """A console script's entry: run `command` on sys.argv, then end the process at once with its exit
    status (os._exit) once stdout and stderr are flushed, skipping the interpreter's teardown: freeing
    every module and object, ONNX Runtime's and OpenBLAS's exit handlers (~45 ms of a 0.33 s
    `mt-translate "Guten Morgen"` on the 2-core AMD EPYC; benchmarks/PERF_NOTES.md). The command has
    finished its work by then: output files are closed (text_io.atomic_output), and mtkit registers no
    atexit handlers. A traceback, or an exit status that is not a number, leaves the usual way."""
    with standard_streams():        # also for the flushes after the command
        try:
            command.main()
            code = 0
        except SystemExit as e:
            code = e.code
        if code is None:
            code = 0
        if not isinstance(code, int):
            sys.exit(code)
        try:
            sys.stdout.flush()
        except BrokenPipeError:   # a closed pipe (| head): quiet, as Command ends one
            pass
        except OSError as e:      # a full disk: what stdout still holds is lost; said once (the command may have)
            if not code:
                print(f"{command.name}: error: stdout: cannot write ({e.strerror or e})", file=sys.stderr)
                code = 1
        sys.stderr.flush()
    os._exit(code)            # also when a flush failed: the interpreter's own would fail again, as exit 120


def say_kept(prog: str, error: BaseException, kept: str) -> None:
    """After a run with resumable output ended by `error`: say what it kept, and that the same command
    goes on from there; Ctrl-C then ends as an interrupted command does."""
    ctrl_c = isinstance(error, KeyboardInterrupt)
    after_ctrl_c = "\n" if ctrl_c and sys.stderr.isatty() else ""        # a terminal shows "^C" there
    print(f"{after_ctrl_c}{prog}: {kept}; the same command goes on from there", file=sys.stderr)
    if ctrl_c:
        raise click.Abort() from None       # "interrupted", without another new line from click


def progress_bar():
    """The progress bar mt-translate and mt-eval show on stderr for a file (rich loads only here)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(TextColumn("translating"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), transient=True)
