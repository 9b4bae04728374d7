"""Run the console examples of the README and the docs pages and show where the output now differs.

For whoever changes the shipped model or what the runtime hands it: their console blocks show
real outputs, and a new model changes some of them. Each block runs as a short shell session in an
empty directory: a `$ cat FILE` or `$ paste A B` of a file that does not exist yet writes it from the
lines shown (the example's input), and every other command runs if it needs nothing the block does
not give (no other models, devices, servers or files) and uses only mt-translate, mt-score and a few
text tools; its output is compared with the lines shown, a JSON line without its timings. Not a test:
a model's output is not something the test suite may assert.

    python devtools/readme_examples.py [FILE.md ...] [--bin DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

PROGRAMS = {"mt-translate", "mt-score", "printf", "echo", "cat", "paste", "sed", "head", "tail", "wc", "sort"}
NEEDS_MORE = re.compile(r"(^|\s)(-m|--model|--provider)(\s|$)|\$\?")    # other models, devices, exit codes
READS = {"-i", "--input", "--glossary", "<"}                              # the next word is a file read
WRITES = {"-o", "--output", ">"}
SEPARATORS = {"|", "&&", ";"}


def blocks(page: str) -> list[list[tuple[str, list[str]]]]:
    """Each console block's (command, lines shown after it)."""
    found, block = [], None
    for line in page.splitlines():
        if line.startswith("```"):
            if line.strip() == "```console" and block is None:
                block = []
                found.append(block)
            else:
                block = None
        elif block is not None:
            if line.startswith("$ "):
                block.append((line[2:].split("  #")[0].strip(), []))
            elif block:
                block[-1][1].append(line)
    return found


def words(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    return list(lexer)


def files(command: str) -> tuple[list[str], list[str], list[str]]:
    """(programs, files read, files written) of a command line."""
    programs, reads, writes = [], [], []
    ws = words(command)
    for i, word in enumerate(ws):
        if i == 0 or ws[i - 1] in SEPARATORS:
            programs.append(word)
        elif ws[i - 1] in READS:
            reads.append(word)
        elif ws[i - 1] in WRITES:
            writes.append(word)
        elif programs[-1] in {"cat", "paste"} or programs[-1] == "mt-score" and "." in word:   # not an option's value
            if not word.startswith("-") and word not in SEPARATORS:
                reads.append(word)
    return programs, [name for name in reads if name not in writes], writes     # not what the line writes first


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


def run_block(block: list[tuple[str, list[str]]], env: dict) -> list[tuple[str, list[str], list[str]]]:
    """(command, shown, got) of each command of the block that ran."""
    ran, missing = [], set()
    with tempfile.TemporaryDirectory() as cwd:              # away from the checkout and its files
        here = Path(cwd)
        for command, shown in block:
            programs, reads, writes = files(command)
            input_file = re.fullmatch(r"(cat|paste) (\S+)( \S+)?", command)
            if input_file and not any((here / name).exists() or name in missing for name in reads):
                columns = [line.split("\t") for line in shown]
                for k, name in enumerate(reads):           # the example's input, as shown
                    (here / name).write_text("".join(f"{row[k] if k < len(row) else ''}\n" for row in columns),
                                             encoding="utf-8")
                continue
            if (not set(programs) <= PROGRAMS or NEEDS_MORE.search(command)
                    or not any(p in ("mt-translate", "mt-score") for p in programs) and not reads and not writes
                    or any(not (here / name).exists() for name in reads)):
                missing.update(writes)
                continue
            done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=cwd, env=env,
                                  timeout=300)
            ran.append((command, shown, [line for line in (done.stdout + done.stderr).splitlines() if line]))
    return ran


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parents[1]
    pages = ["README.md", *(f"docs/{name}.md" for name in ("translate", "documents", "models", "evaluation", "serve"))]
    parser.add_argument("pages", nargs="*", default=[root / page for page in pages], type=Path,
                        help="the pages with console examples (default: the README and the docs pages that have them)")
    parser.add_argument("--bin", default=str(Path(sys.executable).parent), help="where mt-translate and mt-score are")
    args = parser.parse_args()
    env = {**os.environ, "PATH": f"{args.bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    runs, differing = 0, 0
    for page in args.pages:
        for block in blocks(page.read_text(encoding="utf-8")):
            for command, shown, got in run_block(block, env):
                runs += 1
                if Counter(map(comparable, got)) != Counter(map(comparable, (line for line in shown if line))):
                    differing += 1
                    print(f"{page.name}: $ {command}\n  shown:\n" + "".join(f"    {e}\n" for e in shown)
                          + "  now:\n" + "".join(f"    {g}\n" for g in got))
    print(f"{runs} examples run, {differing} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
