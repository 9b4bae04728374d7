"""`mt-eval` on the fixture bundle and the fixture checkpoint."""

from __future__ import annotations

import dataclasses
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
import sacrebleu

import mtkit
from conftest import ORT_THREADS, invoke
from mtkit.eval.cli import main
from mtkit.runtime.decode_options import DecodeOptions

FIXTURES = Path(__file__).parent / "fixtures" / "tatoeba"


def cli(capsys, *args) -> tuple[int, str, str]:
    return invoke(main, ["--threads", str(ORT_THREADS), "-q", *args], capsys)


def test_scores_and_speed_of_a_bundle(capsys, fixture_bundle, tmp_path):
    hyps = tmp_path / "hyps.en"
    code, out, err = cli(capsys, "-m", str(fixture_bundle), "--source-file", str(FIXTURES / "dev.de"),
                         "--ref-file", str(FIXTURES / "dev.en"), "--limit", "20", "--greedy", "--json",
                         "--output-hyps", str(hyps))
    assert code == 0, err
    report = json.loads(out)
    assert report["sentences"] == 20 and report["tgt_lang"] == "en" and report["beam_size"] == 1
    assert report["src_lang"] == "de"                     # read from the source file's suffix
    assert report["options"] == dataclasses.asdict(DecodeOptions(beam_size=1))   # every option, to reproduce the run
    assert report["variant"] == "int8" and report["provider"] == "cpu"
    assert "tok:13a" in report["bleu_signature"] and "case:mixed" in report["bleu_signature"]
    assert report["sentences_per_s"] > 0 and report["target_tokens_per_s"] > 0
    lines = hyps.read_text(encoding="utf-8").split("\n")[:-1]
    refs = (FIXTURES / "dev.en").read_text(encoding="utf-8").splitlines()[:20]
    assert len(lines) == 20
    # The reported scores are sacreBLEU's on the written hypotheses.
    bleu = sacrebleu.corpus_bleu(lines, [refs])
    assert report["bleu"] == round(bleu.score, 2)
    assert report["bleu_precisions"] == [round(p, 2) for p in bleu.precisions] and report["bleu_bp"] == round(bleu.bp, 3)
    assert (report["hyp_len"], report["ref_len"]) == (bleu.sys_len, bleu.ref_len) > (0, 0)
    assert report["length_ratio"] == round(bleu.sys_len / bleu.ref_len, 3)
    assert report["chrf"] == round(sacrebleu.corpus_chrf(lines, [refs]).score, 2)


def test_human_readable_report(capsys, fixture_bundle, tmp_path):
    code, out, _ = cli(capsys, "-m", str(fixture_bundle), "-s", str(FIXTURES / "dev.en"), "-r", str(FIXTURES / "dev.de"),
                       "--limit", "5", "--beam-size", "2")
    assert code == 0
    assert "en->de" in out and "beam 2" in out            # the languages are read from the files' suffixes
    unnamed = {name: tmp_path / f"{name}.txt" for name in ("sources", "refs")}
    for name, lang in (("sources", "de"), ("refs", "en")):
        unnamed[name].write_text((FIXTURES / f"dev.{lang}").read_text(encoding="utf-8"), encoding="utf-8")
    code, out, _ = cli(capsys, "-m", str(fixture_bundle), "-s", str(unnamed["sources"]), "-r", str(unnamed["refs"]),
                       "--limit", "5", "--from", "de")
    assert code == 0 and "de->en" in out                   # no suffix to read: --from, and the target it picks
    for word in ("BLEU", "chrF", "sentences/s", "target tokens/s", "nrefs:1", "BP = ", "ref_len = "):
        assert word in out


def test_a_source_language_is_never_guessed(capsys, fixture_bundle, tmp_path):
    """A source file whose name does not give its language needs --from. Detected line by line, a file of
    English hypotheses given by mistake was copied as it was, and scored 100 BLEU against the English refs."""
    english = tmp_path / "sources"
    english.write_text((FIXTURES / "dev.en").read_text(encoding="utf-8"), encoding="utf-8")
    args = ["-m", str(fixture_bundle), "-s", str(english), "-r", str(FIXTURES / "dev.en"), "--limit", "5", "--json"]
    code, out, err = cli(capsys, *args)
    assert code == 2 and out == ""
    assert f"give --from: the name of {english} does not end in one of the model's source languages" in err
    code, out, err = cli(capsys, *args, "--from", "de")
    assert code == 0 and json.loads(out)["src_lang"] == "de", err


