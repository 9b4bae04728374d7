"""`mt-translate`: translate text given as arguments, in a file, or on stdin, one line per line.

Line counts are kept: an empty input line gives an empty output line. Imports are lazy, so that
`--help` and the start-up of a one-line translation stay quick (no rich unless a progress bar
shows, never sacrebleu or torch).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import io
import itertools
import os
import re
import sys
from pathlib import Path

import click
from click.core import ParameterSource

from .cli_options import budget_options, decoding_options, model_options
from .cli_support import CommandError, command, progress_bar, run_and_exit, say_kept
from .documents import BYTES, METHODS, suffix

PROG = "mt-translate"
# Each flag that translates a whole document: the Translator method it calls (runtime/documents.py), and
# its help. In this order they are offered and named in messages.
DOCUMENTS = {
    "--html": ("translate_html", "The input is HTML: each TEXT, or the whole of --input or stdin, is one page, whose "
                                 "text is translated and whose markup is kept."),
    "--subtitles": ("translate_subtitles", "The input is an SRT or WebVTT file (-i or stdin): each cue's text is "
                                           "translated; numbers, timings and layout are kept."),
    "--markdown": ("translate_markdown", "The input is Markdown (-i or stdin): its text is translated; code, links' "
                                         "targets and layout are kept."),
    "--paragraphs": ("translate_paragraphs", "The input is plain text in wrapped paragraphs (-i or stdin): each "
                                             "paragraph is translated as one text and wrapped again as it was."),
    "--po": ("translate_po", "The input is a gettext catalog, .po or .pot (-i or stdin): each message without a "
                             "translation gets one, flagged fuzzy; --to defaults to its Language."),
    "--json": ("translate_json", "The input is JSON, such as a locale file (-i or stdin): its string values are "
                                 "translated; keys, structure and indentation are kept."),
    "--xliff": ("translate_xliff", "The input is XLIFF 1.2 or 2.x (-i or stdin): each unit without a target gets "
                                   "one, marked for review; inline codes are kept; --to defaults to its target "
                                   "language."),
    "--docx": ("translate_docx", "The input is a Word document, .docx (-i or stdin): its text is translated; "
                                 "formatting, tables, pictures, fields and links are kept."),
    "--pptx": ("translate_pptx", "The input is a PowerPoint presentation, .pptx (-i or stdin): the text of its "
                                 "slides and notes is translated; layout, formatting, pictures and links are kept."),
    "--xlsx": ("translate_xlsx", "The input is an Excel workbook, .xlsx (-i or stdin): the text of its cells and "
                                 "comments is translated; numbers, formulas and formatting are kept."),
    "--odf": ("translate_opendocument", "The input is an OpenDocument file, .odt, .odp or .ods (-i or stdin): its "
                                        "text is translated; formatting, pictures and links are kept."),
    "--epub": ("translate_epub", "The input is an EPUB book (-i or stdin): the text of its chapters and table of "
                                 "contents is translated; markup, images and styles are kept."),
    "--pdf": ("translate_pdf", "The input is a PDF file (-i or stdin): each page's text is translated and set where "
                               "it stood; pictures, drawings and links are kept. Needs 'mtkit[pdf]'."),
}
BINARY = {flag for flag, (method, _) in DOCUMENTS.items() if method in BYTES}
MOST_WARNINGS = 5           # warnings shown for one document or line; the rest are counted
TAG = r"<(?:/?[A-Za-z][\w-]*(?:\s[^<>]*)?/?|!--.*?--|!DOCTYPE[^>]*)>"   # for a hint to use --html (compiled when used)

EPILOG = """\b
Examples:
  mt-translate "Guten Morgen!"
  mt-translate --to de "Good morning!"
  cat in.de | mt-translate --to en > out.en
  mt-translate -i in.de -o out.en --format jsonl --n-best 3
  mt-translate --n-best 3 --prefix "The train to Mun" "Der Zug nach München ist voll."
  mt-translate -i in.de --prefixes starts.en -o out.en
  mt-translate --html -i page.de.html -o page.en.html
  mt-translate --subtitles -i film.de.srt -o film.en.srt
  mt-translate --markdown -i README.de.md -o README.en.md
  mt-translate --paragraphs -i brief.txt                  # wrapped text: each paragraph as one
  mt-translate --po -i locale/de/LC_MESSAGES/app.po -o app.de.po    # gettext messages
  mt-translate --json --to de -i locales/en.json -o locales/de.json
  mt-translate --xliff -i messages.de.xlf -o messages.de.xlf.new    # units without a target
  mt-translate --docx -i bericht.docx -o report.docx     # also --pptx, --xlsx, --odf (.odt, .odp, .ods)
  mt-translate -i roman.epub -o novel.epub               # known by its name: --epub, unasked
  mt-translate --to de -i report.pdf -o bericht.pdf      # needs 'mtkit[pdf]'

