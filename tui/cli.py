"""The `mt-tui` command: options as the other mt-* commands have them, then the app."""

from __future__ import annotations

import sys

import click

from mtkit.runtime.cli_options import model_options
from mtkit.runtime.cli_support import CommandError, command, require


@command("mt-tui")
@model_options
def main(model: str | None, from_lang: str | None, to: str | None, provider: str, variant: str,
         threads: int | None) -> None:
    """Translate interactively in the terminal: live as you type, fully offline."""
    require("onnxruntime")          # one line now rather than an error inside the app (imported later, in a worker)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):     # a full-screen app on a pipe never ends
        raise click.UsageError("mt-tui needs an interactive terminal; for files and pipes use mt-translate")
    if model is not None:           # a mistyped -m fails here; a bad bundle shows in the app, where another can be opened
        from mtkit.runtime.bundle import locate
        from mtkit.runtime.errors import BundleError

        try:
            locate(model)
        except BundleError as e:
            raise CommandError(str(e)) from None
    from .app import MTApp          # after the check: --help and errors stay quick

    MTApp(model_path=model, provider=provider, variant=variant, threads=threads, direction=(from_lang, to)).run()


if __name__ == "__main__":
    main()