@pytest.mark.parametrize("files", [["-s", "SOURCES", "-r", "REFS"], ["--corpus", "multi30k/test_2016_flickr"]])
def test_from_auto_is_refused_as_what_it_is(capsys, fixture_bundle, tmp_path, files):
    """mt-eval's --from is never `auto` (the shared option's default elsewhere): --from auto was read as no
    --from, and refused with 'give --from' or '--corpus needs --from', though --from had been given."""
    paths = {"SOURCES": str(tmp_path / "sources"), "REFS": str(FIXTURES / "dev.en")}
    code, out, err = cli(capsys, "-m", str(fixture_bundle), *[paths.get(a, a) for a in files], "--from", "auto")
    assert code == 2 and out == ""
    assert "--from auto: mt-eval never detects the source language" in err and "give --from" not in err


def test_help_says_where_the_languages_come_from(capsys):
    """--help said --from auto, 'detected sentence by sentence', was the default, as mt-translate's does."""
    code, out, _ = cli(capsys, "--help")
    assert code == 0
    assert "detected sentence by sentence" not in out
    assert "the source file's suffix" in " ".join(out.split())
    assert "the reference file's suffix" in " ".join(out.split())
    assert "143 terminated" in " ".join(out.split())         # SIGTERM's status, which it left out


def hyps_refused(capsys, fixture_bundle, args, output) -> str:
    """mt-eval's stderr for ARGS with --output-hyps OUTPUT, which must be refused before anything is written."""
    code, out, err = cli(capsys, "-m", str(fixture_bundle), *args, "--greedy", "--output-hyps", output)
    assert code == 1 and out == "" and len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("output, flag, given", [
    ("test.de", "--source-file", "test.de"),
    ("test.en", "--ref-file", "test.en"),
    ("sub/../test.de", "--source-file", "test.de"),       # another spelling of its path
    ("link.en", "--ref-file", "test.en"),                 # a symlink to it
])
def test_output_hyps_is_never_an_input(capsys, fixture_bundle, tmp_path, monkeypatch, output, flag, given):
    """The hypotheses replaced the source or the reference file they were scored from."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    for lang in ("de", "en"):
        lines = (FIXTURES / f"dev.{lang}").read_text(encoding="utf-8").splitlines()[:5]
        (tmp_path / f"test.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "link.en").symlink_to("test.en")
    before = {lang: (tmp_path / f"test.{lang}").read_bytes() for lang in ("de", "en")}
    err = hyps_refused(capsys, fixture_bundle, ["-s", "test.de", "-r", "test.en"], output)
    assert err == f"mt-eval: error: {output}: is the file given to {flag} ({given}); write the output to another file\n"
    assert {lang: (tmp_path / f"test.{lang}").read_bytes() for lang in ("de", "en")} == before


def test_output_hyps_dash_is_a_usage_error(capsys, fixture_bundle, tmp_path, monkeypatch):
    """`--output-hyps -` wrote a file named '-': mt-translate's and mt-score's `-o -` is stdout, but
    mt-eval's stdout is its report (a table, or --json for a pipeline), so `-` is refused up front."""
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "-m", str(fixture_bundle), "-s", str(FIXTURES / "dev.de"), "-r", str(FIXTURES / "dev.en"),
                         "--greedy", "--limit", "2", "--output-hyps", "-")
    assert code == 2 and out == "" and list(tmp_path.iterdir()) == []
    assert "--output-hyps -: mt-eval's stdout is its report; give a file" in err