Exit status: 0 done, 1 error, 2 usage, 130 interrupted, 143 terminated (SIGTERM)."""


def document_options(command_function):
    """A flag for each kind of document (DOCUMENTS), passed to the command by its name (docx=True)."""
    for flag, (_, help_text) in reversed(DOCUMENTS.items()):
        command_function = click.option(flag, is_flag=True, help=help_text)(command_function)
    return command_function


@command(PROG, epilog=EPILOG)
@click.argument("text", nargs=-1)
@model_options
@click.option("-i", "--input", "input_file", metavar="FILE", help="Input file, one text per line ('-' = stdin).")
@click.option("-o", "--output", metavar="FILE", help="Output file, written whole or not at all; gzip if it ends in .gz "
                                                    "(default: stdout). With -i, an interrupted run keeps its lines "
                                                    "done, and the same command goes on after them.")
@click.option("--format", "fmt", type=click.Choice(["text", "jsonl"]), default="text", show_default=True,
              help="text: one line per input (n-best tab-separated); jsonl: scores, tokens, n-best, timings.")
@decoding_options()
@click.option("--no-split", is_flag=True, help="Do not split lines into sentences.")
@click.option("--prefix", metavar="TEXT", help="Start every translation with TEXT and let the model continue it (a "
                                                "last word left unfinished is completed); each line is then one "
                                                "sentence.")
@click.option("--prefixes", metavar="FILE", help="As --prefix, one line of FILE for each input line (an empty one: "
                                                 "none).")
@click.option("--glossary", metavar="FILE", help="Terms to translate one way: a UTF-8 file, tab-separated, whose "
                                                   "first line names its two languages (\"de<TAB>en\"); used "
                                                   "both ways.")
@document_options
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True, metavar="N",
              help="Lines translated together (1 when stdin is a terminal).")
@budget_options
@click.option("--list-languages", is_flag=True, help="Print the model's target languages and exit.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar or notes on stderr (errors still show).")
def main(text, model, from_lang, to, provider, variant, threads, input_file, output, fmt, options, no_split, prefix,
         prefixes, glossary, batch_size, max_batch_tokens, max_batch_sentences, list_languages, quiet,
         **documents) -> None:
    """Translate TEXT (one output line each), or else the lines of --input or stdin, with a model bundle
    (ONNX Runtime, no torch)."""
    wholes = [flag for flag in DOCUMENTS if documents[flag.removeprefix("--")]]
    lines_asked = fmt != "text" or options.num_hypotheses > 1 or prefix is not None or prefixes   # lines only
    if not wholes and input_file and not text and not lines_asked and (flag := document_flag(input_file)):
        wholes = [flag]             # a Word file, a book, subtitles, a catalog: read as lines, it would break
    whole = check_usage(text, input_file, output, fmt, options, wholes, prefix, prefixes)   # a document, whole

    from .text_io import (ArrivingLines, InputError, check_argument, check_output, decode_lines, iter_lines, open_binary,
                          read_lines, refuse_inputs)

    # Checked before the model loads: the arguments as a file's lines are, that -o can be written, the glossary.
    try:
        for number, argument in enumerate(text, start=1):
            check_argument(argument, f"argument {number}")
        if prefix is not None:
            check_argument(prefix, "--prefix")
        starts = read_lines(prefixes) if prefixes else prefix     # each line's, or one for all
        if output and output != "-" and not list_languages:
            check_output(output)
            refuse_inputs(output, [("-i", input_file), ("--prefixes", prefixes), ("--glossary", glossary)])
    except InputError as e:
        raise CommandError(str(e)) from None
    if glossary:
        from .glossary import Glossary, GlossaryError
        try:
            glossary = Glossary.read(glossary)
        except GlossaryError as e:
            raise CommandError(str(e)) from None

    if from_lang is None and not list_languages:
        from . import language_id
        if not text or any(map(language_id.has_letters, text)):
            language_id.preload()     # the detector loads in the background while the model's imports run

    import warnings

    from .errors import TranslationError
    from .language_id import LanguageWarning
    from .translator import LongInputWarning, Translator

    warnings.simplefilter("ignore", LongInputWarning)     # both reported below, with the line number
    warnings.simplefilter("ignore", LanguageWarning)
    try:
        translator = Translator(model, provider=provider, threads=threads, variant=variant,
                                max_batch_tokens=max_batch_tokens, max_batch_sentences=max_batch_sentences)
        if list_languages:
            write_output(None, lambda out: out.write("".join(f"{lang}\n" for lang in translator.languages)))
            return
        if from_lang:                   # checked, and picks the default target
            to = translator.target_from(from_lang, to)
        translator.tag_id(to)
        if glossary:
            glossary.check_model(translator)
    except (TranslationError, InputError) as e:
        raise CommandError(str(e)) from None
    asked_for_auto = click.get_current_context().get_parameter_source("provider") != ParameterSource.DEFAULT
    if provider == "auto" and asked_for_auto and not quiet:
        print(f"{PROG}: provider auto: using {translator.provider} ({translator.provider_note})", file=sys.stderr)

    if whole in BINARY:              # bytes in and out, not lines
        method = getattr(translator, DOCUMENTS[whole][0])
        try:
            document = open_binary(input_file).read() if input_file and input_file != "-" else sys.stdin.buffer.read()
            with kept_sentences(translator, output, quiet):
                write_output(output, lambda out: write_documents(out, lambda d: method(
                    d, to, options, from_lang=from_lang or "auto", glossary=glossary), [document], newline=False,
                    progress=not quiet), binary=True)
        except (TranslationError, InputError) as e:
            raise document_error(e, input_file) from None
        return

    # Input: arguments, a whole file (checked before any work), or stdin as a stream.
    total = None
    # The endings of the lines read and not yet written, in order: each text output line repeats its input
    # line's (CRLF stays CRLF). Taken as written, so that a long stream holds no list of them all.
    endings: collections.deque[str] = collections.deque()
    arriving = None                 # stdin's lines as they arrive, where it can tell which have (not Windows)
    try:
        if text:
            lines, total = iter(text), len(text)
            for named in (t for t in text if not quiet and is_file_name(t)):
                print(f"{PROG}: note: {named!r} is a file; its name is translated as text (-i {named} translates "
                      f"what it holds)", file=sys.stderr)
        elif input_file and input_file != "-":
            from .paragraphs import looks_wrapped
            if whole or not os.path.isfile(input_file):        # a FIFO (-i <(zcat ...)) is read once
                all_lines = read_lines(input_file, endings, keep_bom=bool(whole))
                lines, total, wrapped = iter(all_lines), len(all_lines), not whole and looks_wrapped(all_lines)
            else:
                # A file is read twice, never held: every line checked first (UTF-8, counted for the progress
                # bar and --prefixes), then streamed to the translator.
                total, wrapped = scan_lines(input_file)
                lines = iter_lines(input_file, endings)
            if wrapped and not quiet:
                print(f"{PROG}: note: the input looks like wrapped paragraphs, which line by line are translated "
                      f"in pieces; --paragraphs translates each whole", file=sys.stderr)
        elif not whole and sys.stdin.isatty() and sys.stdout.isatty():
            lines = typed_lines()
        else:
            if not whole and os.name != "nt":       # Windows' select() takes no pipes
                with contextlib.suppress(OSError, ValueError):     # a stdin with no descriptor (a test's)
                    arriving = ArrivingLines(sys.stdin.fileno())
            lines = decode_lines(arriving or sys.stdin.buffer, "stdin", endings, keep_bom=bool(whole))
        if prefixes and len(starts) != total:
            raise InputError(f"{prefixes}: {len(starts):,} lines for {total:,} lines to translate: give one per line")
    except InputError as e:
        raise CommandError(str(e)) from None
    interactive = not text and not input_file and sys.stdin.isatty()

    if whole:
        method = getattr(translator, DOCUMENTS[whole][0])
        if whole == "--html":
            method = functools.partial(method, split_sentences=not no_split)

        def translate_one(document: str) -> str:
            return method(document, to, options, from_lang=from_lang or "auto", glossary=glossary)

        try:
            documents = list(text) or ["".join(line + ending for line, ending in zip(list(lines), endings))]
            with kept_sentences(translator, output, quiet):
                write_output(output, lambda out: write_documents(out, translate_one, documents, newline=bool(text),
                                                                 progress=not quiet))
        except (TranslationError, InputError) as e:
            raise (CommandError(str(e)) if text else document_error(e, input_file)) from None
        return

    progress = None
    to_stdout = not output or output == "-"
    if input_file and input_file != "-" and total and sys.stderr.isatty() and not quiet:
        progress = progress_bar()

    def write_all(out, done: int = 0) -> None:
        """Translate the lines after the first `done` (those an interrupted run wrote) into `out`."""
        def translations(texts, size: int):
            return translator.translate_iter(texts, to, options, from_lang=from_lang or "auto", batch_size=size,
                                             split_sentences=not no_split, glossary=glossary,
                                             prefix=starts[done:] if prefixes else starts)

        for _ in itertools.islice(lines, done):         # those an interrupted run wrote
            if endings:
                endings.popleft()
        texts = lines
        if arriving is not None and not interactive:      # a batch of what has arrived: a pipe never waits on us
            stream = itertools.chain.from_iterable(translations(batch, len(batch))
                                                   for batch in arrived_batches(texts, arriving.ready, batch_size))
        else:
            stream = translations(texts, 1 if interactive else batch_size)
        task = progress.add_task("translate", total=total, completed=done) if progress else None
        for lineno, tr in enumerate(stream, start=done + 1):
            ending = endings.popleft() if endings else "\n"      # this line's: the lines are read in order
            if not quiet and (note := input_note(lineno, tr.source)):
                print(f"{PROG}: note: {note}", file=sys.stderr)
            for w in tr.warnings[:MOST_WARNINGS]:        # a line of a thousand long sentences: not a thousand
                print(f"{PROG}: warning: line {lineno}: {w}", file=sys.stderr)
            if len(tr.warnings) > MOST_WARNINGS:
                print(f"{PROG}: warning: line {lineno}: {len(tr.warnings) - MOST_WARNINGS} more warnings", file=sys.stderr)
            crlf = fmt == "text" and ending == "\r\n"
            out.write(record(lineno, tr, fmt, options) + ("\r\n" if crlf else "\n"))
            if progress:
                progress.advance(task)
            if interactive or (to_stdout and not progress) or lineno % batch_size == 0:
                out.flush()                     # a file: each batch, so that an interrupted run keeps it

    try:
        if progress:
            progress.start()
        try:
            if input_file and input_file != "-" and output and output != "-":     # the lines done survive
                job = job_description(input_file, translator, from_lang, to, fmt, options, no_split, prefix,
                                      prefixes, glossary and glossary.path, batch_size)
                write_resumable(output, job, write_all, total, quiet)
            else:
                write_output(output, write_all)
        finally:
            if progress:
                progress.stop()
    except (TranslationError, InputError) as e:
        raise CommandError(str(e)) from None


@contextlib.contextmanager
def kept_sentences(translator, output: str | None, quiet: bool):
    """For a whole document written to -o FILE: each sentence decoded is kept in .FILE.partial.cache, so
    that after an interruption the same command decodes only the rest; the file goes once FILE is
    written (runtime/decode_cache.py)."""
    from . import decode_cache
    from .text_io import written_in_place

    if not output or output == "-" or written_in_place(Path(output)):
        yield
        return
    kept = decode_cache.beside(output)
    earlier = kept.exists()
    with translator.decode_cache(kept) as cache:
        if cache.damaged and not quiet:
            print(f"{PROG}: note: the sentences an interrupted run kept ({kept}) could not be read ({cache.damaged}); "
                  f"decoding them again", file=sys.stderr)
        if earlier and len(cache) and not quiet:
            print(f"{PROG}: note: going on with the {len(cache):,} sentences an interrupted run decoded ({kept})",
                  file=sys.stderr)
        try:
            yield
        except BaseException:
            if len(cache):
                after_ctrl_c = "\n" if sys.stderr.isatty() else ""
                print(f"{after_ctrl_c}{PROG}: {len(cache):,} sentences decoded are kept in {kept}; the same command "
                      f"goes on from there", file=sys.stderr)
            raise
    kept.unlink(missing_ok=True)


def document_flag(path: str) -> str | None:
    """The flag that translates a file named `path` whole (.srt: --subtitles, .epub: --epub), if it names
    a document's kind; a .txt is lines."""
    kind = METHODS.get(suffix(path))
    return next((flag for flag, (method, _) in DOCUMENTS.items() if method == kind), None)


