"""`mt-eval` on the tiny bundle and the tiny checkpoint."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import sacrebleu

from mtkit.runtime.eval_cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "tatoeba"


def cli(capsys, *args) -> tuple[int, str, str]:
    try:
        main(["--threads", "1", "-q", *args])
        code = 0
    except SystemExit as e:
        code = e.code or 0
    out, err = capsys.readouterr()
    return code, out, err


def test_scores_and_speed_of_a_bundle(capsys, tiny_bundle, tmp_path):
    hyps = tmp_path / "hyps.en"
    code, out, err = cli(capsys, "-m", str(tiny_bundle), "--src", str(FIXTURES / "dev.de"), "--ref", str(FIXTURES / "dev.en"),
                         "--limit", "20", "--greedy", "--json", "--output-hyps", str(hyps))
    assert code == 0, err
    report = json.loads(out)
    assert report["sentences"] == 20 and report["tgt_lang"] == "en" and report["beam_size"] == 1
    assert report["variant"] == "int8" and report["provider"] == "cpu"
    assert "tok:13a" in report["bleu_signature"] and "case:mixed" in report["bleu_signature"]
    assert report["sentences_per_s"] > 0 and report["target_tokens_per_s"] > 0
    lines = hyps.read_text(encoding="utf-8").split("\n")[:-1]
    refs = (FIXTURES / "dev.en").read_text(encoding="utf-8").splitlines()[:20]
    assert len(lines) == 20
    # The reported scores are sacreBLEU's on the written hypotheses.
    assert report["bleu"] == round(sacrebleu.corpus_bleu(lines, [refs]).score, 2)
    assert report["chrf"] == round(sacrebleu.corpus_chrf(lines, [refs]).score, 2)


def test_human_readable_report(capsys, tiny_bundle):
    code, out, _ = cli(capsys, "-m", str(tiny_bundle), "--src", str(FIXTURES / "dev.en"), "--ref", str(FIXTURES / "dev.de"),
                       "--limit", "5", "--beam-size", "2")
    assert code == 0
    assert "->de" in out                                  # the target language is read from the ref's suffix
    for word in ("BLEU", "chrF", "sentences/s", "target tokens/s", "nrefs:1"):
        assert word in out


def test_corpus_from_the_data_dir(capsys, tiny_bundle, tmp_path, monkeypatch):
    (tmp_path / "tiny").mkdir()
    for lang in ("de", "en"):
        lines = (FIXTURES / f"dev.{lang}").read_text(encoding="utf-8").splitlines()[:8]
        with gzip.open(tmp_path / "tiny" / f"test.{lang}.gz", "wt", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    monkeypatch.setenv("MT_DATA_DIR", str(tmp_path))
    code, out, err = cli(capsys, "-m", str(tiny_bundle), "--corpus", "tiny/test", "--src-lang", "de", "--tgt-lang", "en",
                         "--greedy", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["sentences"] == 8 and report["src"].endswith("tiny/test.de.gz") and report["src_lang"] == "de"


def test_checkpoint_runs_the_same_search_with_pytorch(capsys, tiny_checkpoint, tiny_bundle, tmp_path):
    torch_hyps, onnx_hyps = tmp_path / "torch.txt", tmp_path / "onnx.txt"
    common = ["--src", str(FIXTURES / "dev.de"), "--ref", str(FIXTURES / "dev.en"), "--limit", "25", "--greedy", "--json"]
    code, out, err = cli(capsys, "-m", str(tiny_checkpoint), *common, "--output-hyps", str(torch_hyps))
    assert code == 0, err
    assert json.loads(out)["variant"] == "pytorch"
    code, _, err = cli(capsys, "-m", str(tiny_bundle), "--variant", "fp32", *common, "--output-hyps", str(onnx_hyps))
    assert code == 0, err
    a, b = torch_hyps.read_text().splitlines(), onnx_hyps.read_text().splitlines()
    assert len(a) == len(b) == 25
    # Token for token (the texts of a tiny model are too alike to tell much): fp32 ONNX reproduces PyTorch.
    from mtkit.runtime import Translator
    from mtkit.train.reference import checkpoint_translator

    sources = (FIXTURES / "dev.de").read_text(encoding="utf-8").splitlines()[:25]
    torch_out = checkpoint_translator(tiny_checkpoint, "cpu", 1).translate(sources, beam_size=3)
    onnx_out = Translator(tiny_bundle, variant="fp32", threads=1).translate(sources, beam_size=3)
    assert sum(x.tokens == y.tokens for x, y in zip(torch_out, onnx_out)) >= 23
    assert all(x.score == pytest.approx(y.score, abs=1e-2) for x, y in zip(torch_out, onnx_out) if x.tokens == y.tokens)


@pytest.mark.parametrize("args, code, message", [
    (["--src", "SRC"], 2, "give --src and --ref"),
    (["--corpus", "multi30k/test_2016_flickr"], 2, "needs --src-lang and --tgt-lang"),
    (["--src", "SRC", "--ref", "SHORT"], 1, "they must be aligned"),
    (["--src", "SRC", "--ref", "MISSING"], 1, "MISSING: cannot open"),
])
def test_bad_arguments(capsys, tiny_bundle, tmp_path, args, code, message):
    short = tmp_path / "short.en"
    short.write_text("one line\n", encoding="utf-8")
    paths = {"SRC": str(FIXTURES / "dev.de"), "SHORT": str(short), "MISSING": str(tmp_path / "MISSING")}
    got, _, err = cli(capsys, "-m", str(tiny_bundle), *[paths.get(a, a) for a in args])
    assert got == code and message in err


def test_bad_checkpoint(capsys, tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    code, _, err = cli(capsys, "-m", str(bad), "--src", str(FIXTURES / "dev.de"), "--ref", str(FIXTURES / "dev.en"))
    assert code == 1 and "bad.pt: not a readable checkpoint" in err