def test_output_hyps_is_never_a_corpus_file(capsys, fixture_bundle, tmp_path):
    (tmp_path / "tiny").mkdir()
    for lang in ("de", "en"):
        lines = (FIXTURES / f"dev.{lang}").read_text(encoding="utf-8").splitlines()[:5]
        with gzip.open(tmp_path / "tiny" / f"test.{lang}.gz", "wt", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    ref = tmp_path / "tiny" / "test.en.gz"
    before = ref.read_bytes()
    err = hyps_refused(capsys, fixture_bundle, ["--corpus", "tiny/test", "--from", "de", "--data-dir", str(tmp_path)],
                       str(ref))
    assert f"is the file given to --corpus ({ref}); write the output to another file" in err
    assert ref.read_bytes() == before


def test_the_console_script_ends_at_once():
    """`mt-eval` ends as mt-translate and mt-score do (cli_support.run_and_exit): at once, its output flushed,
    without the interpreter's teardown, which would run the atexit handler registered here."""
    script = str(Path(sys.executable).parent / "mt-eval")
    code = (f"import atexit, runpy, sys; atexit.register(print, 'teardown'); sys.argv = [{script!r}, '--version']; "
            f"runpy.run_path({script!r}, run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == f"mt-eval {mtkit.__version__}\n", proc.stderr


def test_corpus_from_the_data_dir(capsys, fixture_bundle, tmp_path, monkeypatch):
    (tmp_path / "tiny").mkdir()
    for lang in ("de", "en"):
        lines = (FIXTURES / f"dev.{lang}").read_text(encoding="utf-8").splitlines()[:8]
        with gzip.open(tmp_path / "tiny" / f"test.{lang}.gz", "wt", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    monkeypatch.setenv("MT_DATA_DIR", str(tmp_path))
    code, out, err = cli(capsys, "-m", str(fixture_bundle), "--corpus", "tiny/test", "--from", "de", "--to", "en",
                         "--greedy", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["sentences"] == 8 and report["src"].endswith("tiny/test.de.gz") and report["src_lang"] == "de"
    # --data-dir wins over MT_DATA_DIR.
    monkeypatch.setenv("MT_DATA_DIR", str(tmp_path / "elsewhere"))
    code, out, err = cli(capsys, "-m", str(fixture_bundle), "--corpus", "tiny/test", "--from", "de", "--to", "en",
                         "--data-dir", str(tmp_path), "--greedy", "--json")
    assert code == 0 and json.loads(out)["sentences"] == 8, err
    # --from alone picks the target, as in mt-translate.
    code, out, err = cli(capsys, "-m", str(fixture_bundle), "--corpus", "tiny/test", "--from", "de",
                         "--data-dir", str(tmp_path), "--greedy", "--json")
    assert code == 0 and json.loads(out)["tgt_lang"] == "en", err


def test_a_missing_corpus_names_the_path_and_the_way_out(capsys, fixture_bundle, tmp_path, monkeypatch):
    monkeypatch.setenv("MT_DATA_DIR", str(tmp_path))
    code, _, err = cli(capsys, "-m", str(fixture_bundle), "--corpus", "wmt/test", "--from", "de", "--to", "en")
    assert code == 1 and str(tmp_path / "wmt" / "test.de.gz") in err
    assert "pass --data-dir DIR or set MT_DATA_DIR" in err and "Traceback" not in err


def test_checkpoint_runs_the_same_search_with_pytorch(capsys, fixture_checkpoint, fixture_bundle, fixture_translator,
                                                      tmp_path):
    torch_hyps, onnx_hyps = tmp_path / "torch.txt", tmp_path / "onnx.txt"
    common = ["-s", str(FIXTURES / "dev.de"), "-r", str(FIXTURES / "dev.en"), "--limit", "25", "--greedy", "--json"]
    code, out, err = cli(capsys, "-m", str(fixture_checkpoint), *common, "--output-hyps", str(torch_hyps))
    assert code == 0, err
    assert json.loads(out)["variant"] == "pytorch"
    code, _, err = cli(capsys, "-m", str(fixture_bundle), "--variant", "fp32", *common, "--output-hyps", str(onnx_hyps))
    assert code == 0, err
    a, b = torch_hyps.read_text().splitlines(), onnx_hyps.read_text().splitlines()
    assert len(a) == len(b) == 25
    # Token for token, fp32 ONNX reproduces PyTorch, except where PyTorch itself had a near-tie.
    from mtkit.export.parity import differences
    from mtkit.runtime.vocab import source_ids
    from mtkit.train.reference import checkpoint_translator

    texts = (FIXTURES / "dev.de").read_text(encoding="utf-8").splitlines()[:25]
    pytorch = checkpoint_translator(fixture_checkpoint, "cpu", 1)
    torch_out = pytorch.translate(texts, beam_size=3, split_sentences=False)
    onnx_out = fixture_translator.translate(texts, beam_size=3, split_sentences=False)
    ids = pytorch.tokenizer.piece_to_id
    sources = [source_ids(pytorch.tokenizer.encode(text), pytorch.tag_id("en"), pytorch.config.max_positions)
               for text in texts]
    assert differences(pytorch.backend, sources, [[ids(p) for p in y.tokens] for y in onnx_out],
                       [[ids(p) for p in x.tokens] for x in torch_out], DecodeOptions.length_penalty) == []
    for x, y in zip(torch_out, onnx_out):
        if x.tokens == y.tokens:
            assert x.score == pytest.approx(y.score, abs=1e-3)


@pytest.mark.parametrize("args, code, message", [
    (["--source-file", "SRC"], 2, "give --source-file and --ref-file"),
    (["--corpus", "multi30k/test_2016_flickr"], 2, "--corpus needs --from"),
    (["--corpus", "multi30k/test_2016_flickr", "--from", "fr"], 1, "cannot translate from 'fr'"),
    (["--corpus", "multi30k/test_2016_flickr", "-s", "SRC"], 2, "give --corpus or --source-file/--ref-file"),
    (["-s", "SRC", "-r", "SRC", "--beam-size", "0"], 2, "--beam-size must be from 1 to 256, not 0"),
    (["-s", "SRC", "-r", "SRC", "--n-best", "2"], 2, "No such option '--n-best'"),     # eval scores the best only
    (["-s", "SRC", "-r", "SRC", "--limit", "0"], 2, "--limit"),
    (["-s", "SRC", "-r", "SHORT"], 1, "they must be aligned"),
    (["-s", "SRC", "-r", "MISSING"], 1, "MISSING: cannot open"),
    (["-s", "SRC", "-r", "SHORT", "--from", "fr"], 1, "cannot translate from 'fr'"),
    (["-s", "SRC", "-r", "SHORT", "--to", "fr"], 1, "cannot translate into 'fr'"),
    (["-s", "SRC", "-r", "SRC", "--output-hyps", "DIR"], 1, "DIR: is a directory"),
])
def test_bad_arguments(capsys, fixture_bundle, tmp_path, args, code, message):
    short = tmp_path / "short.en"
    short.write_text("one line\n", encoding="utf-8")
    paths = {"SRC": str(FIXTURES / "dev.de"), "SHORT": str(short), "MISSING": str(tmp_path / "MISSING"), "DIR": str(tmp_path)}
    got, _, err = cli(capsys, "-m", str(fixture_bundle), *[paths.get(a, a) for a in args])
    assert got == code and message.replace("DIR", str(tmp_path)) in err


def test_a_variant_is_refused_for_a_checkpoint(capsys, fixture_checkpoint):
    """It was ignored: the PyTorch model was scored under the name of the graphs asked for."""
    code, out, err = cli(capsys, "-m", str(fixture_checkpoint), "--variant", "int8", "-s", str(FIXTURES / "dev.de"),
                         "-r", str(FIXTURES / "dev.en"))
    assert code == 1 and out == "" and "--variant int8: " in err and "is a checkpoint, which runs in PyTorch" in err


def test_bad_checkpoint(capsys, tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    code, _, err = cli(capsys, "-m", str(bad), "-s", str(FIXTURES / "dev.de"), "-r", str(FIXTURES / "dev.en"))
    assert code == 1 and "bad.pt: not a checkpoint written by mt-train" in err


def test_progress_lines_in_a_log(capsys, fixture_bundle, monkeypatch):
    """With stderr not a terminal (a CI log, nohup), no bar is drawn: a line now and then instead. Before,
    nothing showed until the end (5 minutes of silence for newstest2013 with the shipped model)."""
    import mtkit.eval.cli as eval_cli

    args = ["--threads", str(ORT_THREADS), "-m", str(fixture_bundle), "-s", str(FIXTURES / "dev.de"),
            "-r", str(FIXTURES / "dev.en"), "--limit", "20", "--greedy"]
    code, out, err = invoke(main, args, capsys)
    assert code == 0 and "BLEU" in out and "translated" not in err     # a quick run: no line at all
    monkeypatch.setattr(eval_cli, "CHUNK", 8)
    monkeypatch.setattr(eval_cli, "LOG_EVERY_S", 0)
    code, out, err = invoke(main, args, capsys)
    assert code == 0 and "BLEU" in out
    lines = [line for line in err.splitlines() if "translated" in line]
    assert [line.split(",")[0] for line in lines] == [f"mt-eval: translated {n} of 20 sentences ({5 * n}%)"
                                                      for n in (8, 16, 20)]
    for quiet in (["-q"], ["--json"]):
        code, _, err = invoke(main, args + quiet, capsys)
        assert code == 0 and "translated" not in err


def test_an_interrupted_run_keeps_its_hypotheses_and_goes_on(capsys, fixture_bundle, tmp_path, monkeypatch):
    """Ctrl-C lost all of a run's work. With --output-hyps the hypotheses done stay (as mt-translate -o
    keeps its lines: runtime/resumable.py), no score is printed for a part of the test set, and the same
    command goes on after them: the same hypotheses and scores as a run never interrupted."""
    import mtkit.eval.cli as eval_cli
    from mtkit.runtime.translator import Translator

    monkeypatch.setattr(eval_cli, "CHUNK", 8)
    args = ["-m", str(fixture_bundle), "-s", str(FIXTURES / "dev.de"), "-r", str(FIXTURES / "dev.en"), "--limit", "20",
            "--greedy", "--json"]
    whole = tmp_path / "whole.en"
    code, out, err = cli(capsys, *args, "--output-hyps", str(whole))
    assert code == 0, err
    expected = json.loads(out)

    translate, calls = Translator.translate, []

    def interrupted(self, *a, **kw):             # Ctrl-C during the second chunk
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return translate(self, *a, **kw)

    monkeypatch.setattr(Translator, "translate", interrupted)
    hyps = tmp_path / "hyps.en"
    code, out, err = cli(capsys, *args, "--output-hyps", str(hyps))
    partial = tmp_path / ".hyps.en.partial"
    assert code == 130 and out == ""                                     # no BLEU of a part of the test set
    assert err == (f"mt-eval: 8 of 20 hypotheses are kept in {partial}; BLEU not computed; the same command goes on "
                   f"from there\nmt-eval: interrupted\n")
    first_8 = "\n".join(whole.read_text(encoding="utf-8").split("\n")[:8]) + "\n"
    assert not hyps.exists() and partial.read_text(encoding="utf-8") == first_8

    monkeypatch.setattr(Translator, "translate", translate)
    code, out, err = invoke(main, ["--threads", str(ORT_THREADS), *args, "--output-hyps", str(hyps)], capsys)
    assert code == 0, err
    assert f"going on after the 8 hypotheses an interrupted run kept ({partial})" in err
    assert hyps.read_text(encoding="utf-8") == whole.read_text(encoding="utf-8") and not partial.exists()
    report = json.loads(out)
    assert report["sentences_translated"] == 12 and report["sentences_per_s"] > 0
    assert {k: report[k] for k in ("bleu", "chrf", "hyp_len")} == {k: expected[k] for k in ("bleu", "chrf", "hyp_len")}

    # Without --output-hyps there is nothing to keep: one line, exit 130.
    monkeypatch.setattr(Translator, "translate", lambda *a, **kw: (_ for _ in ()).throw(KeyboardInterrupt))
    code, out, err = cli(capsys, *args)
    assert (code, out, err.strip()) == (130, "", "mt-eval: interrupted")


def test_warnings_are_a_line_each_and_few(capsys, fixture_bundle, tmp_path):
    """Before: each over-long sentence was Python's two-line warning, the line of mtkit's source with it."""
    src, ref = tmp_path / "long.de", tmp_path / "long.en"
    src.write_text("".join(f"{'Hallo Welt ' * 400}{n}\n" for n in range(8)), encoding="utf-8")
    ref.write_text("Hello world\n" * 8, encoding="utf-8")
    code, out, err = cli(capsys, "-m", str(fixture_bundle), "-s", str(src), "-r", str(ref), "--greedy")
    assert code == 0 and "BLEU" in out, err
    lines = err.splitlines()
    assert "LongInputWarning" not in err and all(line.startswith("mt-eval: warning: ") for line in lines), err
    assert [line.split(":")[2] for line in lines[:5]] == [f" line {n}" for n in range(1, 6)]
    assert lines[5:] == [f"mt-eval: warning: {8 - 5} more warnings"]


def test_a_reference_named_in_a_language_the_model_cannot_translate_into_is_refused(capsys, fixture_bundle, tmp_path):
    """With a de->en model, `-r test.de` (the German side given by mistake) was not read as German, since
    the suffix was looked up among the model's targets only: English output was scored against German."""
    import shutil

    from mtkit.runtime import checksums
    from mtkit.runtime.bundle_format import BundleConfig

    one_way = Path(shutil.copytree(fixture_bundle, tmp_path / "one-way"))
    config = BundleConfig.load(one_way)
    config.directions = [["de", "en"]]
    config.save(one_way)
    checksums.record(one_way)
    code, out, err = cli(capsys, "-m", str(one_way), "-s", str(FIXTURES / "dev.de"), "-r", str(FIXTURES / "dev.de"),
                         "--greedy", "--limit", "2")
    assert code == 2 and out == ""
    assert f"the name of {FIXTURES / 'dev.de'} says it is in de, which this model does not translate de into" in err
    code, out, err = cli(capsys, "-m", str(one_way), "-s", str(FIXTURES / "dev.de"), "-r", str(FIXTURES / "dev.en"),
                         "--greedy", "--limit", "2")
    assert code == 0 and "de->en" in out, err