def check_usage(text, input_file, output, fmt, options, wholes: list[str], prefix, prefixes) -> str | None:
    """A UsageError for flags that do not go together, before anything loads; else the document flag
    given (--html, ...), if any."""
    whole = wholes[0] if wholes else None
    if text and input_file:
        raise click.UsageError("give TEXT arguments or --input, not both")
    if options.return_alignment and fmt != "jsonl":
        raise click.UsageError("--alignment needs --format jsonl")
    if len(wholes) > 1:
        raise click.UsageError(f"{' and '.join(wholes)}: choose one")
    if whole and (fmt != "text" or options.num_hypotheses > 1):
        raise click.UsageError(f"{whole} writes the translated file: it takes neither --format jsonl nor --n-best")
    if prefix is not None and prefixes:
        raise click.UsageError("--prefix and --prefixes: choose one")
    if whole and (prefix is not None or prefixes):
        starting = "--prefix" if prefix is not None else "--prefixes"
        raise click.UsageError(f"{starting} starts the translation of a line: {whole} translates a whole document")
    if prefixes and not (text or (input_file and input_file != "-")):
        raise click.UsageError("--prefixes needs the lines to translate as TEXT or -i FILE, to match its lines to")
    if whole and whole != "--html" and text:
        raise click.UsageError(f"{whole} reads a file: give it with -i FILE or on stdin, not as TEXT")
    if whole in BINARY and (not input_file or input_file == "-") and sys.stdin.isatty():
        raise click.UsageError(f"{whole} reads a file: give it with -i FILE or on stdin")
    if whole in BINARY and (not output or output == "-") and sys.stdout.isatty():
        raise click.UsageError(f"{whole} writes a file: give -o FILE or send stdout to one")
    return whole


