"""Translation over HTTP on this machine, in LibreTranslate's API (`mt-serve`), so that its clients,
and anything that speaks JSON, can use a local model:

    POST /translate  {"q": "Guten Morgen" or [...], "source": "auto", "target": "en", "format": "text" or
                      "html", "alternatives": 0}  ->  {"translatedText": ..., "detectedLanguage":
                      {"language": "de", "confidence": 96.5}, "alternatives": [...]}
                     (and, beyond LibreTranslate's API, "prefix": the start of each translation, which
                     the model continues: Translator.translate's `prefix`, for interactive translation)
    POST /detect     {"q": "Guten Morgen"}  ->  [{"language": "de", "confidence": 96.5}, ...]
    GET  /languages  ->  [{"code": "de", "name": "German", "targets": ["en"]}, ...]
    POST /translate_file  multipart/form-data: file, source, target  ->  {"translatedFileUrl": ".../download_file/..."}
    GET  /download_file/<id>/<name>  ->  the translated file (the last `files`, within `download_bytes`,
                                         are kept in memory)
    GET  /frontend/settings  ->  the limits and file types LibreTranslate's clients ask for

Bodies are JSON or form-encoded, and fields may come in the URL too. A bad request gets status 400
(413 when over the size limits, 408 when its body stops coming) and {"error": "..."}; a fault of the
model or the machine gets 500, its detail in the server's log only (it names the server's files). One
Translator serves every request.
Requests are read in threads, but only `concurrency` translate at once (one already keeps every core
busy); up to `queue` more wait their turn, and past that a request gets 503 with Retry-After, so that
a burst of clients slows the server down instead of running it out of memory; for that too, the bodies
held at once (read, waiting or translating) fit in `concurrency` + 3 of the largest, and a request past
that is 503 before its body is read. The answer to each text is kept (the last `cache` texts asked
for, `cache_characters` at most), so a page or an app asking for the same strings again is answered
at once. `api_key` is accepted and ignored: the server is for this machine, and listens on 127.0.0.1 unless told otherwise. Browsers
may call it from another origin only when `cors` names that origin (or "*"): a request with another
Origin is 403, and so, on loopback, is one whose Host is not this machine (DNS rebinding). A client that goes away
is one line in the log, and its translation stops after the batch being decoded. At most
`connections` are served at once (a thread each; by default room for every translation running and
waiting, and 32 more): past that a new connection is answered 503 at once and closed, and a client gets
`timeout` seconds in all to send its request line and headers, so that clients holding connections open
(slowloris) cannot run the server out of threads.
"""

from __future__ import annotations

import io
import ipaddress
import json
import math
import mimetypes
import secrets
import select
import socket
import sys
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import PurePath
from urllib.parse import parse_qs, quote, urlsplit

from . import language_id
from .decode_options import DecodeOptions
from .documents import BYTES, METHODS, suffix, supported, translate_file
from .errors import ModelLoadError, ProviderError, TranslationError
from .markup import translate_fragments
from .arguments import prefixes_for
from .progress import translation_progress

LANGUAGE_NAMES = {
    "ar": "Arabic", "bg": "Bulgarian", "cs": "Czech", "da": "Danish", "de": "German", "el": "Greek", "en": "English",
    "es": "Spanish", "et": "Estonian", "fi": "Finnish", "fr": "French", "hu": "Hungarian", "it": "Italian",
    "ja": "Japanese", "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian", "nl": "Dutch", "no": "Norwegian",
    "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sk": "Slovak", "sl": "Slovenian",
    "sv": "Swedish", "tr": "Turkish", "uk": "Ukrainian", "zh": "Chinese",
}


# Each endpoint's Service method; GET /download_file/NAME (a file POST /translate_file wrote) aside.
GET_ROUTES = {"": "health", "/health": "health", "/languages": "languages", "/frontend/settings": "settings"}
POST_ROUTES = {"/translate": "translate", "/detect": "detect", "/translate_file": "translate_file"}
REQUEST_TIMEOUT = 60.0      # seconds a client may stall in sending its request: a stalled one frees its thread
# Connections served at once beyond the translations running and waiting: requests being read, quick GETs,
# and requests the full queue refuses (its 503 says more than the connection limit's).
SPARE_CONNECTIONS = 32
# TranslationErrors that are the model's or the machine's fault (ONNX Runtime's errors in a run, out of
# memory included, are ModelLoadErrors), not the request's: the others (bad options, an unknown language,
# a document that cannot be read, ...) are the client's to fix.
SERVER_FAULTS = (ModelLoadError, ProviderError)


