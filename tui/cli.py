"""The `mt-tui` command: options as the other mt-* commands have them, then the app."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import NoReturn

import click

from mtkit.runtime.cli_options import model_options
from mtkit.runtime.cli_support import CommandError, command, require


@command("mt-tui")
@model_options
@click.option("--glossary", metavar="FILE", help="Terms to translate one way (the format of mt-translate --glossary), "
                                                   "in every translation the app makes: as you type, the "
                                                   "alternatives, completions and whole files.")
def main(model: str | None, from_lang: str | None, to: str | None, provider: str, variant: str,
         threads: int | None, glossary: str | None) -> None:
    """Translate interactively in the terminal: live as you type, fully offline; ctrl+t translates a whole
    file (a document, a PDF, a book, subtitles). --from and --to set the direction it starts in; the
    direction control in the app changes it."""
    require("onnxruntime")          # one line naming the extra, before the terminal check
    if not (sys.stdin.isatty() and sys.stdout.isatty()):     # a full-screen app on a pipe never ends
        raise click.UsageError("mt-tui needs an interactive terminal; for files and pipes use mt-translate")
    from mtkit.runtime import Translator
    from mtkit.runtime.errors import TranslationError
    from mtkit.runtime.arguments import language_code

    from .given_glossary import GivenGlossary

    # The model, the options and the glossary are checked as mt-translate checks them, with its one-line
    # errors; the app then starts with the model loaded (ctrl+o and the provider switch load in the app).
    try:
        given = GivenGlossary.read(glossary) if glossary else None      # before the model: a bad file fails at once
        translator = Translator(model, provider=provider, threads=threads, variant=variant)
        if from_lang:               # checked, and picks the default target
            to = translator.target_from(from_lang, to)
        translator.tag_id(to)
    except TranslationError as e:   # a GlossaryError too
        raise CommandError(str(e)) from None
    if given and (problem := given.misfit(translator)):
        raise CommandError(problem)
    from .app import MTApp

    direction = (language_code(from_lang), language_code(to) or translator.default_language)
    run(MTApp(model_path=model, provider=provider, variant=variant, threads=threads, direction=direction,
              translator=translator, glossary=given))


def run(app, **options) -> NoReturn:
    """Run `app` (`App.run` `options`), then end the process at once with its return code."""
    # Not asyncio.run, and no interpreter teardown: both wait for the worker threads, so quitting
    # would wait for a translation still decoding (it cannot be interrupted). The terminal is
    # restored when run() returns; the process then ends as mt-translate's does (run_and_exit).
    app.run(loop=asyncio.new_event_loop(), **options)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(app.return_code or 0)


if __name__ == "__main__":
    main()
