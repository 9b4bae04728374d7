"""The `mt-tui` command: options as the other mt-* commands have them, then the app."""

from __future__ import annotations

from mtkit.runtime.cli_options import model_options
from mtkit.runtime.cli_support import command, require


@command("mt-tui")
@model_options
def main(model: str | None, from_lang: str | None, to: str | None, provider: str, variant: str,
         threads: int | None) -> None:
    """Translate interactively in the terminal: live as you type, fully offline."""
    require("onnxruntime")          # one line now rather than an error inside the app (imported later, in a worker)
    from .app import MTApp          # after the check: --help and errors stay quick

    MTApp(model_path=model, provider=provider, variant=variant, threads=threads, direction=(from_lang, to)).run()


if __name__ == "__main__":
    main()
