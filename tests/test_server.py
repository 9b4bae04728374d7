"""`mt-serve` (runtime/server.py): LibreTranslate's HTTP API over the fixture model, on a real socket.
GERMAN[i] -> ENGLISH[i] is what the fixture model reproduces on any CPU (greedy)."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import ENGLISH, GERMAN
from mtkit.runtime import DecodeOptions
from mtkit.runtime.server import Service, make_server

MT_SERVE = Path(sys.executable).parent / "mt-serve"


@pytest.fixture(scope="module")
def url(fixture_bundle):
    from mtkit.runtime import Translator
    translator = Translator(fixture_bundle, variant="fp32", threads=1)
    server = make_server(Service(translator, DecodeOptions(beam_size=1), char_limit=2000, file_char_limit=5000),
                         port=0, quiet=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def call(url: str, path: str, data=None, raw: bytes | None = None, content_type: str = "application/json"):
    """(status, decoded JSON answer)."""
    body = raw if raw is not None else (json.dumps(data).encode() if data is not None else None)
    request = urllib.request.Request(url + path, data=body, headers={"Content-Type": content_type} if body else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_languages(url):
    assert call(url, "/languages") == (200, [{"code": "de", "name": "German", "targets": ["en"]},
                                             {"code": "en", "name": "English", "targets": ["de"]}])


def test_translate_one_text_and_a_list(url):
    assert call(url, "/translate", {"q": GERMAN[0], "source": "de", "target": "en"}) == \
        (200, {"translatedText": ENGLISH[0]})
    status, answer = call(url, "/translate", {"q": GERMAN[1:4], "source": "auto", "target": "en"})
    assert status == 200 and answer["translatedText"] == ENGLISH[1:4]
    assert [d["language"] for d in answer["detectedLanguage"]] == ["de"] * 3
    assert all(0 < d["confidence"] <= 100 for d in answer["detectedLanguage"])


def test_form_bodies_and_json_sent_as_a_form(url):
    form = f"q={GERMAN[4]}&source=de&target=en".encode()
    assert call(url, "/translate", raw=form, content_type="application/x-www-form-urlencoded") == \
        (200, {"translatedText": ENGLISH[4]})
    as_form = json.dumps({"q": GERMAN[5], "source": "de", "target": "en"}).encode()     # what curl -d does
    assert call(url, "/translate", raw=as_form, content_type="application/x-www-form-urlencoded") == \
        (200, {"translatedText": ENGLISH[5]})


def test_fields_in_the_query_string_as_deep_translator_sends_them(url):
    """deep-translator's LibreTranslator posts an empty body with every field in the URL
    (requests.post(url, params=...)); LibreTranslate reads both (Flask's request.values)."""
    query = urllib.parse.urlencode({"q": GERMAN[4], "source": "de", "target": "en", "format": "text", "api_key": "k"})
    request = urllib.request.Request(f"{url}/translate?{query}", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        assert json.loads(response.read()) == {"translatedText": ENGLISH[4]}
    form = f"q={GERMAN[5]}&target=en".encode()
    assert call(url, "/translate?source=de", raw=form, content_type="application/x-www-form-urlencoded") == \
        (200, {"translatedText": ENGLISH[5]})


def test_frontend_settings_name_the_default_languages(url):
    """libretranslate-aio's frontend_settings() reads language.source and language.target (KeyError without)."""
    status, settings = call(url, "/frontend/settings")
    assert status == 200 and settings["language"] == {"source": {"code": "auto", "name": "Auto Detect"},
                                                      "target": {"code": "en", "name": "English"}}


def test_alternatives_and_html(url):
    status, answer = call(url, "/translate", {"q": GERMAN[6], "source": "de", "target": "en", "alternatives": 2})
    assert status == 200 and len(answer["alternatives"]) == 2 and all(isinstance(a, str) for a in answer["alternatives"])
    status, answer = call(url, "/translate", {"q": f"<p><b>{GERMAN[7]}</b></p>", "source": "de", "target": "en",
                                              "format": "html"})
    assert (status, answer) == (200, {"translatedText": f"<p><b>{ENGLISH[7]}</b></p>"})


def test_html_asked_for_alternatives_gets_none_as_from_libretranslate(url):
    """The request LibreTranslate's own page gives as its example (and sends) asks for 3 alternatives in HTML
    too; LibreTranslate answers an empty list for each text, as it makes none for HTML."""
    status, answer = call(url, "/translate", {"q": f"<p>{GERMAN[7]}</p>", "source": "de", "target": "en",
                                              "format": "html", "alternatives": 3, "api_key": ""})
    assert (status, answer) == (200, {"translatedText": f"<p>{ENGLISH[7]}</p>", "alternatives": []})
    status, answer = call(url, "/translate", {"q": [f"<b>{GERMAN[0]}</b>"], "target": "en", "format": "html",
                                              "alternatives": 3})
    assert status == 200 and answer["alternatives"] == [[]]


def test_a_prefix_starts_each_translation(url):
    status, answer = call(url, "/translate", {"q": GERMAN[2], "source": "de", "target": "en", "prefix": "The wom",
                                              "alternatives": 2})
    assert status == 200 and answer["translatedText"].startswith("The wom")
    assert all(a.startswith("The wom") for a in answer["alternatives"])
    status, answer = call(url, "/translate", {"q": [GERMAN[0], GERMAN[1]], "source": "de", "target": "en",
                                              "prefix": ["It", None]})
    assert status == 200 and answer["translatedText"][0].startswith("It") and answer["translatedText"][1] == ENGLISH[1]
    for bad, message in [({"prefix": 3}, "prefix must be a str"), ({"prefix": ["a", "b"]}, "prefix has 2 entries"),
                         ({"prefix": "A", "format": "html"}, "prefix is for format text")]:
        status, answer = call(url, "/translate", {"q": GERMAN[0], "source": "de", "target": "en", **bad})
        assert status == 400 and message in answer["error"]


def test_detect(url):
    status, answer = call(url, "/detect", {"q": "Das ist ein sehr kleines Haus und wir wohnen gern darin."})
    assert status == 200 and answer[0]["language"] == "de" and answer[0]["confidence"] > 50


def test_a_text_without_letters_is_detected_as_the_default_language_with_no_confidence(url):
    """As LibreTranslate answers ("en", 0.0): typed clients (kotlinx.serialization's `language: String`, serde's
    String) fail on a null language, and `detect(q)[0]` on an empty list."""
    assert call(url, "/detect", {"q": "12 345"}) == (200, [{"language": "en", "confidence": 0.0}])
    status, answer = call(url, "/translate", {"q": "12 345", "source": "auto", "target": "de"})
    assert status == 200 and answer["detectedLanguage"] == {"language": "en", "confidence": 0.0}


@pytest.mark.parametrize("path, data, raw, status, message", [
    ("/translate", {"target": "en"}, None, 400, "missing q parameter"),
    ("/translate", {"q": "Hallo"}, None, 400, "missing target parameter"),
    ("/translate", {"q": "Hallo", "target": ["en"]}, None, 400, "target must be a string, a language code"),
    ("/translate", {"q": "Hallo", "target": "en", "source": ["de"]}, None, 400, "source must be a string"),
    ("/translate", {"q": ["Hallo", 3], "target": "en"}, None, 400, "q must be a string or a list of strings"),
    ("/translate", {"q": "Hallo", "target": "fr"}, None, 400, "cannot translate into 'fr'"),
    ("/translate", {"q": "Hallo", "target": "en", "alternatives": "x"}, None, 400, "alternatives must be"),
    ("/translate", {"q": "Hallo", "target": "en", "format": "pdf"}, None, 400, "format must be text or html"),
    ("/translate", {"q": "a" * 2001, "target": "en"}, None, 413, "request (2001) exceeds text limit (2000)"),
    ("/translate", None, b'{"q": "Hallo", "target": ', 400, "the body is not JSON"),
    ("/translate", None, b'{"q": "Gr\xfc\xdfe", "target": "en"}', 400, "the body is not UTF-8 (byte 0xfc"),
    ("/translate", None, b"[1, 2]", 400, "must be a JSON object"),
    ("/detect", {"q": ["a", "b"]}, None, 400, "q must be a string"),
    ("/nowhere", {"q": "Hallo"}, None, 404, "no such endpoint: POST /nowhere"),
])
def test_bad_requests_get_a_status_and_a_message(url, path, data, raw, status, message):
    got, answer = call(url, path, data, raw)
    assert got == status and message in answer["error"]


def test_requests_at_once_each_get_their_own_answer(url):
    def ask(i):
        return call(url, "/translate", {"q": GERMAN[i], "source": "de", "target": "en"})[1]["translatedText"]
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(ask, range(16))) == ENGLISH[:16]


class Gated:
    """The fixture Translator behind a gate that the test opens, counting the calls inside at once:
    what is tested here is admission, not the model."""

    def __init__(self, translator):
        self.translator, self.gate, self.lock = translator, threading.Event(), threading.Lock()
        self.inside = self.most = self.calls = 0

    def translate(self, *args, **kwargs):
        with self.lock:
            self.inside, self.calls = self.inside + 1, self.calls + 1
            self.most = max(self.most, self.inside)
        try:
            assert self.gate.wait(30)
            return self.translator.translate(*args, **kwargs)
        finally:
            with self.lock:
                self.inside -= 1

    def __getattr__(self, name):
        return getattr(self.translator, name)


def test_translations_take_turns_and_a_full_queue_is_told_to_retry(fixture_bundle):
    from mtkit.runtime import Translator
    gated = Gated(Translator(fixture_bundle, variant="fp32", threads=1))
    server = make_server(Service(gated, DecodeOptions(beam_size=1), concurrency=1, queue=1), port=0, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(call, url, "/translate", {"q": GERMAN[0], "source": "de", "target": "en"})
            second = pool.submit(call, url, "/translate", {"q": GERMAN[1], "source": "de", "target": "en"})
            while gated.calls < 1 or server.RequestHandlerClass.service.admission.inside < 2:
                time.sleep(0.01)                        # one translating, one waiting: the queue is full
            request = urllib.request.Request(url + "/translate", json.dumps(
                {"q": GERMAN[2], "source": "de", "target": "en"}).encode(), {"Content-Type": "application/json"})
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=30)
            assert refused.value.code == 503 and refused.value.headers["Retry-After"] == "1"
            assert "busy: 1 translating and 1 waiting; retry later" in json.loads(refused.value.read())["error"]
            assert call(url, "/languages")[0] == 200               # what translates nothing is not held up
            gated.gate.set()
            assert first.result() == (200, {"translatedText": ENGLISH[0]})
            assert second.result() == (200, {"translatedText": ENGLISH[1]})
        assert gated.most == 1 and gated.calls == 2
    finally:
        server.shutdown()
        server.server_close()


def test_answers_are_kept_and_given_again_without_translating(fixture_bundle):
    from mtkit.runtime import Translator
    gated = Gated(Translator(fixture_bundle, variant="fp32", threads=1))
    gated.gate.set()
    server = make_server(Service(gated, DecodeOptions(beam_size=1), cache=3), port=0, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"

    def ask(q, **more):
        status, answer = call(url, "/translate", {"q": q, "source": "de", "target": "en", **more})
        assert status == 200
        return answer["translatedText"]

    try:
        assert ask(GERMAN[:2]) == ENGLISH[:2] and gated.calls == 1
        assert ask(GERMAN[:2]) == ENGLISH[:2] and ask(GERMAN[1]) == ENGLISH[1] and gated.calls == 1
        assert ask(GERMAN[1:3]) == ENGLISH[1:3] and gated.calls == 2          # only GERMAN[2] was translated
        assert ask(GERMAN[1], prefix="It").startswith("It") and gated.calls == 3    # another start: another answer
        assert ask(GERMAN[0]) == ENGLISH[0] and gated.calls == 4             # the oldest of 3 was let go
    finally:
        server.shutdown()
        server.server_close()


def start_mt_serve(model) -> tuple[subprocess.Popen, int]:
    """mt-serve on a free port, its stderr piped (its banner read), and that port."""
    process = subprocess.Popen([str(MT_SERVE), "-m", str(model), "--port", "0", "--greedy", "-q", "--threads", "1"],
                               stderr=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    banner = process.stderr.readline()
    if not (listening := re.search(r"http://127\.0\.0\.1:(\d+)", banner)):
        process.kill()
        pytest.fail(f"mt-serve did not start: {banner}")
    return process, int(listening.group(1))


def test_mt_serve_runs_until_terminated(fixture_bundle, tmp_path):
    process, port = start_mt_serve(fixture_bundle)
    try:
        assert call(f"http://127.0.0.1:{port}", "/translate", {"q": GERMAN[8], "source": "de", "target": "en"}) == \
            (200, {"translatedText": ENGLISH[8]})
        # The same port again: taken, one line, exit 1.
        second = subprocess.run([str(MT_SERVE), "-m", str(fixture_bundle), "--port", str(port)], capture_output=True,
                                text=True, timeout=60)
        assert second.returncode == 1 and second.stderr.strip().startswith(f"mt-serve: error: cannot listen on "
                                                                          f"127.0.0.1:{port}")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        assert process.stderr.read() == "mt-serve: stopped (SIGTERM)\n"
    finally:
        process.kill()


def test_cors_only_when_asked(url, fixture_bundle):
    preflight = urllib.request.Request(url + "/translate", method="OPTIONS")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(preflight, timeout=30)
    assert refused.value.code == 405 and refused.value.headers.get("Access-Control-Allow-Origin") is None

    from mtkit.runtime import Translator
    server = make_server(Service(Translator(fixture_bundle, variant="fp32", threads=1), DecodeOptions(beam_size=1),
                                 cors="https://example.org"), port=0, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        other = f"http://127.0.0.1:{server.server_address[1]}"
        with urllib.request.urlopen(urllib.request.Request(other + "/translate", method="OPTIONS"), timeout=30) as r:
            assert r.status == 204 and r.headers["Access-Control-Allow-Origin"] == "https://example.org"
        request = urllib.request.Request(other + "/translate", data=json.dumps({"q": GERMAN[9], "source": "de",
                                                                                 "target": "en"}).encode())
        with urllib.request.urlopen(request, timeout=60) as r:
            assert r.headers["Access-Control-Allow-Origin"] == "https://example.org"
            assert json.loads(r.read()) == {"translatedText": ENGLISH[9]}
    finally:
        server.shutdown()
        server.server_close()


def ask_as(url: str, headers: dict, content_type: str = "text/plain") -> tuple[int, dict]:
    """POST /translate with these headers (Host, Origin: what a browser sends), by http.client, which
    sends Host as given."""
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
    body = json.dumps({"q": GERMAN[10], "source": "de", "target": "en"})
    connection.request("POST", "/translate", body, {"Content-Type": content_type, **headers})
    answer = connection.getresponse()
    try:
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def test_web_pages_and_dns_rebinding_are_refused(url, fixture_bundle):
    """Any web page could make a browser POST text/plain (read as JSON) or a form to 127.0.0.1:5000 and
    have it translated, and a page whose name was pointed at 127.0.0.1 (DNS rebinding) could read the
    answers too: the Origin and the Host were not looked at."""
    port = url.rsplit(":", 1)[1]
    status, answer = ask_as(url, {"Origin": "http://evil.example"})
    assert status == 403 and "a web page from http://evil.example may not call this server" in answer["error"]
    status, answer = ask_as(url, {"Origin": "null"}, "application/x-www-form-urlencoded")
    assert status == 403
    status, answer = ask_as(url, {"Host": f"evil.example:{port}"})
    assert status == 403 and "the Host 'evil.example:" in answer["error"]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "LOCALHOST", "app.localhost"):
        assert ask_as(url, {"Host": host}) == (200, {"translatedText": ENGLISH[10]}), host
    assert call(url, "/languages")[0] == 200            # clients that send no Origin: as before

    from mtkit.runtime import Translator
    translator = Translator(fixture_bundle, variant="fp32", threads=1)
    with serving(translator, quiet=True, cors="https://example.org") as where:
        assert ask_as(where, {"Origin": "https://example.org"})[0] == 200
        assert ask_as(where, {"Origin": "https://example.org.evil.example"})[0] == 403
    with serving(translator, quiet=True, cors="*") as where:
        assert ask_as(where, {"Origin": "https://anywhere.example"})[0] == 200
    # Listening on every interface: reached by whatever names the machine has.
    server = make_server(Service(translator, DecodeOptions(beam_size=1)), host="0.0.0.0", port=0, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        where = f"http://127.0.0.1:{server.server_address[1]}"
        assert ask_as(where, {"Host": "translate.lan"}) == (200, {"translatedText": ENGLISH[10]})
        assert ask_as(where, {"Host": "translate.lan", "Origin": "http://evil.example"})[0] == 403
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_wide_glossary(fixture_bundle, tmp_path):
    from mtkit.runtime import Glossary, Translator
    glossary = Glossary.from_pairs("de", "en", [("Bananen", "plantains")])
    server = make_server(Service(Translator(fixture_bundle, variant="fp32", threads=1), DecodeOptions(beam_size=1),
                                 glossary=glossary), port=0, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        status, answer = call(f"http://127.0.0.1:{server.server_address[1]}", "/translate",
                              {"q": [GERMAN[16], GERMAN[0]], "source": "de", "target": "en"})
        assert status == 200 and "lantains" in answer["translatedText"][0] and answer["translatedText"][1] == ENGLISH[0]
    finally:
        server.shutdown()
        server.server_close()
    bad = tmp_path / "g.tsv"
    bad.write_text("Bananen\tplantains\n", encoding="utf-8")
    done = subprocess.run([str(MT_SERVE), "--glossary", str(bad), "--port", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.startswith(f"mt-serve: error: {bad}, line 1:")


def raw_call(url: str, path: str, body: bytes, content_type: str = "application/json", method: str = "POST"):
    """(status, headers, answer text): for answers that might not be JSON."""
    request = urllib.request.Request(url + path, data=body, headers={"Content-Type": content_type}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


@pytest.mark.parametrize("body, message", [
    (b'{"q": "Hallo", "target": "en", "alternatives": Infinity}', "alternatives must be a whole number from 0 to 8"),
    (b'{"q": "Hallo", "target": "en", "alternatives": -Infinity}', "alternatives must be a whole number from 0 to 8"),
    (b'{"q": "Hallo", "target": "en", "alternatives": 1e400}', "alternatives must be a whole number from 0 to 8"),
    (b'{"q": "Hallo", "target": "en", "alternatives": NaN}', "alternatives must be a whole number from 0 to 8"),
    (b'{"q": "Hallo", "target": "en", "alternatives": 1.7}', "alternatives must be a whole number from 0 to 8"),
    (b'{"q": "Hallo", "target": "en", "alternatives": ' + b"9" * 5000 + b"}", "the body is not JSON (Exceeds the limit"),
    (b"[" * 50_000, "the body is not JSON (nested too deeply)"),
    (b'{"q": "<b>\\ud800</b>", "target": "en", "format": "html"}', "the body has \\ud800, half of a surrogate pair"),
], ids=["Infinity", "-Infinity", "1e400", "NaN", "1.7", "5000 digits", "nested", "lone surrogate"])
def test_numbers_and_nesting_past_what_python_reads_are_bad_requests(url, body, message):
    status, _, text = raw_call(url, "/translate", body)
    assert status == 400 and message in json.loads(text)["error"] and "Traceback" not in text


def test_a_whole_number_written_as_a_float_is_taken(url):
    status, answer = call(url, "/translate", {"q": GERMAN[6], "source": "de", "target": "en", "alternatives": 2.0})
    assert status == 200 and len(answer["alternatives"]) == 2


def test_a_form_field_that_is_not_utf8_is_a_bad_request(url):
    status, _, text = raw_call(url, "/translate", b"q=%FF&source=de&target=en", "application/x-www-form-urlencoded")
    assert status == 400 and "a form field is not UTF-8 once percent-decoded (byte 0xff)" in json.loads(text)["error"]


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH"])
def test_other_methods_get_json_405_with_allow(url, method):
    status, headers, text = raw_call(url, "/translate", b'{"q": "Hallo", "target": "en"}', method=method)
    assert status == 405 and headers["Allow"] == "GET, HEAD, POST, OPTIONS"
    assert headers["Content-Type"].startswith("application/json")
    assert json.loads(text) == {"error": f"method not allowed: {method}; use GET or POST"}


@pytest.mark.parametrize("path, method, allowed", [("/translate", "GET", "POST"), ("/detect", "GET", "POST"),
                                                  ("/languages", "POST", "GET"), ("/health", "POST", "GET")])
def test_an_endpoint_asked_with_the_other_method_says_which_it_takes(url, path, method, allowed):
    status, headers, text = raw_call(url, path, b"{}" if method == "POST" else None, method=method)
    assert status == 405 and headers["Allow"] == {"POST": "POST, OPTIONS", "GET": "GET, HEAD, OPTIONS"}[allowed]
    assert json.loads(text) == {"error": f"method not allowed: {method} {path}; use {allowed}"}


def test_head_is_get_without_the_body(url):
    """HEAD was 501: it gets GET's status and headers, no body."""
    for path, status in [("/languages", 200), ("/frontend/settings", 200), ("/download_file/nothing/a.txt", 404)]:
        got, headers, text = raw_call(url, path, None, method="HEAD")
        get_status, _, get_text = raw_call(url, path, None, method="GET")
        assert (got, get_status, text) == (status, status, "")
        assert headers["Content-Length"] == str(len(get_text.encode()))
    got, headers, text = raw_call(url, "/translate", None, method="HEAD")
    assert (got, headers["Allow"], text) == (405, "POST, OPTIONS", "")


def test_a_method_http_server_does_not_know_gets_json_too(url):
    status, headers, text = raw_call(url, "/translate", b"", method="FOO")
    assert status == 501 and json.loads(text) == {"error": "Unsupported method ('FOO')"}


def test_mt_serve_refuses_a_glossary_for_another_pair(fixture_bundle, tmp_path):
    glossary = tmp_path / "g.tsv"
    glossary.write_text("de\tfr\nHaus\tmaison\n", encoding="utf-8")
    done = subprocess.run([str(MT_SERVE), "-m", str(fixture_bundle), "--threads", "1",
                           "--glossary", str(glossary), "--port", "0"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 1 and done.stderr == (f"mt-serve: error: {glossary}: the glossary is for de and fr, but "
                                                    f"this model translates de -> en, en -> de\n")


@pytest.mark.parametrize("headers, status, message", [
    ({"Transfer-Encoding": "chunked"}, 411, "send the body with a Content-Length"),
    ({"Content-Length": "-5"}, 400, "bad Content-Length"),
    ({"Content-Length": "five"}, 400, "bad Content-Length"),
])
def test_a_body_without_a_usable_length_is_refused(url, headers, status, message):
    """A chunked body was read as no body at all, and answered "missing q parameter"."""
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
    body = b'{"q": "Hallo", "target": "en"}'
    if "chunked" in headers.values():
        body = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    connection.putrequest("POST", "/translate")
    for name, value in {"Content-Type": "application/json", **headers}.items():
        connection.putheader(name, value)
    connection.endheaders(body)
    answer = connection.getresponse()
    assert answer.status == status and message in json.loads(answer.read())["error"]
    connection.close()


def form_data(fields: dict, file: tuple[str, bytes]) -> tuple[bytes, str]:
    """A multipart/form-data body of text `fields` and one (name, bytes) file, and its Content-Type."""
    boundary = "mtkit-test-boundary"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields.items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file[0]}"\r\n'
                 f"Content-Type: application/octet-stream\r\n\r\n".encode() + file[1] + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def test_translate_file_then_download_it(url):
    """LibreTranslate's file translation: POST /translate_file gives an address, GET there gives the file."""
    from office_files import docx, paragraph, texts
    from pdf_files import paragraph as pdf_paragraph
    from pdf_files import pdf, text_of

    page = pdf(lambda sheet: pdf_paragraph(sheet, GERMAN[4], 72, 780, 450))
    for name, data, read in (("brief.docx", docx(paragraph(GERMAN[0]) + paragraph(GERMAN[1])), texts),
                             ("notiz.txt", f"{GERMAN[2]}\r\n\r\n{GERMAN[3]}".encode(), lambda d: d.decode()),
                             ("scan.pdf", page, text_of)):
        body, kind = form_data({"source": "de", "target": "en"}, (name, data))
        status, answer = call(url, "/translate_file", raw=body, content_type=kind)
        assert status == 200 and answer["translatedFileUrl"].startswith(url + "/download_file/")
        assert answer["translatedFileUrl"].endswith("/" + name)
        with urllib.request.urlopen(answer["translatedFileUrl"], timeout=60) as response:
            assert name in response.headers["Content-Disposition"]
            got = response.read()
        expected = {"brief.docx": [ENGLISH[0], ENGLISH[1]], "notiz.txt": f"{ENGLISH[2]}\r\n\r\n{ENGLISH[3]}",
                    "scan.pdf": ENGLISH[4]}[name]
        assert read(got) == expected
    status, settings = call(url, "/frontend/settings")
    assert status == 200 and settings["filesTranslation"] and ".epub" in settings["supportedFilesFormat"]


@pytest.mark.parametrize("name, data, status, message", [
    ("old.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", 400, "files of type .doc are not supported"),
    ("scan.pdf", b"%PDF-1.7", 400, "the PDF is damaged"),
    ("alt.docx", b"not a zip", 400, "not a .docx"),
    ("latin1.txt", "Grüße".encode("latin-1"), 400, "not UTF-8"),
    # polib would read it as the message "Guten Morge", with no error
    ("app.po", b'msgid "Guten Morgen\nmsgstr ""\n', 400, 'not a gettext catalog: line 1: a string must be in double'),
])
def test_translate_file_refuses_what_it_cannot_read(url, name, data, status, message):
    body, kind = form_data({"target": "en"}, (name, data))
    code, answer = call(url, "/translate_file", raw=body, content_type=kind)
    assert code == status and message in answer["error"]


def test_a_catalog_naming_a_file_of_the_servers_is_not_that_file(url, tmp_path):
    """polib opens a string that names a file: a .po whose text is a path must not return the server's file."""
    private = tmp_path / "private.po"
    private.write_text('msgid ""\nmsgstr ""\n"Language: en\\n"\n\n# the server\'s own\nmsgid "Hallo"\nmsgstr "x"\n')
    body, kind = form_data({"source": "de", "target": "en"}, ("app.po", str(private).encode()))
    code, answer = call(url, "/translate_file", raw=body, content_type=kind)
    assert code == 400 and "not a gettext catalog" in answer["error"]


def test_a_file_never_made_is_not_found(url):
    assert call(url, "/download_file/nothing/brief.docx")[0] == 404
    assert call(url, "/translate_file", {"target": "en"})[0] == 400       # JSON: no file in it


def test_a_text_file_over_the_file_char_limit_is_refused(url):
    """A 20 MB one-line .txt was taken (--char-limit did not apply to files) and translated for 11 s."""
    for name in ("long.txt", "long.html"):
        body, kind = form_data({"source": "de", "target": "en"}, (name, ("Grüße. " * 715)[:5001].encode()))
        status, answer = call(url, "/translate_file", raw=body, content_type=kind)
        assert status == 413 and "the file's text (5001 characters) is over the limit (5000)" in answer["error"]
    assert call(url, "/frontend/settings")[1]["fileCharLimit"] == 5000


@contextmanager
def serving(translator, quiet: bool = False, timeout: float = 60, connections: int | None = None, **settings):
    """The address of a server for `translator` with Service's `settings`, until the block ends."""
    server = make_server(Service(translator, DecodeOptions(beam_size=1), **settings), port=0, quiet=quiet,
                         timeout=timeout, connections=connections)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_fault_of_the_model_is_500_with_its_detail_in_the_log_only(fixture_bundle, tmp_path, capfd):
    """ONNX Runtime's errors in a run (out of memory too) are ModelLoadErrors, which were answered 400
    "Invalid request", with the server's paths in them. Provoked for real, as in test_runtime_backend.py:
    config.json promising longer sentences (max_positions 512) than the graphs' positions (64)."""
    from mtkit.runtime import Translator, checksums
    from mtkit.runtime.bundle_format import BundleConfig

    longer = Path(shutil.copytree(fixture_bundle, tmp_path / "longer"))
    config = BundleConfig.load(longer)
    config.max_positions = 512
    config.save(longer)
    checksums.record(longer)
    with serving(Translator(longer, threads=1), quiet=True) as where:        # a fault is logged even so
        capfd.readouterr()
        status, answer = call(where, "/translate", {"q": " ".join(["Guten Morgen und"] * 40), "source": "de",
                                                    "target": "en"})
        assert (status, answer) == (500, {"error": "the model failed to translate this request; see the server's log"})
        assert re.search(r"fault on /translate: \S*longer/encoder\.int8\.onnx: ONNX Runtime could not run it",
                         capfd.readouterr().err)
        assert call(where, "/translate", {"q": GERMAN[0], "source": "de", "target": "en"})[0] == 200
        status, answer = call(where, "/translate", {"q": GERMAN[0], "target": "fr"})     # still the request's fault
        assert status == 400 and "cannot translate into 'fr'" in answer["error"]


def log_until(capfd, pattern: str, seconds: float = 30) -> str:
    """The server's log (stderr) until a line matches `pattern`, or `seconds` have passed."""
    log, deadline = "", time.monotonic() + seconds
    while not re.search(pattern, log) and time.monotonic() < deadline:
        time.sleep(0.05)
        log += capfd.readouterr().err
    return log


def answer_on(sock: socket.socket) -> bytes:
    """Everything the server sends on `sock` until it closes the connection."""
    sock.settimeout(30)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_a_client_that_stalls_in_its_body_gets_408(fixture_translator):
    """It got 500 "internal error: TimeoutError" (after 60 s: here the server's timeout is made short)."""
    with serving(fixture_translator, timeout=0.5) as where, \
            socket.create_connection(("127.0.0.1", int(where.rsplit(":", 1)[1]))) as sock:
        sock.sendall(b'POST /translate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n'
                     b'Content-Length: 100\r\n\r\n{"q": "Hal')
        head, _, body = answer_on(sock).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.0 408 ")
        assert json.loads(body) == {"error": "Request timeout: no more of the body came for 0.5 s "
                                             "(Content-Length said 100 bytes)"}


def test_connections_past_the_limit_are_answered_503_at_once(fixture_translator, capfd):
    """Each connection had a thread, without limit: clients holding connections open (slowloris) could
    run the server out of threads and memory. Past `connections`, one gets 503 at once, unread."""
    with serving(fixture_translator, connections=3) as where:
        port = int(where.rsplit(":", 1)[1])
        capfd.readouterr()
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]     # they send nothing
        with socket.create_connection(("127.0.0.1", port)) as sock:
            start = time.monotonic()
            sock.sendall(b"GET /languages HTTP/1.0\r\nHost: localhost\r\n\r\n")
            head, _, body = answer_on(sock).partition(b"\r\n\r\n")
            assert time.monotonic() - start < 5
        assert head.startswith(b"HTTP/1.0 503 ") and b"\r\nRetry-After: 1" in head
        assert json.loads(body) == {"error": "busy: 3 connections being served; retry later"}
        assert "refused a connection: 3 being served (503)" in log_until(capfd, "refused a connection")
        for sock in idle:               # they go: their threads end, and there is room again
            sock.close()
        deadline = time.monotonic() + 30
        while (answer := call(where, "/languages"))[0] == 503 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert answer[0] == 200


def test_a_client_sending_its_headers_a_byte_at_a_time_is_cut_off(fixture_translator):
    """The timeout was per read only: a byte every 0.2 s (within a timeout of 1 s) held the connection,
    and its thread, for as long as the client went on (forever, 60 s being the default). The request
    line and headers now have the timeout in all."""
    with serving(fixture_translator, timeout=1) as where, \
            socket.create_connection(("127.0.0.1", int(where.rsplit(":", 1)[1]))) as sock:
        start, closed = time.monotonic(), False
        try:
            for byte in b"GET /languages HTTP/1.0\r\nX-Slow: " + b"a" * 50:      # 15 s of it
                sock.sendall(bytes([byte]))
                if select.select([sock], [], [], 0.2)[0]:      # the server closed it
                    closed = sock.recv(100) == b""
                    break
        except ConnectionError:         # closed as a byte came
            closed = True
        assert closed and time.monotonic() - start < 5


def test_a_client_that_goes_away_is_one_line_in_the_log_and_its_translation_stops(fixture_translator, capfd):
    """Clients that disconnected made tracebacks in the log (BrokenPipeError, ConnectionResetError), and
    an abandoned file went on translating, holding up the requests after it."""
    with serving(fixture_translator) as where:
        port = int(where.rsplit(":", 1)[1])
        capfd.readouterr()
        # Reset in the middle of its body.
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b'POST /translate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{"q": "Hal')
        time.sleep(0.2)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))     # close with a reset
        sock.close()
        log = log_until(capfd, r'"POST /translate HTTP/1.1": the client went away \(ConnectionResetError\)\n')
        # Gone once its file is sent: 4,000 lines, seconds of decoding, stopped after a batch or two.
        lines = "\n".join(f"{i}. {GERMAN[i % len(GERMAN)]}" for i in range(4000)).encode()
        body, kind = form_data({"source": "de", "target": "en"}, ("many.txt", lines))
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(f"POST /translate_file HTTP/1.1\r\nHost: localhost\r\nContent-Type: {kind}\r\n"
                         f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        log += log_until(capfd, r'"POST /translate_file HTTP/1.1": the client went away \(stopped its '
                                r'translation after \d+ of 4000 sentences\)\n')
        assert call(where, "/translate", {"q": GERMAN[3], "source": "de", "target": "en"}) == \
            (200, {"translatedText": ENGLISH[3]})
        log += capfd.readouterr().err
    assert len(re.findall("the client went away", log)) == 2, log
    assert "Traceback" not in log and "internal error" not in log and '"POST /translate_file HTTP/1.1" 200' not in log


def test_uploads_at_once_are_held_to_a_memory_budget(fixture_translator):
    """Every upload was read and parsed at once, before its turn: six clients sending 19 MB files took
    the server from 100 MB to 1.25 GB, and more would run the machine out of memory. Bodies now fill a
    budget of the largest request's size times (concurrency + 3); past it a request is refused at once."""
    with serving(fixture_translator, quiet=True, file_limit=100_000, char_limit=2000) as where:
        port = int(where.rsplit(":", 1)[1])
        largest = 100_000 + 65536
        stalled = []
        for _ in range(4):          # four of the largest uploads, slowly sent: the budget is full
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(f"POST /translate_file HTTP/1.1\r\nHost: localhost\r\nContent-Type: multipart/form-data; "
                         f"boundary=b\r\nContent-Length: {largest}\r\n\r\n--b\r\n".encode())
            stalled.append(sock)
        request = {"q": GERMAN[11], "source": "de", "target": "en"}
        deadline = time.monotonic() + 30
        while (answer := call(where, "/translate", request))[0] == 200 and time.monotonic() < deadline:
            time.sleep(0.05)            # until the server has read the four requests' headers
        assert answer == (503, {"error": f"busy: the requests being read and translated fill the memory set "
                                         f"aside for them ({4 * largest} bytes); retry later"})
        assert call(where, "/languages")[0] == 200          # what has no body is not held up
        stalled.pop().close()           # one gives up: there is room again
        while (answer := call(where, "/translate", request))[0] == 503 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert answer == (200, {"translatedText": ENGLISH[11]})
        for sock in stalled:
            sock.close()


@pytest.mark.parametrize("path, status, message", [
    ("/translate", 413, "a body of 7999999 bytes is over the limit"),
    ("/nowhere", 404, "no such endpoint: POST /nowhere"),
    ("/languages", 405, "method not allowed: POST /languages; use GET"),
])
def test_a_body_refused_unread_still_gets_its_answer(url, path, status, message):
    """urllib (and http.client) send the whole body before reading: refused before it was read, the
    connection closed on it, and they got 'URLError: [Errno 32] Broken pipe', not the answer."""
    got, _, text = raw_call(url, path, json.dumps({"q": "a" * 7_999_990}).encode())
    assert got == status and message in json.loads(text)["error"]


def test_a_request_http_server_refuses_is_one_line_in_the_log(fixture_translator, capfd):
    """It was two: "code 501, message Unsupported method ('FOO')", then the request's line."""
    with serving(fixture_translator) as where:
        capfd.readouterr()
        for request in (b"FOO /translate HTTP/1.1\r\nHost: localhost\r\n\r\n", b"GET / HTTP/1.1 x\r\n\r\n",
                        b"GET /languages HTTP/1.1\r\nHost: localhost\r\nX: " + b"a" * 70000 + b"\r\n\r\n"):
            with socket.create_connection(("127.0.0.1", int(where.rsplit(":", 1)[1]))) as sock:
                sock.sendall(request)
                assert b'{"error": ' in answer_on(sock)
        log = log_until(capfd, r'"GET /languages HTTP/1.1" 431 ')
    assert len(log.splitlines()) == 3, log
    assert '"FOO /translate HTTP/1.1" 501 ' in log and '"GET / HTTP/1.1 x" 400 ' in log


def test_a_client_that_expects_100_continue_is_told_to_go_on(url):
    """curl sends 'Expect: 100-continue' with a body over 1 MB and waits for it before sending: never
    told, it waited a second on every upload. A refusal comes instead, and the body is not waited for."""
    port = int(url.rsplit(":", 1)[1])
    body = json.dumps({"q": GERMAN[12], "source": "de", "target": "en"}).encode()
    head = ("POST /translate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            "Expect: 100-continue\r\nContent-Length: %d\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall((head % len(body)).encode())
        sock.settimeout(0.5)            # curl waits 1 s
        assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        status, _, answer = answer_on(sock).partition(b"\r\n\r\n")
        assert status.startswith(b"HTTP/1.0 200 ") and json.loads(answer) == {"translatedText": ENGLISH[12]}
    with socket.create_connection(("127.0.0.1", port)) as sock:       # over the limit: no body is waited for
        sock.sendall((head % 10_000_000).encode())
        status, _, answer = answer_on(sock).partition(b"\r\n\r\n")
        assert status.startswith(b"HTTP/1.0 413 ") and "over the limit" in json.loads(answer)["error"]


def test_it_listens_on_an_ipv6_address(fixture_translator):
    """--host ::1 was 'cannot listen on ::1:5000 (Address family for hostname not supported)'."""
    try:
        socket.socket(socket.AF_INET6).close()
    except OSError:
        pytest.skip("no IPv6 here")
    server = make_server(Service(fixture_translator, DecodeOptions(beam_size=1)), host="[::1]", port=0, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert server.loopback_only
        assert call(f"http://[::1]:{server.server_address[1]}", "/translate",
                    {"q": GERMAN[13], "source": "de", "target": "en"}) == (200, {"translatedText": ENGLISH[13]})
    finally:
        server.shutdown()
        server.server_close()


def test_a_burst_of_connections_waits_in_the_listen_queue_not_in_syn_retries(fixture_translator):
    """socketserver's listen backlog is 5: a burst of clients connecting at once (a page loading, a
    script's thread pool) past 6 had their handshakes dropped by the kernel and waited a second or more
    in retries before the server even saw them. Here the server accepts nothing, so all of the burst
    must wait in the listen queue: 40 connect at once."""
    server = make_server(Service(fixture_translator, DecodeOptions(beam_size=1)), port=0, quiet=True)
    try:
        waiting = []
        for _ in range(40):
            try:
                waiting.append(socket.create_connection(server.server_address, timeout=0.5))
            except OSError:
                break
        assert len(waiting) == 40
    finally:
        for sock in waiting:
            sock.close()
        server.server_close()


def test_sigterm_answers_the_requests_begun_then_exits(fixture_bundle):
    """docker stop, systemctl stop, a rolling update: SIGTERM ended mt-serve at once and a request it was
    answering got an empty reply (curl: 52). Now new connections are refused, those begun are answered,
    then it exits 0: a clean stop, as gunicorn's and uvicorn's (systemd counted its 143 as a failure).
    The request is begun for sure: the server has said 100 Continue to its headers."""
    process, port = start_mt_serve(fixture_bundle)
    try:
        body = json.dumps({"q": GERMAN[8], "source": "de", "target": "en"}).encode()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.settimeout(30)
            sock.sendall(f"POST /translate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n".encode())
            assert sock.recv(65536).startswith(b"HTTP/1.1 100 ")
            process.send_signal(signal.SIGTERM)
            assert "terminating" in process.stderr.readline()       # said once the signal is handled
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
            sock.sendall(body)
            head, _, answer = answer_on(sock).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.0 200 ") and json.loads(answer) == {"translatedText": ENGLISH[8]}
        assert process.wait(timeout=30) == 0
        assert process.stderr.read() == "mt-serve: stopped (SIGTERM)\n"
    finally:
        process.kill()


def test_translated_files_are_kept_within_a_budget_of_bytes(fixture_bundle):
    """The files kept for download are the last `files` within `download_bytes` in all, the newest
    whatever its size: by count alone, a 19 MB .docx (an image and a line of text) sent 12 times held
    the server at 355 MB, and 32 would have held 670."""
    import io
    import zipfile

    from mtkit.runtime import Translator
    from office_files import docx, paragraph

    def with_image(megabytes: float) -> bytes:
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(docx(paragraph(GERMAN[0])))) as small, zipfile.ZipFile(out, "w") as big:
            for item in small.infolist():
                big.writestr(item, small.read(item.filename))
            big.writestr("word/media/photo.bin", os.urandom(int(megabytes * 1e6)))    # stored: it does not shrink
        return out.getvalue()

    service = Service(Translator(fixture_bundle, variant="fp32", threads=1), DecodeOptions(beam_size=1),
                      download_bytes=3_000_000)

    def send(megabytes: float) -> str:
        params = {"file": ("photo.docx", with_image(megabytes)), "source": "de", "target": "en"}
        return service.translate_file(params)["translatedFileUrl"]

    def kept(path: str) -> bool:
        try:
            return len(service.download(path)["data"]) > 1e6
        except Exception:             # RequestError 404: gone
            return False

    paths = [send(1.2) for _ in range(4)]
    assert [kept(p) for p in paths] == [False, False, True, True]
    paths.append(send(4))            # over the budget alone: kept, the others go
    assert [kept(p) for p in paths] == [False, False, False, False, True]


def test_answers_are_kept_within_a_budget_of_characters(fixture_bundle):
    """The answers kept are the last `cache` texts' within `cache_characters` (the texts and their
    translations) in all: by count alone, 400 texts of 19,000 characters held 10 MB, 2,000 would hold 50."""
    from mtkit.runtime import Translator
    gated = Gated(Translator(fixture_bundle, variant="fp32", threads=1))
    gated.gate.set()
    long_texts = [" ".join(GERMAN[i:] + GERMAN[:i]) for i in range(2)]
    service = Service(gated, DecodeOptions(beam_size=1), cache=100, cache_characters=3 * len(long_texts[0]))

    def ask(q):
        return service.translate({"q": q, "source": "de", "target": "en"})["translatedText"]

    ask(GERMAN[0])
    ask(long_texts[0])
    assert gated.calls == 2
    ask(GERMAN[0])
    ask(long_texts[0])
    assert gated.calls == 2                         # both kept: they fit
    ask(long_texts[1])                              # with its translation, over the budget with the first
    ask(long_texts[0])
    assert gated.calls == 4
