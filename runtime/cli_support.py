"""What the runtime's command-line tools share: error exits and the interrupt / broken-pipe handling."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def exit_with_error(prog: str, message: str, code: int = 1):
    print(f"{prog}: error: {message}", file=sys.stderr)
    sys.exit(code)


def run_command(prog: str, run: Callable, args) -> None:
    """Run a command: Ctrl-C exits 130 without a traceback, and a closed pipe (`| head`) exits quietly."""
    try:
        run(args)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:
        # Point stdout at /dev/null so Python does not complain again while exiting.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
