"""Render an SVG screenshot of mt-tui translating some text (for the README's docs/tui.svg).

    python -m mtkit.tui.screenshot -m models/NAME -o docs/tui.svg --text "Wo ist der Bahnhof?"

The app runs headless at a fixed size on the real runtime; the screenshot is taken once the
translation is on screen, with the chosen panel open.
"""

from __future__ import annotations

import asyncio

import click

from .app import MTApp
from .panels import PANELS
from .pilot import settle


async def render(app: MTApp, text: str, panel: str, size: tuple[int, int], out: str) -> None:
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        source = app.editors.source
        source.cursor_blink = False
        source.insert(text)
        await settle(pilot)
        source.move_cursor((0, 0))                 # the panels show the first line
        app.panels.open(panel)
        await pilot.pause()
        app.save_screenshot(out)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-m", "--model", default=None, metavar="PATH", help="Model bundle (default: as mt-tui).")
@click.option("-o", "--output", default="docs/tui.svg", show_default=True, help="SVG file to write.")
@click.option("--text", default="Ich versuche, jeden Monat zehn Prozent meines Gehalts zu sparen.",
              show_default=True, help="Source text to type (\\n for more lines).")
@click.option("--panel", type=click.Choice(list(PANELS)), default="alignment", show_default=True)
@click.option("--size", default="110x34", show_default=True, help="Terminal size, COLUMNSxROWS.")
@click.option("--provider", type=click.Choice(["auto", "cpu", "cuda"]), default="cpu", show_default=True)
def main(model: str | None, output: str, text: str, panel: str, size: str, provider: str) -> None:
    """Write an SVG screenshot of mt-tui translating TEXT."""
    columns, rows = (int(n) for n in size.lower().split("x"))
    app = MTApp(model_path=model, provider=provider)
    asyncio.run(render(app, text.replace("\\n", "\n"), panel, (columns, rows), output))
    if app.translator is None:
        raise click.ClickException(f"no model loaded: {app.errors.problems.get('model', '')}")
    click.echo(f"wrote {output}")


if __name__ == "__main__":
    main()