class RequestError(Exception):
    """A request the server refuses: its HTTP status and the message for the client; `log`, for a fault of
    the server's, is what the server's log gets."""

    def __init__(self, status: int, message: str, log: str | None = None):
        super().__init__(message)
        self.status, self.log = status, log


class ClientGone(ConnectionAbortedError):
    """The client closed its connection before its answer: its translation is stopped."""


def refusal(e: TranslationError) -> RequestError:
    """What the client is told of a TranslationError: 400 with its message, or, for a fault of the
    server's, 500 and the message in the log only."""
    if isinstance(e, SERVER_FAULTS):
        return RequestError(500, "the model failed to translate this request; see the server's log", log=str(e))
    return RequestError(400, f"Invalid request: {e}")


class Admission:
    """At most `running` translations at once and `waiting` more in line; a request past that is
    refused at once (503), not queued without end."""

    def __init__(self, running: int, waiting: int):
        self.running, self.waiting = running, waiting
        self._slots = threading.Semaphore(running)
        self._lock = threading.Lock()
        self.inside = 0                 # running and waiting

    @contextmanager
    def turn(self):
        with self._lock:
            if self.inside >= self.running + self.waiting:
                raise RequestError(503, f"busy: {self.running} translating and {self.waiting} waiting; retry later")
            self.inside += 1
        try:
            with self._slots:
                yield
        finally:
            with self._lock:
                self.inside -= 1


class BodyBudget:
    """At most `size` bytes of request bodies (as their Content-Length says) held at once, from before
    they are read until they are answered: past that a request is refused at once (503), its body unread,
    so that many clients uploading at once cannot run the machine out of memory (parsing a form's file
    takes about ten times its size, and a request waiting its turn keeps its body)."""

    def __init__(self, size: int):
        self.size, self.used = size, 0
        self._lock = threading.Lock()

    @contextmanager
    def hold(self, length: int):
        with self._lock:
            if self.used + length > self.size:
                raise RequestError(503, f"busy: the requests being read and translated fill the memory set "
                                        f"aside for them ({self.size} bytes); retry later")
            self.used += length
        try:
            yield
        finally:
            with self._lock:
                self.used -= length


def characters(*values) -> int:
    """The characters of the strings in `values`, in their lists, tuples and dicts (a cache's key and answer)."""
    return sum(len(v) if isinstance(v, str) else
               characters(*v.values()) if isinstance(v, dict) else
               characters(*v) if isinstance(v, (list, tuple)) else 0 for v in values)


class AnswerCache:
    """The answers to the last `size` keys asked for, by everything that decides them (0: none kept), and
    of those only the newest whose `cost(key, answer)`s (the bytes of a file, the characters of a text and
    its translation) add up to `budget` at most, the newest kept whatever it costs."""

    def __init__(self, size: int, budget: float = math.inf, cost=lambda key, answer: 0):
        self.size, self.budget, self.cost = size, budget, cost
        self._answers: OrderedDict[tuple, tuple[dict, float]] = OrderedDict()     # (answer, cost)
        self._spent = 0
        self._lock = threading.Lock()

    def get(self, key: tuple) -> dict | None:
        with self._lock:
            if key in self._answers:
                self._answers.move_to_end(key)
                return self._answers[key][0]
        return None

    def put(self, key: tuple, answer: dict) -> None:
        cost = self.cost(key, answer)
        with self._lock:
            if key in self._answers:
                self._spent -= self._answers.pop(key)[1]
            self._answers[key] = (answer, cost)
            self._spent += cost
            while len(self._answers) > self.size or (self._spent > self.budget and len(self._answers) > 1):
                self._spent -= self._answers.popitem(last=False)[1][1]


