"""JSON string files (runtime/json_strings.py): `Translator.translate_json` and `mt-translate --json`.
GERMAN[i] -> ENGLISH[i] is what the fixture model reproduces on any CPU (greedy), so values are
asserted exactly; keys, other values and layout must be kept."""

from __future__ import annotations

import json

import pytest

from conftest import ENGLISH, GERMAN, ORT_THREADS, invoke
from mtkit.runtime import TranslationError
from mtkit.runtime.cli import main
from mtkit.runtime.json_strings import JsonWarning

GREEDY = {"from_lang": "de", "beam_size": 1}


def test_string_values_are_translated_and_all_else_kept(fixture_translator):
    data = {"a": {"title": GERMAN[0], "count": 3, "on": True, "none": None, "list": [GERMAN[1], "42", 1.5]},
            "lines": f"  {GERMAN[2]}\n{GERMAN[3]} ", "again": GERMAN[0],
            "plural": f"{{n, plural, one {{{GERMAN[7]}}} other {{{GERMAN[8]}}}}}",
            "broken": "{n, plural, one {x}",
            "@@locale": "de", "@title": {"description": GERMAN[4]}}
    document = json.dumps(data, ensure_ascii=False, indent=4) + "\n"
    with pytest.warns(JsonWarning, match="broken: kept untranslated: an ICU plural or select that cannot be read"):
        out = fixture_translator.translate_json(document, to="en", **GREEDY)
    expected = {**data, "a": {**data["a"], "title": ENGLISH[0], "list": [ENGLISH[1], "42", 1.5]},
                "lines": f"  {ENGLISH[2]}\n{ENGLISH[3]} ", "again": ENGLISH[0], "@@locale": "en",
                "plural": f"{{n, plural, one {{{ENGLISH[7]}}} other {{{ENGLISH[8]}}}}}"}      # each branch
    assert out == json.dumps(expected, ensure_ascii=False, indent=4) + "\n"      # order, indent and newline kept


@pytest.mark.parametrize("document, expected", [("", ""), ("[]", "[]"), ('{"a": 1}', '{"a": 1}'), ("\t\n", "\t\n")])
def test_documents_without_text_come_back_as_they_were(fixture_translator, document, expected):
    assert fixture_translator.translate_json(document, to="en") == expected


def test_tabs_and_one_line_json_keep_their_layout(fixture_translator):
    assert fixture_translator.translate_json(f'{{\n\t"a": "{GERMAN[5]}"\n}}', to="en", **GREEDY) == \
        f'{{\n\t"a": "{ENGLISH[5]}"\n}}'
    assert fixture_translator.translate_json(f'["{GERMAN[5]}"]', to="en", **GREEDY) == f'["{ENGLISH[5]}"]'


def test_a_file_that_is_no_json_is_a_clear_error(fixture_translator):
    with pytest.raises(TranslationError, match="not JSON: Expecting"):
        fixture_translator.translate_json('{"a": "b",}', to="en")


def test_cli_json(fixture_bundle, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("MT_MODEL", str(fixture_bundle))
    source = tmp_path / "de.json"
    source.write_text(json.dumps({"x": GERMAN[6], "y": "{n, select, a {A} other {B}"}), encoding="utf-8")
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), "--beam-size", "1", "--from", "de", "--to", "en",
                                   "--json", "-i", str(source)], capsys)
    assert code == 0 and json.loads(out) == {"x": ENGLISH[6], "y": "{n, select, a {A} other {B}"}
    assert "warning: document: y: kept untranslated" in err
    source.write_text("{nope", encoding="utf-8")
    code, _, err = invoke(main, ["--json", "-i", str(source)], capsys)
    assert code == 1 and err.startswith(f"mt-translate: error: {source}: not JSON") and "Traceback" not in err


@pytest.mark.parametrize("depth", [201, 990, 100_000])
def test_json_nested_too_deep_is_a_clear_error(fixture_translator, depth):
    # 990 levels parsed, then overflowed the walks; 100,000 overflowed json's parser: both were RecursionError
    with pytest.raises(TranslationError, match="nested more than 200 levels deep"):
        fixture_translator.translate_json("[" * depth + '"Hallo"' + "]" * depth, to="en")
    assert fixture_translator.translate_json("[" * 200 + "1" + "]" * 200, to="en") == "[" * 200 + "1" + "]" * 200


@pytest.mark.parametrize("document, error", [
    ('{"a": "Hallo", "b": {"c": 1, "c": "Welt"}}', 'the key "c" is written twice in one object'),
    ('{"e": 1e400, "a": "Hallo"}', "the number 1e400 is too large to be written back"),
])
def test_json_that_would_come_back_changed_is_refused(fixture_translator, document, error):
    # Before: the first "c" was gone from the output, and 1e400 came back as Infinity, which is not JSON.
    with pytest.raises(TranslationError, match=error):
        fixture_translator.translate_json(document, to="en")


def test_crlf_line_endings_are_kept(fixture_translator):
    document = '{\r\n  "a": "Hallo",\r\n  "b": ["1\\n2", 1]\r\n}\r\n'       # before: every line ended in "\n"
    out = fixture_translator.translate_json(document, to="en")
    assert out.count("\r\n") == document.count("\r\n") + 3 and "\n" not in out.replace("\r\n", "")
    assert json.loads(out)["b"] == ["1\n2", 1]
