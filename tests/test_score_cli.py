"""`mt-score`: one score per line pair, in order, and one-line errors for what cannot be scored."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from conftest import ENGLISH, GERMAN, ORT_THREADS, invoke
from mtkit.runtime import Translator
from mtkit.runtime.score_cli import main

TATOEBA = Path(__file__).parent / "fixtures" / "tatoeba"


def score_cli(capsys, *args) -> tuple[int, str, str]:
    return invoke(main, ["--threads", str(ORT_THREADS), "--variant", "fp32", *map(str, args)], capsys)


def lines(path: Path, texts: list[str]) -> Path:
    path.write_text("".join(f"{t}\n" for t in texts), encoding="utf-8")
    return path


def test_each_pair_gets_its_line(model, tmp_path, capsys):
    """An empty pair keeps its place; the scores are Translator.score's, and a wrong target scores lower."""
    sources = [GERMAN[0], "", GERMAN[1], GERMAN[0]]
    targets = [ENGLISH[0], "", ENGLISH[1], ENGLISH[5]]
    src, tgt = lines(tmp_path / "s.de", sources), lines(tmp_path / "t.en", targets)
    code, out, err = score_cli(capsys, src, tgt)
    assert code == 0 and err == ""
    scores = [float(x) for x in out.splitlines()]
    want = Translator(model, variant="fp32", threads=ORT_THREADS).score(sources, targets)
    assert scores == pytest.approx([s.mean_log_prob for s in want], abs=1e-4)
    assert scores[0] > scores[3]

    code, out, _ = score_cli(capsys, "--format", "jsonl", "-o", tmp_path / "scores.jsonl", src, tgt)
    records = [json.loads(line) for line in (tmp_path / "scores.jsonl").read_text().splitlines()]
    assert code == 0 and out == "" and [r["line"] for r in records] == [1, 2, 3, 4]
    assert records[1]["tokens"] == ["</s>"] and len(records[0]["log_probs"]) == len(records[0]["tokens"])
    assert records[2]["log_prob"] == pytest.approx(sum(records[2]["log_probs"]), abs=1e-3)


def test_one_file_may_be_stdin(model, tmp_path, capsys, monkeypatch):
    """`mt-translate < src.de | mt-score src.de -` said '-: cannot open': `-` is stdin, for one of the two."""
    src, tgt = lines(tmp_path / "s.de", GERMAN[:2]), lines(tmp_path / "t.en", ENGLISH[:2])
    code, want, _ = score_cli(capsys, src, tgt)
    assert code == 0
    for args, piped in [((src, "-"), tgt), (("-", tgt), src)]:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(piped.read_bytes()), encoding="utf-8"))
        assert score_cli(capsys, *args) == (0, want, "")
    code, out, err = score_cli(capsys, "-", "-")
    assert code == 2 and out == "" and "SOURCES and TARGETS cannot both be stdin" in err


def test_what_cannot_be_scored_is_one_line(model, tmp_path, capsys):
    src = lines(tmp_path / "s.de", GERMAN[:2])
    cases = [
        ([src, lines(tmp_path / "one.en", ENGLISH[:1])], "has 2 lines and"),
        ([src, src, "-o", src], "is the file given to SOURCES"),
        ([tmp_path / "missing.de", src], "missing.de"),
        ([src, lines(tmp_path / "long.en", [ENGLISH[0], "house " * 400])], "target 2 is"),
        (["--to", "fr", src, src], "cannot translate into 'fr'"),
        (["-m", tmp_path / "no-model", src, src], "no-model"),
    ]
    (tmp_path / "bad.de").write_bytes(b"Gut.\n\xff\xfe\n")
    cases.append(([tmp_path / "bad.de", src], "invalid UTF-8"))
    for args, message in cases:
        code, out, err = score_cli(capsys, *args)
        assert code == 1 and out == "" and message in err and "Traceback" not in err, (args, err)
        assert len(err.splitlines()) == 1 and err.startswith("mt-score: error: ")
    assert src.read_text(encoding="utf-8") == "".join(f"{t}\n" for t in GERMAN[:2])     # never overwritten
