"""The console scripts' entry points (pyproject.toml [project.scripts] names these functions).

Each imports its command only when called, inside the guard every script needs: Ctrl-C while the
command's modules still load (click, numpy, ONNX Runtime, torch: up to a second) ends as an
interrupted command does, `PROG: interrupted` and exit status 130, not a KeyboardInterrupt
traceback. From then on the command's own handling (cli_support.Command) says it; this catches what
arrives before it or after it. Nothing is imported here: start-up stays as quick.
Only the interpreter's start and the script's own first lines come before this guard; until Python
sets its SIGINT handler there, Ctrl-C ends the process quietly by the signal.
"""

from __future__ import annotations

import os
import sys


def _script(prog: str, target: str):
    """The entry of the console script `prog`, which calls `target` ("module:function")."""
    module, _, function = target.partition(":")

    def entry():
        try:
            __import__(module)      # the builtin: not even importlib to load first
            return getattr(sys.modules[module], function)()
        except (KeyboardInterrupt, Exception) as error:     # not SystemExit: the command's own exit
            if not interrupted(error):
                raise
            sys.stderr.write(f"\n{prog}: interrupted\n")   # after the terminal's ^C, as click writes it
            sys.stderr.flush()
            os._exit(130)       # no teardown of half-imported modules (as run_and_exit ends)

    entry.__name__ = entry.__qualname__ = prog.replace("-", "_")
    return entry


def interrupted(error: BaseException | None) -> bool:
    """Whether Ctrl-C led to `error`. An import it stops may say so as another exception caused by the
    KeyboardInterrupt: an extension module's "ImportError: initialization failed" (ONNX Runtime's),
    a class's "RuntimeError: Error calling __set_name__"."""
    seen = set()
    while error is not None and id(error) not in seen:      # a chain set by hand may loop
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


mt_train = _script("mt-train", "mtkit.train.cli:main")
mt_export = _script("mt-export", "mtkit.export.cli:main")
mt_translate = _script("mt-translate", "mtkit.runtime.cli:run")
mt_eval = _script("mt-eval", "mtkit.eval.cli:run")
mt_tui = _script("mt-tui", "mtkit.tui.cli:main")
mt_bench = _script("mt-bench", "mtkit.benchmarks.cli:main")
mt_models = _script("mt-models", "mtkit.runtime.models_cli:main")
mt_average = _script("mt-average", "mtkit.train.average:main")
mt_grow = _script("mt-grow", "mtkit.train.grow:main")
mt_serve = _script("mt-serve", "mtkit.runtime.serve_cli:run")
mt_score = _script("mt-score", "mtkit.runtime.score_cli:run")