def scan_lines(path: str) -> tuple[int, bool]:
    """The number of lines of the text file `path`, each checked as `read_lines` checks it, and whether
    they look like wrapped paragraphs (paragraphs.looks_wrapped); read once, none kept."""
    from .paragraphs import looks_wrapped
    from .text_io import iter_lines

    count = 0

    def counted():
        nonlocal count
        for count, line in enumerate(iter_lines(path), start=1):
            yield line

    wrapped = looks_wrapped(counted())
    return count, wrapped


def arrived_batches(lines, ready, most: int):
    """Lists of at most `most` of `lines`, each ended early where `ready()` says the next line has not
    arrived yet. An error in reading the input comes after the lines read before it."""
    batch = []
    try:
        for line in lines:
            batch.append(line)
            if len(batch) == most or not ready():
                yield batch
                batch = []
    except Exception:
        if batch:
            yield batch
        raise
    if batch:
        yield batch


def write_resumable(output: str, job: dict, write_all, total: int, quiet: bool) -> None:
    """`write_all(out, done)` into the file `output` through `resumable.resumable_output`: going on after
    the lines an interrupted run of the same job kept, and, if this one is interrupted, saying how many
    lines it keeps for the next."""
    from .resumable import resumable_output

    out = None
    try:
        with resumable_output(output, job) as out:
            if out.done and not quiet:
                print(f"{PROG}: note: going on after the {out.done:,} lines an interrupted run wrote ({out.partial})",
                      file=sys.stderr)
            if out.dropped and not quiet:
                print(f"{PROG}: note: the lines an interrupted run wrote ({out.partial}) were made with another input "
                      f"or other options; starting over", file=sys.stderr)
            write_all(out, out.done)
    except BaseException as e:
        if out is None or not out.partial or not out.lines:
            raise
        say_kept(PROG, e, f"{out.lines:,} of {total:,} lines are kept in {out.partial}")
        raise