@dataclass
class Service:
    """What the endpoints do, apart from HTTP: one Translator, the decoding options every request
    starts from, and the most characters one request may ask to translate."""

    translator: object
    options: DecodeOptions
    char_limit: int = 20_000
    cors: str | None = None          # Access-Control-Allow-Origin for browser clients (None: no CORS headers)
    glossary: object = None          # a runtime.glossary.Glossary applied to every request
    concurrency: int = 1             # translations at once
    queue: int = 32                  # requests that may wait for their turn
    cache: int = 2000                # texts whose answers are kept
    # ... and their characters in all, the texts' and the answers': by count alone, 2,000 texts of 20,000
    # characters (--char-limit) would hold about 50 MB.
    cache_characters: int = 4_000_000
    file_limit: int = 20_000_000     # bytes of a file to translate
    files: int = 32                  # translated files kept for download
    # ... and their bytes in all, the newest whatever its size: by count alone, 32 files of 20 MB (an image
    # and a line of text translate in a second) would hold 670 MB.
    download_bytes: int = 64_000_000
    file_char_limit: int = 1_000_000     # characters of a text file (.txt, .html, ...) to translate
    admission: Admission = field(init=False, repr=False)
    bodies: BodyBudget = field(init=False, repr=False)
    answers: AnswerCache = field(init=False, repr=False)
    downloads: AnswerCache = field(init=False, repr=False)

    def __post_init__(self):
        self.admission = Admission(self.concurrency, self.queue)
        # Room for the bodies of the largest requests translating and three waiting (the queue may hold
        # more that are smaller).
        self.bodies = BodyBudget((self.concurrency + 3) * self.largest_body)
        self.answers = AnswerCache(self.cache, self.cache_characters, characters)
        self.downloads = AnswerCache(self.files, self.download_bytes, lambda key, download: len(download["data"]))

    def body_limit(self, kind: str) -> int:
        """The most bytes a body of this Content-Type may have: a file's, or `char_limit` characters as
        UTF-8 and JSON escapes, with room to spare for a form's headers."""
        return (self.file_limit if kind == "multipart/form-data" else 8 * self.char_limit) + 65536

    @property
    def largest_body(self) -> int:
        return max(self.body_limit("multipart/form-data"), self.body_limit("application/json"))

    def health(self) -> dict:
        return {"status": "ok", "languages": self.translator.languages}

    def settings(self) -> dict:
        # The languages a translation page starts from, as LibreTranslate names them: detected, into the
        # first source language's first target.
        target = self.languages()[0]["targets"][0]
        return {"charLimit": self.char_limit, "filesTranslation": True, "fileLimitBytes": self.file_limit,
                "fileCharLimit": self.file_char_limit,
                "supportedFilesFormat": supported(), "apiKeys": False, "keyRequired": False, "suggestions": False,
                "language": {"source": {"code": "auto", "name": "Auto Detect"},
                             "target": {"code": target, "name": LANGUAGE_NAMES.get(target, target)}}}

    def translate_file(self, params: dict) -> dict:
        """The file in `params` translated and kept for download; its path in the answer."""
        upload = params.get("file")
        if not isinstance(upload, tuple):
            raise RequestError(400, "Invalid request: missing file parameter (send multipart/form-data)")
        name, data = upload
        target, source = self._languages(params)
        if len(data) > self.file_limit:
            raise RequestError(413, f"Invalid request: the file ({len(data)} bytes) is over the limit "
                                    f"({self.file_limit})")
        if suffix(name) in METHODS and METHODS[suffix(name)] not in BYTES:      # a text file: its characters
            size = len(data.decode("utf-8", "replace"))
            if size > self.file_char_limit:
                raise RequestError(413, f"Invalid request: the file's text ({size} characters) is over the limit "
                                        f"({self.file_char_limit})")
        try:
            with self.admission.turn():
                translated = translate_file(self.translator, name, data, target, self.options, from_lang=source,
                                            glossary=self.glossary)
        except TranslationError as e:
            raise refusal(e) from None
        key = secrets.token_urlsafe(12)
        self.downloads.put((key,), {"name": name, "data": translated})
        return {"translatedFileUrl": f"/download_file/{key}/{quote(PurePath(name).name)}"}

    def download(self, path: str) -> dict:
        """A translated file, by the path translate_file gave: {"name", "data"}."""
        found = self.downloads.get((path.split("/")[2],)) if path.count("/") >= 2 else None
        if found is None:
            raise RequestError(404, "no such file: it was never made, or was one of the oldest and is gone")
        return found

    def languages(self) -> list[dict]:
        t = self.translator
        return [{"code": source, "name": LANGUAGE_NAMES.get(source, source),
                 "targets": [b for a, b in t.directions if a == source] if t.directions else
                 [x for x in t.languages if x != source]} for source in t.source_languages]

    def detect(self, params: dict) -> list[dict]:
        [text] = self._texts(params, one=True)
        found = language_id.detect(text, self.translator.lexicon) if language_id.has_letters(text) else {}
        ours = sorted(((p, code) for code, p in found.items() if code in self.translator.source_languages),
                      reverse=True)
        if not ours:        # no letters to tell by: LibreTranslate's answer, never an empty list
            return [{"language": self.translator.default_language, "confidence": 0.0}]
        return [{"language": code, "confidence": round(100 * p, 1)} for p, code in ours]

    def translate(self, params: dict) -> dict:
        texts = self._texts(params)
        target, source = self._languages(params)
        fmt = params.get("format") or "text"
        if fmt not in ("text", "html"):
            raise RequestError(400, f"Invalid request: format must be text or html, not {fmt!r}")
        alternatives = _count(params.get("alternatives", 0), "alternatives")
        prefix = params.get("prefix")
        if prefix is not None and fmt == "html":
            raise RequestError(400, "Invalid request: prefix is for format text")
        options = self.options
        if alternatives and fmt == "text":      # an n-best list needs a beam at least that wide (or sampling's draws)
            wider = {} if options.sampling else {"beam_size": max(options.beam_size, alternatives + 1)}
            options = replace(options, num_hypotheses=alternatives + 1, **wider)
        try:
            prefixes = prefixes_for(prefix, len(texts))
        except TranslationError as e:
            raise refusal(e) from None
        keys = [(text, start, source, target, fmt, alternatives) for text, start in zip(texts, prefixes)]
        found = [self.answers.get(key) for key in keys]
        if missing := [i for i, answer in enumerate(found) if answer is None]:
            with self.admission.turn():
                new = self._translated([texts[i] for i in missing], target, source, fmt, options, alternatives,
                                       [prefixes[i] for i in missing])
            for n, i in enumerate(missing):
                found[i] = {name: values[n] for name, values in new.items()}
                self.answers.put(keys[i], found[i])
        if isinstance(params.get("q"), str):                  # one text in, one out, as LibreTranslate answers
            return found[0]
        return {name: [answer[name] for answer in found] for name in found[0]}

    def _translated(self, texts: list[str], target: str, source: str, fmt: str, options: DecodeOptions,
                    alternatives: int, prefix=None) -> dict:
        """The answer's lists: one translation per text, and what else the request asked for."""
        try:
            if fmt == "html":
                answer = {"translatedText": translate_fragments(self.translator, texts, target, options,
                                                                from_lang=source, glossary=self.glossary)}
                if alternatives:    # none for HTML, as LibreTranslate answers (its page asks for 3 in any format)
                    answer["alternatives"] = [[] for _ in texts]
                return answer
            translations = self.translator.translate(texts, target, options, from_lang=source, glossary=self.glossary,
                                                     prefix=prefix)
        except TranslationError as e:
            raise refusal(e) from None
        answer = {"translatedText": [tr.text for tr in translations]}
        if source == "auto":
            answer["detectedLanguage"] = [_detected(tr, self.translator.default_language) for tr in translations]
        if alternatives:
            answer["alternatives"] = [[h.text for h in tr.hypotheses[1:]] for tr in translations]
        return answer

    def _languages(self, params: dict) -> tuple[str, str]:
        target = params.get("target")
        if target is None or target == "":
            raise RequestError(400, "Invalid request: missing target parameter")
        if not isinstance(target, str):
            raise RequestError(400, "Invalid request: target must be a string, a language code")
        source = params.get("source") or "auto"
        if not isinstance(source, str):
            raise RequestError(400, "Invalid request: source must be a string, a language code or auto")
        return target, source

    def _texts(self, params: dict, one: bool = False) -> list[str]:
        q = params.get("q")
        if q is None or q == [] or q == "":
            raise RequestError(400, "Invalid request: missing q parameter")
        texts = [q] if isinstance(q, str) else q
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts) or (one and len(texts) != 1):
            raise RequestError(400, "Invalid request: q must be a string" + ("" if one else " or a list of strings"))
        size = sum(len(t) for t in texts)
        if size > self.char_limit:
            raise RequestError(413, f"Invalid request: request ({size}) exceeds text limit ({self.char_limit})")
        return texts


