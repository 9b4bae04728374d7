"""`mt-serve` (runtime/server.py): LibreTranslate's HTTP API over the fixture model, on a real socket.
GERMAN[i] -> ENGLISH[i] is what the fixture model reproduces on any CPU (greedy)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import ENGLISH, GERMAN
from mtkit.runtime import DecodeOptions
from mtkit.runtime.server import Service, make_server


@pytest.fixture(scope="module")
def url(fixture_bundle):
    from mtkit.runtime import Translator
    translator = Translator(fixture_bundle, variant="fp32", threads=1)
    server = make_server(Service(translator, DecodeOptions(beam_size=1), char_limit=2000), port=0, quiet=True)
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


def test_alternatives_and_html(url):
    status, answer = call(url, "/translate", {"q": GERMAN[6], "source": "de", "target": "en", "alternatives": 2})
    assert status == 200 and len(answer["alternatives"]) == 2 and all(isinstance(a, str) for a in answer["alternatives"])
    status, answer = call(url, "/translate", {"q": f"<p><b>{GERMAN[7]}</b></p>", "source": "de", "target": "en",
                                              "format": "html"})
    assert (status, answer) == (200, {"translatedText": f"<p><b>{ENGLISH[7]}</b></p>"})


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
    assert call(url, "/detect", {"q": "12 345"}) == (200, [])


@pytest.mark.parametrize("path, data, raw, status, message", [
    ("/translate", {"target": "en"}, None, 400, "missing q parameter"),
    ("/translate", {"q": "Hallo"}, None, 400, "missing target parameter"),
    ("/translate", {"q": ["Hallo", 3], "target": "en"}, None, 400, "q must be a string or a list of strings"),
    ("/translate", {"q": "Hallo", "target": "fr"}, None, 400, "cannot translate into 'fr'"),
    ("/translate", {"q": "Hallo", "target": "en", "alternatives": "x"}, None, 400, "alternatives must be"),
    ("/translate", {"q": "<b>Hallo</b>", "target": "en", "format": "html", "alternatives": 1}, None, 400,
     "alternatives are for format text"),
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


def test_mt_serve_runs_until_terminated(fixture_bundle, tmp_path):
    binary = Path(sys.executable).parent / "mt-serve"
    process = subprocess.Popen([str(binary), "-m", str(fixture_bundle), "--port", "0", "--greedy", "-q", "--threads", "1"],
                               stderr=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        banner = process.stderr.readline()
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)", banner).group(1))
        assert call(f"http://127.0.0.1:{port}", "/translate", {"q": GERMAN[8], "source": "de", "target": "en"}) == \
            (200, {"translatedText": ENGLISH[8]})
        # The same port again: taken, one line, exit 1.
        second = subprocess.run([str(binary), "-m", str(fixture_bundle), "--port", str(port)], capture_output=True,
                                text=True, timeout=60)
        assert second.returncode == 1 and second.stderr.strip().startswith(f"mt-serve: error: cannot listen on "
                                                                          f"127.0.0.1:{port}")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 143
        assert "Traceback" not in process.stderr.read()
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
    done = subprocess.run([str(Path(sys.executable).parent / "mt-serve"), "--glossary", str(bad), "--port", "0"],
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
    assert status == 405 and headers["Allow"] == "GET, POST, OPTIONS"
    assert headers["Content-Type"].startswith("application/json")
    assert json.loads(text) == {"error": f"method not allowed: {method}; use GET or POST"}


@pytest.mark.parametrize("path, method, allowed", [("/translate", "GET", "POST"), ("/detect", "GET", "POST"),
                                                  ("/languages", "POST", "GET"), ("/health", "POST", "GET")])
def test_an_endpoint_asked_with_the_other_method_says_which_it_takes(url, path, method, allowed):
    status, headers, text = raw_call(url, path, b"{}" if method == "POST" else None, method=method)
    assert status == 405 and headers["Allow"] == f"{allowed}, OPTIONS"
    assert json.loads(text) == {"error": f"method not allowed: {method} {path}; use {allowed}"}


def test_a_method_http_server_does_not_know_gets_json_too(url):
    status, headers, text = raw_call(url, "/translate", b"", method="FOO")
    assert status == 501 and json.loads(text) == {"error": "Unsupported method ('FOO')"}


def test_mt_serve_refuses_a_glossary_for_another_pair(fixture_bundle, tmp_path):
    glossary = tmp_path / "g.tsv"
    glossary.write_text("de\tfr\nHaus\tmaison\n", encoding="utf-8")
    done = subprocess.run([str(Path(sys.executable).parent / "mt-serve"), "-m", str(fixture_bundle), "--threads", "1",
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
])
def test_translate_file_refuses_what_it_cannot_read(url, name, data, status, message):
    body, kind = form_data({"target": "en"}, (name, data))
    code, answer = call(url, "/translate_file", raw=body, content_type=kind)
    assert code == status and message in answer["error"]


def test_a_file_never_made_is_not_found(url):
    assert call(url, "/download_file/nothing/brief.docx")[0] == 404
    assert call(url, "/translate_file", {"target": "en"})[0] == 400       # JSON: no file in it