def job_description(input_file, translator, from_lang, to, fmt, options, no_split, prefix, prefixes, glossary_file,
                    batch_size) -> dict:
    """What makes two runs of mt-translate -i FILE -o FILE the same job, whose output one may go on with:
    the input as it is on disk, the model, and everything that changes the output lines."""
    import dataclasses
    import hashlib

    from .resumable import model_identity, on_disk

    def digest(path) -> str | None:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None

    return {"input": on_disk(input_file), "model": model_identity(translator.path), "variant": translator.variant,
            "from": from_lang or "auto", "to": to, "format": fmt, "options": dataclasses.asdict(options),
            "split": not no_split, "prefix": prefix, "prefixes": digest(prefixes), "glossary": digest(glossary_file),
            # A sample's draws depend on its batch; a search's result does not (batch-invariant).
            "batch_size": batch_size if options.sampling else None}


def typed_lines():
    """Lines typed at a terminal after a "> " prompt, each translated as soon as it is entered, with line
    editing and history (readline, where Python has it; Windows' console edits lines itself). Ctrl-D ends."""
    from .text_io import InputError
    try:
        import readline  # noqa: F401  -- input() uses it once it is imported
    except ImportError:
        pass
    while True:
        try:
            yield input("> ")
        except EOFError:
            print()                     # the shell's prompt on a line of its own
            return
        except UnicodeDecodeError as e:
            raise InputError(f"stdin: invalid {e.encoding} (byte {e.object[e.start]:#x}); "
                             f"set the terminal to UTF-8") from None