def _count(value, name: str) -> int:
    if isinstance(value, float) and value.is_integer():      # JSON's 2.0 is 2; 1.7, Infinity and NaN are not
        value = int(value)
    try:
        number = int(value) if isinstance(value, (int, str)) else -1     # a form's value is a str
    except ValueError:
        number = -1
    if isinstance(value, bool) or number < 0 or number > 8:
        raise RequestError(400, f"Invalid request: {name} must be a whole number from 0 to 8")
    return number


def _host_name(host: str) -> str:
    """The name in a Host header, less its port: 'localhost:5000' -> 'localhost', '[::1]:5000' -> '::1'."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def _is_loopback(name: str) -> bool:
    """Whether a host name is this machine whatever DNS says: localhost (*.localhost, as browsers
    take it) or a loopback address."""
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HeaderReads(socket.SocketIO):
    """A connection's reads, each waiting at most `timeout` s for a byte, and, until `deadline` (a
    time.monotonic()) is set to None once the headers are in, all of them done by then: a client sending
    its headers a byte at a time, each just within the timeout (slowloris), held its thread without end."""

    def __init__(self, sock: socket.socket, timeout: float):
        super().__init__(sock, "rb")
        self.timeout, self.deadline = timeout, time.monotonic() + timeout

    def readinto(self, b):
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the request line and headers took over {self.timeout:g} s")
            self._sock.settimeout(min(left, self.timeout))
        return super().readinto(b)

    def headers_read(self) -> None:
        self.deadline = None
        self._sock.settimeout(self.timeout)


def _detected(tr, default: str) -> dict:
    """The language a Translation was taken to be in, with its confidence in percent; for a text with no
    language to tell (numbers, emoji), `default` with 0, as LibreTranslate answers ("en", 0): its clients
    take the language for a string."""
    if tr.language is None:
        return {"language": default, "confidence": 0.0}
    sentence = next((s for s in tr.languages if s.language == tr.language), None)
    probability = sentence.probability if sentence and sentence.probability is not None else 0.0
    return {"language": tr.language, "confidence": round(100 * probability, 1)}


class Handler(BaseHTTPRequestHandler):
    """The HTTP side: routes, body parsing, JSON answers. `service` is set by `make_server`."""

    service: Service
    server_version = "mtkit"
    timeout = REQUEST_TIMEOUT        # `make_server` sets it

    def setup(self):
        super().setup()
        self.rfile.close()              # http.server's, replaced by one whose headers have a deadline
        self._reads = HeaderReads(self.connection, self.timeout)
        self.rfile = io.BufferedReader(self._reads)

    def handle(self):
        try:
            super().handle()
        except ConnectionError as e:     # the client went away: no one to answer, nothing for the operator to do
            reason = str(e) if isinstance(e, ClientGone) else type(e).__name__
            self.log_message('"%s": the client went away (%s)', getattr(self, "requestline", "") or "-", reason)

    def handle_one_request(self):
        self._begun = False
        try:
            super().handle_one_request()
        finally:
            if self._begun:             # answered, or given up on
                self.server.begun(-1)

    def parse_request(self) -> bool:
        """http.server's reading of the request line and headers, then a refusal (403) of what a web page
        in a browser sends on its own: any request with an Origin that --cors does not name (a page may
        POST text/plain or a form to any address, unasked), and, on a server listening on loopback only,
        a Host that is not this machine (DNS rebinding: a page's own name pointed at 127.0.0.1, which
        makes the server its own origin, answers and all)."""
        self.server.begun(+1)           # the request line has come: answered even after SIGTERM
        self._begun = True
        ok = super().parse_request()
        self._reads.headers_read()      # the body's reads wait `timeout` each, as before
        if not ok:
            return False
        origin, host = self.headers.get("Origin"), self.headers.get("Host")
        if origin is not None and self.service.cors not in ("*", origin):
            refusal = (f"Forbidden: a web page from {origin} may not call this server (mt-serve --cors ORIGIN "
                       f"lets one)")
        elif host is not None and self.server.loopback_only and not _is_loopback(_host_name(host)):
            refusal = (f"Forbidden: the Host {host!r} is not this machine; the server listens on loopback only "
                       f"and answers requests to localhost, 127.0.0.1 or [::1] (a proxy in front of it must "
                       f"send one of those)")
        else:
            return True
        self.close_connection = True
        self._answer(403, {"error": refusal})
        return False

    def do_HEAD(self):               # GET's answer, less its body (_answer leaves it out)
        self.do_GET()

    def do_GET(self):
        path = urlsplit(self.path).path.rstrip("/")
        if path in GET_ROUTES:
            self._answer(200, getattr(self.service, GET_ROUTES[path])())
        elif path.startswith("/download_file/"):
            try:
                found = self.service.download(path)
            except RequestError as e:
                self._answer(e.status, {"error": str(e)})
                return
            kind = mimetypes.guess_type(found["name"])[0] or "application/octet-stream"
            self._answer(200, found["data"], {"Content-Type": kind, "Content-Disposition":
                                              f"attachment; filename*=UTF-8''{quote(PurePath(found['name']).name)}"})
        elif path in POST_ROUTES:
            self._wrong_method(path, "POST")
        else:
            self._answer(404, {"error": f"no such endpoint: GET {path or '/'}"})

    def do_OPTIONS(self):            # a browser's preflight before a cross-origin POST
        self._answer(204 if self.service.cors else 405, None)

    def do_POST(self):
        path = urlsplit(self.path).path.rstrip("/")
        if path in GET_ROUTES:
            self._wrong_method(path, "GET")
            return self._discard_body()
        headers, self._body_read = {}, False
        try:
            if path not in POST_ROUTES:
                raise RequestError(404, f"no such endpoint: POST {path or '/'}")
            length, kind = self._body_length()
            with self.service.bodies.hold(length):
                # Fields may come in the URL too, as LibreTranslate takes them (deep-translator sends them all
                # there); the body's win.
                params = {**_form_fields(urlsplit(self.path).query), **self._params(length, kind)}
                with translation_progress(self._stop_if_gone):      # told after each batch: a good time to stop
                    status, answer = 200, getattr(self.service, POST_ROUTES[path])(params)
            if "translatedFileUrl" in answer:               # a whole address, as LibreTranslate gives
                answer["translatedFileUrl"] = f"http://{self.headers.get('Host', 'localhost')}" + answer["translatedFileUrl"]
        except RequestError as e:
            if e.log:
                self._log_fault("fault on %s: %s", path, e.log)
            status, answer = e.status, {"error": str(e)}
            headers = {"Retry-After": "1"} if e.status == 503 else {}
        except ConnectionError:          # the client went away (handle() says so)
            raise
        except Exception as e:           # a fault of ours: the client gets an answer, the log the detail
            self._log_fault("internal error on %s: %r", path, e)
            status, answer = 500, {"error": f"internal error: {type(e).__name__}"}
        self._answer(status, answer, headers)
        if not self._body_read:
            self._discard_body()

    def do_PUT(self):               # JSON, as every answer is, not http.server's HTML page for 501
        self._answer(405, {"error": f"method not allowed: {self.command}; use GET or POST"},
                     {"Allow": "GET, HEAD, POST, OPTIONS"})

    do_DELETE = do_PATCH = do_PUT

    def _wrong_method(self, path: str, allowed: str) -> None:
        self._answer(405, {"error": f"method not allowed: {self.command} {path}; use {allowed}"},
                     {"Allow": f"{allowed}{', HEAD' if allowed == 'GET' else ''}, OPTIONS"})

    def _discard_body(self) -> None:
        """Reads and drops the body of a request refused before it was read (up to the largest body
        taken), then closes: a client that sends its whole body before it reads (Python's http.client and
        urllib do) got a broken pipe, not its answer, when the connection closed on what it was sending."""
        self.close_connection = True
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower() or self._expects_continue():
            return                      # a client that waits for 100 Continue sends no body after a refusal
        try:
            left = min(int(self.headers.get("Content-Length") or 0), self.service.largest_body)
            while left > 0 and (chunk := self.rfile.read(min(left, 65536))):
                left -= len(chunk)
        except (ValueError, OSError):       # no usable length; a client that stalls or goes: it is left
            pass

    def _expects_continue(self) -> bool:
        """Whether the client waits for '100 Continue' before it sends its body: curl does for a body over
        1 MB, and, never told (http.server answers Expect only in HTTP/1.1), waited 1 s on every upload."""
        return (self.headers.get("Expect") or "").lower() == "100-continue" and self.request_version >= "HTTP/1.1"

    def _stop_if_gone(self, done: int, total: int) -> None:
        """The progress callback of a request's translation: stops it if its client has closed the
        connection (http.server does not tell; a socket with nothing left to read but its end does)."""
        try:
            readable = select.select([self.connection], [], [], 0)[0]
            closed = bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except ValueError:              # a descriptor past what select takes: cannot tell, so go on
            closed = False
        except OSError:                 # reset by the client
            closed = True
        if closed:
            raise ClientGone(f"stopped its translation after {done} of {total} sentences")

    def send_error(self, code, message=None, explain=None):
        """http.server's own refusals (a method it has no do_ for, a malformed request) in JSON too, and
        one line in the log, the request's (its message is the client's)."""
        self.close_connection = True
        self._answer(code, {"error": message or HTTPStatus(code).phrase})

    def _body_length(self) -> tuple[int, str]:
        """The length of the request's body, within the limit for its Content-Type, and that type."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():     # else read as no body at all
            raise RequestError(411, "Invalid request: send the body with a Content-Length (chunked transfer "
                                    "is not supported)")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            raise RequestError(400, "Invalid request: bad Content-Length")
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if length > self.service.body_limit(kind):
            raise RequestError(413, f"Invalid request: a body of {length} bytes is over the limit")
        return length, kind

    def _params(self, length: int, kind: str) -> dict:
        self._body_read = True          # or given up on: not to be read again
        if self._expects_continue():    # the request passed what is checked before its body: now send it
            self.wfile.write(f"{self.request_version} 100 Continue\r\n\r\n".encode("latin-1"))
        try:
            body = self.rfile.read(length) if length > 0 else b""
        except TimeoutError:
            self.close_connection = True        # the rest of the body, if it comes, is no next request
            raise RequestError(408, f"Request timeout: no more of the body came for {self.timeout:g} s "
                                    f"(Content-Length said {length} bytes)") from None
        if len(body) < length:
            raise RequestError(400, f"Invalid request: the body ended after {len(body)} of its {length} bytes")
        if kind == "multipart/form-data":
            return _form_data(self.headers.get("Content-Type"), body)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as e:
            raise RequestError(400, f"Invalid request: the body is not UTF-8 (byte {body[e.start]:#x} at offset "
                                    f"{e.start})") from None
        looks_json = text.lstrip().startswith(("{", "["))     # curl -d sends JSON as a form unless told
        if not looks_json and (kind == "application/x-www-form-urlencoded" or "=" in text):
            return _form_fields(text)
        try:
            params = json.loads(text) if text.strip() else {}
            json.dumps(params, ensure_ascii=False).encode("utf-8")     # "\ud800" alone reads as no character
        except json.JSONDecodeError as e:
            raise RequestError(400, f"Invalid request: the body is not JSON ({e.msg} at offset {e.pos})") from None
        except RecursionError:          # [[[[... past Python's recursion limit
            raise RequestError(400, "Invalid request: the body is not JSON (nested too deeply)") from None
        except UnicodeEncodeError as e:
            raise RequestError(400, f"Invalid request: the body has \\u{ord(e.object[e.start]):04x}, half of a "
                                    f"surrogate pair, which is no character") from None
        except ValueError as e:         # a number of more digits than Python converts
            raise RequestError(400, f"Invalid request: the body is not JSON ({str(e).split(':')[0]})") from None
        if not isinstance(params, dict):
            raise RequestError(400, "Invalid request: the body must be a JSON object")
        return params

    def _answer(self, status: int, data, headers: dict | None = None) -> None:
        """`data` as JSON, or as it is if bytes (a file, whose headers say what it is)."""
        raw = isinstance(data, bytes)
        body = data if raw else b"" if data is None else json.dumps(data, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body and not raw:
            self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        if self.service.cors:
            self.send_header("Access-Control-Allow-Origin", self.service.cors)
            self.send_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", "Content-Type")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format, *args):
        if not getattr(self.server, "quiet", False):
            super().log_message(format, *args)

    def _log_fault(self, format, *args):
        """A fault of the server's: logged even when quiet, which leaves out only the line per request."""
        super().log_message(format, *args)


def _form_fields(text: str) -> dict:
    """A form-encoded body's (or a query string's) fields: each field's last value, and `q` a list if repeated."""
    try:        # strict: bytes that are not UTF-8 would become U+FFFD, and be translated as ""
        form = parse_qs(text, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError as e:
        raise RequestError(400, f"Invalid request: a form field is not UTF-8 once percent-decoded (byte "
                                f"{e.object[e.start]:#x})") from None
    return {key: values if key == "q" and len(values) > 1 else values[-1] for key, values in form.items()}


def _form_data(content_type: str, body: bytes) -> dict:
    """A multipart/form-data body's fields: text as str, a file as (its name, its bytes)."""
    import email.parser
    import email.policy

    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body)
    if not message.is_multipart():
        raise RequestError(400, "Invalid request: a multipart/form-data body without its parts")
    fields = {}
    for part in message.iter_parts():
        name, data = part.get_param("name", header="content-disposition"), part.get_payload(decode=True) or b""
        if part.get_filename() is not None:
            fields[name] = (part.get_filename(), data)
            continue
        try:
            fields[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            raise RequestError(400, f"Invalid request: the form field {name!r} is not UTF-8") from None
    return fields


class Server(ThreadingHTTPServer):
    """http.server's threaded server, with at most `connections` served at once (a thread each): past
    that a new connection is answered 503 at once and closed, not given a thread, so that clients that
    hold connections open (slowloris) cannot run the server out of threads and memory. It counts the
    requests begun, for SIGTERM to let them be answered (serve_cli). `make_server` sets `connections`,
    `slots` and `answered`."""

    daemon_threads = True
    request_queue_size = 128    # listen backlog (socketserver's is 5): a burst of clients waits here, not in SYN retries
    connections: int
    slots: threading.BoundedSemaphore
    answering = 0               # requests begun (their request line read) and not yet answered
    answered: threading.Condition

    def begun(self, change: int) -> None:
        with self.answered:
            self.answering += change
            self.answered.notify_all()

    def finish_answering(self, seconds: float) -> bool:
        """Wait, at most `seconds`, until the requests begun are answered (the daemon threads answering
        them end with the process); whether they all were."""
        with self.answered:
            return self.answered.wait_for(lambda: self.answering == 0, seconds)

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            return self._turn_away(request, client_address)
        try:
            super().process_request(request, client_address)        # starts the thread
        except BaseException:           # no thread: its slot is free again
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def _turn_away(self, request, client_address) -> None:
        """503 and close, written by the thread that accepts every connection: so it never waits on this one."""
        body = json.dumps({"error": f"busy: {self.connections} connections being served; retry later"}).encode()
        cors = self.RequestHandlerClass.service.cors
        head = ("HTTP/1.0 503 Service Unavailable\r\nServer: mtkit\r\nContent-Type: application/json; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\nRetry-After: 1\r\n"
                + (f"Access-Control-Allow-Origin: {cors}\r\n" if cors else "") + "\r\n")
        try:
            request.setblocking(False)
            request.send(head.encode("latin-1") + body)
            request.recv(65536)         # what the request sent already: closed unread, the socket resets, the answer lost
        except OSError:                 # nothing sent yet, or a client already gone
            pass
        self.shutdown_request(request)
        if not self.quiet:
            sys.stderr.write(f"{client_address[0]} - - [{time.strftime('%d/%b/%Y %H:%M:%S')}] refused a "
                             f"connection: {self.connections} being served (503)\n")


def make_server(service: Service, host: str = "127.0.0.1", port: int = 5000, quiet: bool = False,
                timeout: float = REQUEST_TIMEOUT, connections: int | None = None) -> Server:
    """A threaded HTTP server for `service`, bound and ready for `serve_forever()` (port 0: any free one).
    `timeout`: the seconds a client may stall in sending its request before it is answered 408, and the
    most its request line and headers may take. `connections`: the most served at once (default: the
    translations running and waiting, `concurrency` + `queue`, and SPARE_CONNECTIONS more)."""
    handler = type("ServiceHandler", (Handler,), {"service": service, "timeout": timeout})
    host = host.strip("[]")
    kind = Server
    if ":" in host:                 # an IPv6 address (::1, ::), which an IPv4 socket cannot take
        kind = type("Server6", (Server,), {"address_family": socket.AF_INET6})
    server = kind((host, port), handler)
    server.connections = connections or service.concurrency + service.queue + SPARE_CONNECTIONS
    server.slots = threading.BoundedSemaphore(server.connections)
    server.answered = threading.Condition()
    server.quiet = quiet
    # Bound to loopback only: the Host of every request must name this machine (see Handler.parse_request)
    server.loopback_only = ipaddress.ip_address(server.server_address[0]).is_loopback
    return server
