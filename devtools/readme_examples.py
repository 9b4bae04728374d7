"""Run the self-contained `mt-translate` examples of the README and docs/documents.md and show where the
output now differs.

For whoever changes the shipped model or what the runtime hands it: their console blocks show
real outputs, and a new model changes some of them. Only examples that need nothing else are run (no
files, pipes, other models or devices); a JSON line is compared without its timings. Not a test: a
model's output is not something the test suite may assert.

    python devtools/readme_examples.py [FILE.md ...] [--mt-translate PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

NEEDS_MORE = re.compile(r"(^|\s)(-i|--input|-o|--output|-m|--model|--provider|--prefixes|--glossary)(\s|$)|[|<>]")


def examples(readme: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) of each `$ mt-translate ...` line in a console block."""
    found, block = [], None
    for line in readme.splitlines():
        if line.startswith("```"):
            block = [] if line.strip() == "```console" and block is None else None
            continue
        if block is None:
            continue
        if line.startswith("$ "):
            block.append((line[2:].split("  #")[0].strip(), []))
            found.append(block[-1])
        elif block:
            block[-1][1].append(line)
    return [(command, expected) for command, expected in found
            if command.startswith("mt-translate ") and not NEEDS_MORE.search(command)]


def comparable(line: str) -> str:
    """A line as compared: a JSON line without its timings, canonically written."""
    if line.startswith("{"):
        try:
            record = json.loads(line)
        except ValueError:
            return line
        record.pop("timings", None)
        return json.dumps(record, ensure_ascii=False, sort_keys=True)
    return line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parents[1]
    parser.add_argument("pages", nargs="*", default=[root / "README.md", root / "docs" / "documents.md"], type=Path)
    parser.add_argument("--mt-translate", default=str(Path(sys.executable).with_name("mt-translate")))
    args = parser.parse_args()
    differing = 0
    runs = [run for page in args.pages for run in examples(page.read_text(encoding="utf-8"))]
    with tempfile.TemporaryDirectory() as cwd:              # away from the checkout and its files
        for command, expected in runs:
            argv = [args.mt_translate, *shlex.split(command)[1:]]
            done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=300)
            got = [line for line in (done.stdout + done.stderr).splitlines() if line]
            if Counter(map(comparable, got)) != Counter(map(comparable, (e for e in expected if e))):
                differing += 1
                print(f"$ {command}\n  shown:\n" + "".join(f"    {e}\n" for e in expected)
                      + "  now:\n" + "".join(f"    {g}\n" for g in got))
    print(f"{len(runs)} examples run, {differing} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