def is_file_name(text: str) -> bool:
    """An argument that names a file here, one word with a path or a suffix (`in.txt`, `./notes`): given as
    text by mistake, where -i was meant."""
    word = text.strip()
    return bool(word) and " " not in word and ("/" in word or "." in word) and os.path.isfile(word)


def input_note(lineno: int, source: str) -> str | None:
    """A note for a line that reads as part of a document --html, --subtitles, --po or --xliff would translate
    whole."""
    if lineno <= 3 and "<xliff" in source:
        return "the input looks like XLIFF; --xliff translates its units"
    if lineno == 1 and "<" in source and len(re.findall(TAG, source, re.I)) >= 2:
        return "the input looks like HTML; --html keeps its markup"
    if source == 'msgid ""':                                  # a gettext catalog's header, once a file
        return "the input looks like a gettext catalog; --po translates its messages"
    if lineno <= 2 and ("-->" in source or source.startswith("WEBVTT")):
        from .subtitles import looks_like_subtitles        # only then: start-up stays quick
        if looks_like_subtitles(source):
            return "the input looks like subtitles; --subtitles keeps their timings"
    return None


def write_output(output: str | None, write, binary: bool = False) -> None:
    """`write(stream)` into the file `output`, whole or not at all, or to stdout: UTF-8 with the line ends
    written as given, as into a file, whatever the locale (a Windows pipe would be cp1252, and "\r\n"
    would become "\r\r\n"). `binary`: the stream takes bytes. A failed write (a full disk) is an InputError
    naming the file; into stdout, cli_support.Command says it in one line, as for every command."""
    from .text_io import atomic_output
    if output and output != "-":
        with atomic_output(output, binary) as out:
            write(out)
    elif binary:
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
    else:
        stdout = sys.stdout
        if isinstance(stdout, io.TextIOWrapper):
            stdout.reconfigure(encoding="utf-8", newline="\n")
        write(stdout)
        stdout.flush()


