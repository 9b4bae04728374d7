"""`mt-serve`: a model behind LibreTranslate's HTTP API on this machine (runtime/server.py)."""

from __future__ import annotations

import signal
import sys
import threading

import click

from .cli_options import MODEL, PROVIDER, THREADS, VARIANT, budget_options, decoding_options
from .cli_support import CommandError, Terminated, command, run_and_exit

PROG = "mt-serve"
GRACE_SECONDS = 30      # how long SIGTERM waits for the requests begun (gunicorn's; docker stop kills after 10)

EPILOG = """\b
Examples:
  mt-serve                                   # the shipped model on http://127.0.0.1:5000
  curl -s localhost:5000/translate -H 'Content-Type: application/json' \\
       -d '{"q": "Guten Morgen", "source": "auto", "target": "en"}'
  mt-serve --port 8080 --beam-size 1         # greedy: quicker answers
  mt-serve --queue 0                         # no waiting: a second request at once gets 503

""" + f"""Exit status: 0 stopped by SIGTERM once the requests begun are answered, 1 error (e.g. the port is taken),
2 usage, 130 interrupted (Ctrl-C), 143 terminated (a second SIGTERM, or requests unanswered after {GRACE_SECONDS} s)."""


@command(PROG, epilog=EPILOG)
@MODEL
@PROVIDER
@VARIANT
@THREADS
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (0.0.0.0: every interface, :: with IPv6; there is no authentication). On "
                   "loopback, requests must be addressed to localhost, 127.0.0.1 or [::1].")
@click.option("--port", type=click.IntRange(0, 65535), default=5000, show_default=True, help="Port (0: any free one).")
@click.option("--char-limit", type=click.IntRange(min=1), default=20_000, show_default=True, metavar="N",
              help="The most characters one request may ask to translate.")
@click.option("--file-limit", type=click.IntRange(min=1), default=20, show_default=True, metavar="MB",
              help="The largest file POST /translate_file takes (a .docx, .epub, ...), in megabytes.")
@click.option("--file-char-limit", type=click.IntRange(min=1), default=1_000_000, show_default=True, metavar="N",
              help="The most characters a text file (.txt, .html, .srt, ...) sent to POST /translate_file may have.")
@click.option("--glossary", metavar="FILE", help="Terms every request translates one way (the format of mt-translate "
                                                   "--glossary).")
@click.option("--cors", metavar="ORIGIN", default=None,
              help="Let web pages from ORIGIN (or '*': any) call the server from a browser (default: none; "
                   "a request from a page elsewhere is refused, 403).")
@click.option("--concurrency", type=click.IntRange(min=1), default=1, show_default=True, metavar="N",
              help="Requests translated at once (one already uses every thread).")
@click.option("--queue", type=click.IntRange(min=0), default=32, show_default=True, metavar="N",
              help="Requests that may wait for their turn; more get 503 (busy) with Retry-After.")
@click.option("--cache", type=click.IntRange(min=0), default=2000, show_default=True, metavar="N",
              help="Answers kept for the last N texts asked for (4 million characters at most), given again at "
                   "once (0: none).")
@budget_options
@click.option("-q", "--quiet", is_flag=True, help="No line per request on stderr.")
@decoding_options(exclude=("num_hypotheses", "return_alignment"))     # per request: "alternatives"
def main(model, provider, variant, threads, host, port, char_limit, file_limit, file_char_limit, glossary, cors,
         concurrency, queue, cache, max_batch_tokens, max_batch_sentences, quiet, options) -> None:
    """Serve a model over HTTP in LibreTranslate's API: POST /translate, POST /detect, GET /languages,
    POST /translate_file."""
    import warnings

    from .errors import TranslationError
    from .glossary import Glossary
    from .language_id import LanguageWarning
    from .server import Service, make_server
    from .translator import LongInputWarning, Translator

    warnings.simplefilter("ignore", LongInputWarning)      # a request's own business, not the server log's
    warnings.simplefilter("ignore", LanguageWarning)
    try:
        glossary = Glossary.read(glossary) if glossary else None     # before the model: a bad file fails at once
        translator = Translator(model, provider=provider, threads=threads, variant=variant,
                                max_batch_tokens=max_batch_tokens, max_batch_sentences=max_batch_sentences)
        translator.decode_options(options)
        if glossary:
            glossary.check_model(translator)
    except TranslationError as e:
        raise CommandError(str(e)) from None
    try:
        service = Service(translator, options, char_limit, cors, glossary, concurrency, queue, cache,
                          file_limit=file_limit * 1_000_000, file_char_limit=file_char_limit)
        server = make_server(service, host, port, quiet=quiet)
    except OSError as e:
        raise CommandError(f"cannot listen on {host}:{port} ({e.strerror or e})") from None
    bound_host, bound_port = server.server_address[:2]
    bound_host = f"[{bound_host}]" if ":" in bound_host else bound_host
    stopping = stop_on_sigterm(server)     # before the line that says it is serving
    print(f"{PROG}: {translator.path} ({translator.provider}, {translator.variant}; "
          f"{', '.join(f'{a}->{b}' for a, b in translator.directions) or ', '.join(translator.languages)}) "
          f"on http://{bound_host}:{bound_port}; Ctrl-C stops it", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
        if stopping.is_set():
            server.server_close()       # new connections are refused from now on
            if begun := server.answering:
                print(f"{PROG}: terminating; answering first the request{'s' if begun > 1 else ''} begun ({begun}; "
                      f"another SIGTERM ends it at once)", file=sys.stderr, flush=True)
                if not server.finish_answering(GRACE_SECONDS):      # another SIGTERM raises in there too: 143
                    raise Terminated
            # A clean stop, exit 0, as gunicorn's and uvicorn's: systemd counts an exit of 143 as a failure
            print(f"{PROG}: stopped (SIGTERM)", file=sys.stderr, flush=True)
    finally:
        server.server_close()


def stop_on_sigterm(server) -> threading.Event:
    """From now on SIGTERM (docker stop, systemctl stop) ends `server.serve_forever()` between two
    connections, and the event is set; a second SIGTERM raises Terminated at once. Not Terminated from
    the first: raised where the main thread was, in handing a connection to its thread, it closed that
    connection under the thread answering it. Where SIGTERM is ignored, or off the main thread, nothing changes."""
    stopping = threading.Event()

    def stop(signum, frame):
        if stopping.is_set():
            raise Terminated
        stopping.set()
        threading.Thread(target=server.shutdown, daemon=True).start()     # it waits for serve_forever to return

    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) not in (signal.SIG_IGN, None)):
        signal.signal(signal.SIGTERM, stop)         # Command puts back its own handler when main ends
    return stopping


def run() -> None:
    run_and_exit(main)


if __name__ == "__main__":
    run()