def document_error(error: Exception, input_file: str | None):
    """The CommandError for an error in translating a document: a DocumentError says only what is wrong
    with it ("not JSON: ..."), so the file it came from (or stdin) is named; the others name their own
    file (an output, the decode cache, a graph) or none is at fault."""
    from .errors import DocumentError

    where = input_file if input_file and input_file != "-" else "stdin"
    return CommandError(f"{where}: {error}" if isinstance(error, DocumentError) else str(error))


def write_documents(out, translate_one, documents: list, newline: bool, progress: bool = False) -> None:
    """Each document (a page, a subtitle file, a book) translated whole, with a progress bar of its
    sentences when `progress` and stderr is a terminal; the translator's warnings said with the
    document they came from, whose sentences it counts as its texts, the first MOST_WARNINGS of them (a
    README in code and tables gave 40)."""
    import warnings

    from .language_id import LanguageWarning

    for number, document in enumerate(documents, start=1):
        with warnings.catch_warnings(record=True) as caught, document_progress(progress and sys.stderr.isatty()):
            warnings.simplefilter("always")
            result = translate_one(document)
        where = f"document {number}" if len(documents) > 1 else "document"
        for w in caught[:MOST_WARNINGS]:
            message = re.sub(r"^text (\d+):", r"sentence \1:", str(w.message))
            print(f"{PROG}: warning: {where}: {message}", file=sys.stderr)
        if len(caught) > MOST_WARNINGS:
            advice = (" (--from LANG translates every sentence from LANG, without detecting it)"
                      if any(issubclass(w.category, LanguageWarning) for w in caught) else "")
            print(f"{PROG}: warning: {where}: {len(caught) - MOST_WARNINGS} more warnings{advice}", file=sys.stderr)
        out.write(result + "\n" if newline else result)


@contextlib.contextmanager
def document_progress(show: bool):
    """Within the block, a progress bar on stderr of the sentences decoded, when `show` (rich loads only then)."""
    if not show:
        yield
        return
    from .progress import translation_progress

    bar = progress_bar()
    task = bar.add_task("translate", total=None)
    with bar, translation_progress(lambda done, total: bar.update(task, completed=done, total=total)):
        yield


def record(lineno: int, tr, fmt: str, options) -> str:
    """One output line for a translation."""
    if fmt == "text":               # n-best: always that many columns, an empty line's too
        texts = [h.text for h in tr.hypotheses]
        return "\t".join(texts + [""] * (options.num_hypotheses - len(texts)))
    import json
    import math

    def num(x):
        return round(x, 4) if math.isfinite(x) else None

    data = {"line": lineno, "source": tr.source, "text": tr.text, "language": tr.language, "translated": tr.translated,
            "sentences": [{"language": s.language, "probability": None if s.probability is None else num(s.probability),
                           "translated": s.translated, "detected": s.detected} for s in tr.languages],
            "score": num(tr.score), "tokens": tr.tokens,
            "n_best": [{"text": h.text, "score": num(h.score), "tokens": h.tokens} for h in tr.hypotheses],
            "num_tokens": tr.num_tokens, "num_source_tokens": tr.num_source_tokens,
            "timings": {k: round(v, 3) if isinstance(v, float) else v for k, v in tr.timings.items()}}
    if tr.warnings:
        data["warnings"] = tr.warnings
    if options.return_alignment and tr.alignment is not None:
        data["alignment"] = {"source_tokens": tr.alignment.source_tokens, "target_tokens": tr.alignment.target_tokens,
                             "weights": [[round(w, 4) for w in row] for row in tr.alignment.weights]}
    # U+2028 and U+2029 are escaped: JSON allows them raw, but readers that split lines on Unicode's
    # line breaks (Python's str.splitlines) would cut the record in two.
    return json.dumps(data, ensure_ascii=False).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def run() -> None:
    """The `mt-translate` console script: `main`, then a quick exit (cli_support.run_and_exit)."""
    # numpy loads later. Its OpenBLAS starts a thread per extra core at import, which spins ~0.1 s
    # waiting for work that never comes: the runtime's numpy work is elementwise, ONNX Runtime does the
    # matrix products. One BLAS thread, unless the user set it (benchmarks/PERF_NOTES.md, "Cold start").
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    run_and_exit(main)


if __name__ == "__main__":
    run()
