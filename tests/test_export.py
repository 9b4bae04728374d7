"""mt-export: checkpoint -> bundle (graphs, tokenizer, config.json, parity.json), and its errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import sentencepiece as spm
import torch
from click.testing import CliRunner
from rich.text import Text

from conftest import ENGLISH, GERMAN, PAIRS
from mtkit.export import ExportError, ParityError, default_output, export_bundle
from mtkit.export import api as export_api
from mtkit.export import graphs as export_graphs_module
from mtkit.export.bundle import check_target, check_tokenizer
from mtkit.export.cli import main as cli_main
from mtkit.export.cli import parity_table
from mtkit.runtime import bundle_format as bf
from mtkit.runtime import onnx_backend
from mtkit.runtime.bundle_format import BundleConfig, BundleError
from mtkit.runtime.checksums import file_sha256
from mtkit.runtime.errors import ModelLoadError
from mtkit.runtime.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from mtkit.train.checkpoint import CheckpointError, load_checkpoint

FAST = {"max_sentences": 8}   # extra exports in this file check files and errors, not parity depth


def leftovers(directory: Path) -> list[str]:
    """Hidden staging/scratch entries an export might have left next to its target."""
    return [p.name for p in directory.iterdir() if p.name.startswith((".", "mt-export-"))]


# ----- the bundle ----------------------------------------------------------------------------

def test_bundle_files_and_config(fixture_bundle, fixture_checkpoint):
    config = BundleConfig.load(fixture_bundle)
    ckpt = load_checkpoint(fixture_checkpoint)
    mc = ckpt.model_config.to_dict()
    assert config.schema_version == bf.SCHEMA_VERSION
    assert (config.vocab_size, config.d_model, config.n_heads, config.head_dim) == \
        (mc["vocab_size"], mc["d_model"], mc["n_heads"], mc["d_model"] // mc["n_heads"])
    assert (config.encoder_layers, config.decoder_layers, config.max_positions) == \
        (mc["encoder_layers"], mc["decoder_layers"], mc["max_positions"])
    assert config.special_ids == {"pad": PAD_ID, "unk": UNK_ID, "bos": BOS_ID, "eos": EOS_ID}
    assert config.language_tags == ckpt.language_tags
    assert sorted(map(tuple, config.directions)) == sorted(map(tuple, ckpt.directions))
    assert config.tensors == bf.tensor_names(mc["decoder_layers"], search_head=True, cross_per_sentence=True)
    assert set(config.variants) == {"fp32", "int8"}
    for variant, entry in config.variants.items():
        assert entry["encoder"] == bf.graph_file("encoder", variant)
        assert entry["decoder"] == bf.graph_file("decoder", variant)
        assert entry["precision"]
        for graph in ("encoder", "decoder"):
            assert entry["size_bytes"][graph] == (fixture_bundle / entry[graph]).stat().st_size
            assert entry["optimizations"][graph], "every variant records what was applied"
    int8_record = " ".join(config.variants["int8"]["optimizations"]["decoder"])
    assert "MatMulInteger" in int8_record and "activations quantized per row" in int8_record
    assert config.variants["int8"]["data"] == ["embedding.int8.bin"]     # the vocabulary table, once for both graphs
    assert config.variants["int8"]["size_bytes"]["embedding.int8.bin"] == (fixture_bundle / "embedding.int8.bin").stat().st_size
    assert any("SkipLayerNormalization" in o for o in config.variants["fp32"]["optimizations"]["encoder"])
    assert any("attention fusion: not applicable" in o for o in config.variants["fp32"]["optimizations"]["decoder"])
    prov = config.provenance
    assert prov["checkpoint_sha256"] == file_sha256(fixture_checkpoint)
    assert prov["run_config"] == json.loads(json.dumps(ckpt.run_config))
    assert "scores" in prov and prov["exporter"]["opset"] == 18
    assert config.parity["passed"] is True
    assert {"fp32", "int8"} <= set(config.parity)


def test_tokenizer_is_the_checkpoints(fixture_bundle, fixture_checkpoint):
    ckpt = load_checkpoint(fixture_checkpoint)
    assert (fixture_bundle / bf.TOKENIZER_FILE).read_bytes() == ckpt.tokenizer_model
    sp = spm.SentencePieceProcessor(model_file=str(fixture_bundle / bf.TOKENIZER_FILE))
    assert sp.vocab_size() == BundleConfig.load(fixture_bundle).vocab_size


def test_bundle_holds_no_pickle(fixture_bundle):
    """Loading must never execute code: only JSON, SentencePiece and ONNX files."""
    names = sorted(p.name for p in fixture_bundle.iterdir())
    assert names == sorted([bf.CONFIG_FILE, bf.TOKENIZER_FILE, bf.PARITY_FILE, "encoder.onnx", "decoder.onnx",
                            "encoder.int8.onnx", "decoder.int8.onnx", "embedding.int8.bin"])
    for p in fixture_bundle.iterdir():
        assert not p.read_bytes().startswith((b"\x80", b"PK\x03\x04")), f"{p.name} looks like a pickle / torch zip"
    json.loads((fixture_bundle / bf.PARITY_FILE).read_text())


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_graphs_follow_the_contract(fixture_bundle, variant):
    config = BundleConfig.load(fixture_bundle)
    names = bf.tensor_names(config.decoder_layers, search_head=True)
    for graph in ("encoder", "decoder"):
        path = fixture_bundle / bf.graph_file(graph, variant)
        onnx.checker.check_model(str(path), full_check=True)
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        assert [i.name for i in session.get_inputs()] == names[graph]["inputs"]
        assert [o.name for o in session.get_outputs()] == names[graph]["outputs"]
    decoder = ort.InferenceSession(str(fixture_bundle / bf.graph_file("decoder", variant)), providers=["CPUExecutionProvider"])
    inputs = {i.name: i for i in decoder.get_inputs()}
    assert inputs[bf.TGT_IDS].type == "tensor(int64)" and inputs[bf.SRC_MASK].type == "tensor(bool)"
    past = inputs[bf.past_key(0)]
    assert past.type == "tensor(float)"
    # Batch and past length are symbolic, heads and head dim fixed.
    assert isinstance(past.shape[0], str) and isinstance(past.shape[2], str)
    assert past.shape[1] == config.n_heads and past.shape[3] == config.head_dim


def run_decoder(session, config, tgt, src_mask, cross, past=None):
    layers = config.decoder_layers
    if past is None:
        empty = np.zeros((tgt.shape[0], config.n_heads, 0, config.head_dim), np.float32)
        past = {n: empty for i in range(layers) for n in (bf.past_key(i), bf.past_value(i))}
    outputs = session.run(None, {bf.TGT_IDS: tgt, bf.SRC_MASK: src_mask, **past, **cross})
    names = [o.name for o in session.get_outputs()]
    out = dict(zip(names, outputs))
    present = {bf.past_key(i): out[bf.present_key(i)] for i in range(layers)} | \
              {bf.past_value(i): out[bf.present_value(i)] for i in range(layers)}
    return out, present


def test_one_decoder_graph_for_every_step(fixture_bundle):
    """Zero-length past, one token, several tokens, batch 1 and 3: the same graph, consistent results."""
    config = BundleConfig.load(fixture_bundle)
    enc = ort.InferenceSession(str(fixture_bundle / "encoder.onnx"), providers=["CPUExecutionProvider"])
    dec = ort.InferenceSession(str(fixture_bundle / "decoder.onnx"), providers=["CPUExecutionProvider"])
    tag = config.language_tags["en"]
    for batch in (1, 3):
        src = np.array([[tag, 10, 11, 12, 13, 14, EOS_ID], [tag, 20, 21, EOS_ID, 0, 0, 0], [tag, 30, EOS_ID, 0, 0, 0, 0]])[:batch]
        mask = src != PAD_ID
        enc_out = dict(zip([o.name for o in enc.get_outputs()], enc.run(None, {bf.SRC_IDS: src, bf.SRC_MASK: mask})))
        cross = {k: v for k, v in enc_out.items() if k.startswith("cross_")}
        tgt = np.array([[BOS_ID, 40, 41, 42, 43]] * batch)
        full, _ = run_decoder(dec, config, tgt, mask, cross)                         # P=0, T=5
        first, past = run_decoder(dec, config, tgt[:, :1], mask, cross)              # P=0, T=1
        second, past = run_decoder(dec, config, tgt[:, 1:3], mask, cross, past)      # P=1, T=2
        third, past = run_decoder(dec, config, tgt[:, 3:], mask, cross, past)        # P=3, T=2
        steps = np.concatenate([first[bf.LOGITS], second[bf.LOGITS], third[bf.LOGITS]], axis=1)
        assert full[bf.LOGITS].shape == (batch, 5, config.vocab_size)
        assert np.abs(steps - full[bf.LOGITS]).max() < 1e-4
        assert past[bf.past_key(0)].shape == (batch, config.n_heads, 5, config.head_dim)
        attention = full[bf.CROSS_ATTENTION]
        assert attention.shape == (batch, 5, src.shape[1])
        np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-5)
        assert np.all(attention[~np.broadcast_to(mask[:, None, :], attention.shape)] == 0)  # no weight on padding


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_search_head_is_the_top_of_the_log_softmax(fixture_bundle, variant):
    config = BundleConfig.load(fixture_bundle)
    enc = ort.InferenceSession(str(fixture_bundle / bf.graph_file("encoder", variant)), providers=["CPUExecutionProvider"])
    dec = ort.InferenceSession(str(fixture_bundle / bf.graph_file("decoder", variant)), providers=["CPUExecutionProvider"])
    src = np.array([[config.language_tags["en"], 10, 11, 12, EOS_ID], [config.language_tags["en"], 20, EOS_ID, 0, 0]])
    mask = src != PAD_ID
    cross = dict(zip([o.name for o in enc.get_outputs()], enc.run(None, {bf.SRC_IDS: src, bf.SRC_MASK: mask})))
    cross = {k: v for k, v in cross.items() if k.startswith("cross_")}
    tgt = np.array([[BOS_ID, 40, 41]] * 2)
    out, _ = run_decoder(dec, config, tgt, mask, cross)
    last = out[bf.LOGITS][:, -1].astype(np.float64)
    logp = last - np.log(np.exp(last - last.max(1, keepdims=True)).sum(1, keepdims=True)) - last.max(1, keepdims=True)
    k = min(bf.SEARCH_HEAD_K, config.vocab_size)
    assert out[bf.TOP_IDS].shape == out[bf.TOP_LOGPROBS].shape == (2, k) and out[bf.EOS_LOGPROB].shape == (2,)
    np.testing.assert_array_equal(out[bf.TOP_IDS], np.argsort(-logp, axis=1, kind="stable")[:, :k])
    np.testing.assert_allclose(out[bf.TOP_LOGPROBS], np.take_along_axis(logp, out[bf.TOP_IDS], 1), atol=1e-5)
    np.testing.assert_allclose(out[bf.EOS_LOGPROB], logp[:, EOS_ID], atol=1e-5)


def test_runtime_translates_with_the_bundle(fixture_bundle):
    from mtkit.runtime.translator import Translator

    for variant in ("fp32", "int8"):
        translator = Translator(fixture_bundle, variant=variant)
        out = translator.translate(GERMAN[:2], to="en")
        assert [t.text for t in out] == ENGLISH[:2]


# ----- runtime errors on damaged bundles --------------------------------------------------------

@pytest.fixture
def bundle_copy(fixture_bundle, tmp_path) -> Path:
    copy = tmp_path / "bundle"
    shutil.copytree(fixture_bundle, copy)
    return copy


def test_truncated_graph_is_a_bundle_error(bundle_copy):
    from mtkit.runtime.translator import Translator

    path = bundle_copy / "decoder.onnx"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])
    with pytest.raises(BundleError, match="decoder.onnx"):
        Translator(bundle_copy, variant="fp32")


def test_other_schema_version_is_a_bundle_error(bundle_copy):
    from mtkit.runtime.translator import Translator

    path = bundle_copy / bf.CONFIG_FILE
    data = json.loads(path.read_text())
    data["schema_version"] = bf.SCHEMA_VERSION + 1
    path.write_text(json.dumps(data))
    with pytest.raises(BundleError, match="schema_version"):
        BundleConfig.load(bundle_copy)
    with pytest.raises(BundleError, match="schema_version"):
        Translator(bundle_copy)


# ----- export_bundle: options and errors -------------------------------------------------------

def test_default_output_is_next_to_the_checkpoint(tmp_path):
    assert default_output(tmp_path / "final.pt") == tmp_path / "final-bundle"
    assert default_output(tmp_path / "final.pt", archive=True) == tmp_path / "final-bundle.tar.gz"


def test_existing_output_needs_force(fixture_checkpoint, fixture_bundle, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(fixture_bundle / bf.CONFIG_FILE, out)     # an earlier bundle, with a file of the user's
    (out / "keep.txt").write_text("mine")
    with pytest.raises(ExportError, match="already exists"):
        export_bundle(fixture_checkpoint, out, **FAST)
    assert (out / "keep.txt").read_text() == "mine"
    report = export_bundle(fixture_checkpoint, out, force=True, **FAST)
    assert report.path == out and not (out / "keep.txt").exists()
    assert BundleConfig.load(out).variants.keys() == {"fp32"}
    assert leftovers(tmp_path) == []


def test_word_counts_of_the_training_data_go_into_the_bundle(fixture_checkpoint, tmp_path, monkeypatch):
    from mtkit.runtime.lexicon import Lexicon

    notes = []
    report = export_bundle(fixture_checkpoint, tmp_path / "b", progress=notes.append, **FAST)
    config = BundleConfig.load(report.path)
    assert config.lexicon == bf.LEXICON_FILE and bf.LEXICON_FILE in config.files
    lexicon = Lexicon.load(report.path / bf.LEXICON_FILE)
    assert lexicon.languages == ("de", "en") and lexicon.counts[lexicon.index["Ich"]][0] > 0 == lexicon.counts[lexicon.index["Ich"]][1]
    assert any(n.startswith("lexicon: ") and "words of the training data of fixture" in n for n in notes)
    # Without the data the bundle is made without counts (detection uses fastText alone), and says so.
    monkeypatch.setenv("MT_DATA_DIR", str(tmp_path / "nowhere"))
    notes.clear()
    (tmp_path / "src.txt").write_text(f"{GERMAN[0]}\n", encoding="utf-8")
    report = export_bundle(fixture_checkpoint, tmp_path / "c", parity_data=tmp_path / "src.txt", progress=notes.append,
                           **FAST)
    assert BundleConfig.load(report.path).lexicon is None and not (report.path / bf.LEXICON_FILE).exists()
    assert any(n.startswith("no lexicon: cannot read the training data") for n in notes)
    # Asked for by name, unreadable data is an error, before anything is written.
    with pytest.raises(ExportError, match="--lexicon-data .*missing.toml"):
        export_bundle(fixture_checkpoint, tmp_path / "d", parity_data=tmp_path / "src.txt",
                      lexicon_data=tmp_path / "missing.toml", **FAST)
    assert not (tmp_path / "d").exists() and leftovers(tmp_path) == []


def test_force_replaces_only_a_bundle(fixture_bundle, tmp_path):
    """--force never deletes what is not a bundle: these fail before the checkpoint is read."""
    docs = tmp_path / "mydocs"
    docs.mkdir()
    (docs / "notes.txt").write_text("precious")
    (tmp_path / "outfile.txt").write_text("mine")
    (tmp_path / "junk.tar.gz").write_text("mine")
    for target, archive in ((docs, False), (tmp_path / "outfile.txt", False), (tmp_path / "junk.tar.gz", True)):
        with pytest.raises(ExportError, match="exists and is not an mtkit bundle"):
            export_bundle(tmp_path / "never-read.pt", target, force=True, archive=archive)
    assert (docs / "notes.txt").read_text() == "precious" and (tmp_path / "outfile.txt").read_text() == "mine"
    with pytest.raises(ExportError, match=f"{tmp_path / 'outfile.txt'}: not a directory"):
        export_bundle(tmp_path / "never-read.pt", tmp_path / "outfile.txt" / "bundle")

    bundle_dir = tmp_path / "old-bundle"     # a bundle (or an archive of one) may be replaced
    bundle_dir.mkdir()
    shutil.copy(fixture_bundle / bf.CONFIG_FILE, bundle_dir)
    with tarfile.open(tmp_path / "old.tar.gz", "w:gz") as tar:
        tar.add(bundle_dir, arcname="old")
    check_target(bundle_dir, archive=False, force=True)
    check_target(tmp_path / "old.tar.gz", archive=True, force=True)
    with pytest.raises(ExportError, match="already exists"):
        check_target(tmp_path / "old.tar.gz", archive=True, force=False)
    (tmp_path / "empty").mkdir()            # taken without --force for a directory, never for an archive
    check_target(tmp_path / "empty", archive=False, force=False)
    with pytest.raises(ExportError, match="not an mtkit bundle archive"):
        check_target(tmp_path / "empty", archive=True, force=True)


def test_checkpoint_tokenizer_is_checked_and_named(fixture_checkpoint, tmp_path):
    ckpt = load_checkpoint(fixture_checkpoint)
    ckpt.model_config.vocab_size -= 1
    with pytest.raises(ExportError, match=f"{tmp_path / 'ck.pt'}: its tokenizer has 760 pieces but the model 759"):
        check_tokenizer(ckpt, tmp_path / "ck.pt")
    ckpt.tokenizer_model = b"garbage"
    with pytest.raises(ExportError, match=f"{tmp_path / 'ck.pt'}: its embedded tokenizer is damaged"):
        check_tokenizer(ckpt, tmp_path / "ck.pt")


def test_fp16_variant(fixture_checkpoint, tmp_path):
    report = export_bundle(fixture_checkpoint, tmp_path / "b", fp16=True, **FAST)
    config = report.config
    assert config.variants["fp16"]["decoder"] == "decoder.fp16.onnx"
    dec = ort.InferenceSession(str(report.path / "decoder.fp16.onnx"), providers=["CPUExecutionProvider"])
    assert {i.name: i.type for i in dec.get_inputs()}[bf.past_key(0)] == "tensor(float16)"
    fp16 = report.parity["variants"]["fp16"]
    assert fp16["run"], fp16.get("reason")              # ONNX Runtime's CPU provider runs fp16 graphs
    assert 0.0 < fp16["max_abs_logit_diff"] < 0.1
    assert fp16["greedy_differences"] == []             # the fixture's margins dwarf fp16 rounding


@pytest.mark.parametrize("failure", ["load", "provider"])
def test_fp16_parity_the_runtime_cannot_run_is_not_run_with_a_reason(fixture_checkpoint, tmp_path, monkeypatch,
                                                                     failure):
    """fp16 graphs the runtime cannot load on the provider (a kernel missing from ORT's CPU build), or a
    CUDA provider that does not start: the export still finishes, and says why fp16 parity was not run."""
    if failure == "load":
        real = onnx_backend.create_session

        def create_session(model, provider, settings, name=""):
            if str(model).endswith(".fp16.onnx"):
                raise ModelLoadError(f"{model}: not a usable ONNX model (NOT_IMPLEMENTED: no fp16 kernel)")
            return real(model, provider, settings, name)
        monkeypatch.setattr(onnx_backend, "create_session", create_session)
        provider, error = "CPUExecutionProvider", "ModelLoadError"
    else:
        if onnx_backend.cuda_available():
            pytest.skip("needs an onnxruntime build without the CUDA provider")
        monkeypatch.setattr(export_api, "cuda_available", lambda: True)   # the runtime then refuses CUDA
        provider, error = "CUDAExecutionProvider", "ProviderError"
    report = export_bundle(fixture_checkpoint, tmp_path / "b", fp16=True, **FAST)
    fp16 = report.parity["variants"]["fp16"]
    assert fp16["run"] is False and fp16["provider"] == provider
    assert fp16["reason"].startswith("fp16 parity not run on this machine") and error in fp16["reason"]
    assert report.parity["passed"] is True and report.config.parity["fp16"] == {"run": False}
    assert json.loads((report.path / bf.PARITY_FILE).read_text())["variants"]["fp16"] == fp16


def test_parity_data_file(fixture_checkpoint, tmp_path):
    tsv = tmp_path / "parity.tsv"
    tsv.write_text("".join(f"{de}\t{en}\n" for de, en in PAIRS[:3]), encoding="utf-8")
    report = export_bundle(fixture_checkpoint, tmp_path / "a", parity_data=tsv)
    assert report.parity["sentences"] == 3 and report.parity["references"] is True
    assert report.parity["variants"]["fp32"]["bleu"] == 100.0       # the fixture model knows these pairs

    with pytest.raises(ExportError, match="no such file"):
        export_bundle(fixture_checkpoint, tmp_path / "c", parity_data=tmp_path / "missing.txt")
    assert not (tmp_path / "c").exists()


def test_failed_parity_leaves_nothing(fixture_checkpoint, tmp_path, monkeypatch):
    """A graph that does not compute what the model computes must stop the export."""
    real_export = export_graphs_module.export_graphs

    def export_a_different_model(model, out_dir, opset):
        import copy

        broken = copy.deepcopy(model)
        with torch.no_grad():
            broken.decoder_layers[0].ffn.fc2.bias[0] += 0.05   # one feature: a uniform shift would vanish in LayerNorm
        return real_export(broken, out_dir, opset)

    monkeypatch.setattr(export_graphs_module, "export_graphs", export_a_different_model)
    out = tmp_path / "bundle"
    with pytest.raises(ParityError, match="max_abs_logit_diff") as info:
        export_bundle(fixture_checkpoint, out, **FAST)
    assert info.value.report["passed"] is False
    assert not out.exists() and leftovers(tmp_path) == []

    result = CliRunner().invoke(cli_main, [str(fixture_checkpoint), "-o", str(out), "--max-sentences", "8"])
    assert result.exit_code == 3, result.output
    assert "parity check failed" in result.output and "Traceback" not in result.output
    assert not out.exists() and leftovers(tmp_path) == []


def test_unknown_quantization(fixture_checkpoint, tmp_path):
    with pytest.raises(ExportError, match="int8"):
        export_bundle(fixture_checkpoint, tmp_path / "b", quantize="int4")


# ----- checkpoints that cannot be exported ------------------------------------------------------

def test_missing_checkpoint(tmp_path):
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        export_bundle(tmp_path / "nope.pt", tmp_path / "b")
    assert not (tmp_path / "b").exists()


def test_corrupt_checkpoint(fixture_checkpoint, tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(fixture_checkpoint.read_bytes()[:2000])
    with pytest.raises(CheckpointError, match="not a readable checkpoint"):
        export_bundle(bad, tmp_path / "b")
    assert not (tmp_path / "b").exists() and leftovers(tmp_path) == []


def test_checkpoint_of_unknown_version(fixture_checkpoint, tmp_path):
    ckpt = torch.load(fixture_checkpoint, weights_only=True)
    ckpt["version"] = 99
    path = tmp_path / "future.pt"
    torch.save(ckpt, path)
    with pytest.raises(CheckpointError, match="version 99"):
        export_bundle(path, tmp_path / "b")


# ----- the CLI --------------------------------------------------------------------------------

def invoke(*args):
    return CliRunner().invoke(cli_main, [str(a) for a in args])


def test_cli_writes_a_bundle_and_a_summary(fixture_checkpoint, tmp_path):
    plain = tmp_path / "parity[i][" / "x].txt"   # sources only: parity without references, so no BLEU
    plain.parent.mkdir()
    plain.write_text("".join(f"{de}\n" for de in GERMAN[:3]), encoding="utf-8")
    out = tmp_path / "cli-[b]bundle[" / "x]"  # rich markup in a path is shown as written (it had ended in MarkupError)
    out.mkdir(parents=True)                  # an empty directory is taken without --force
    # The steps' lines quote the parity file: with '[/x]' in its path they ended the export in MarkupError.
    result = CliRunner().invoke(cli_main, [str(a) for a in (fixture_checkpoint, "-o", out, "--quantize", "int8",
                                                            "--parity-data", plain)], env={"COLUMNS": "1000"})
    assert result.exit_code == 0, result.output
    config = BundleConfig.load(out)
    assert config.variants.keys() == {"fp32", "int8"}
    report = json.loads((out / bf.PARITY_FILE).read_text())
    assert report["sentences"] == 3 and report["references"] is False
    assert report["variants"]["fp32"]["bleu"] is None and report["variants"]["fp32"]["greedy_differences"] == []
    for text in ("decoder.int8.onnx", "greedy same", "BLEU", f"bundle written: {out}",
                 f"parity: PyTorch reference on 3 sentences ({plain})"):
        assert text in result.output
    title = parity_table(report).title      # markup; the table wraps it to its own width, so read it unwrapped
    assert f"({plain}, into en)" in Text.from_markup(title).plain


def test_cli_errors_are_messages_not_tracebacks(fixture_checkpoint, fixture_bundle, tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint at all")
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    badtok = tmp_path / "badtok.pt"
    ckpt = load_checkpoint(fixture_checkpoint)
    ckpt.tokenizer_model = b"garbage"
    ckpt.save(badtok)
    existing = tmp_path / "existing"
    existing.mkdir()
    shutil.copy(fixture_bundle / bf.CONFIG_FILE, existing)
    docs = tmp_path / "mydocs"
    docs.mkdir()
    (docs / "notes.txt").write_text("precious")
    (tmp_path / "afile").write_text("mine")
    cases = [
        ([tmp_path / "missing.pt"], "no such checkpoint"),
        ([tmp_path], "is a directory; give one of its checkpoints"),
        ([bad, "-o", tmp_path / "x"], f"{bad}: not a checkpoint written by mt-train (torch could not read it)"),
        ([empty, "-o", tmp_path / "x"], f"{empty}: empty file, not a checkpoint"),
        ([badtok, "-o", tmp_path / "x"], f"{badtok}: its embedded tokenizer is damaged"),
        ([fixture_checkpoint, "-o", existing], "already exists (pass --force"),
        ([fixture_checkpoint, "-o", docs, "--force"], "exists and is not an mtkit bundle"),
        ([fixture_checkpoint, "-o", tmp_path / "afile" / "x"], f"{tmp_path / 'afile'}: not a directory"),
        ([fixture_checkpoint, "-o", tmp_path / "afile" / "x", "--ship"], f"{tmp_path / 'afile'}: not a directory"),
        ([fixture_checkpoint, "-o", tmp_path / "y", "--parity-data", tmp_path / "missing.txt"], "no such file"),
    ]
    for args, message in cases:
        result = invoke(*args)
        assert result.exit_code == 1, (args, result.output)
        assert message in " ".join(result.output.split()), result.output
        assert "Traceback" not in result.output and "weights_only" not in result.output
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
    assert [p.name for p in existing.iterdir()] == [bf.CONFIG_FILE]
    assert (docs / "notes.txt").read_text() == "precious"
    assert leftovers(tmp_path) == []


def test_cli_default_output_and_archive(fixture_checkpoint, tmp_path, monkeypatch):
    from mtkit.runtime.bundle import resolve_model

    ckpt = tmp_path / "model.pt"
    shutil.copy(fixture_checkpoint, ckpt)
    result = invoke(ckpt, "--max-sentences", "4", "--archive")
    assert result.exit_code == 0, result.output
    archive = tmp_path / "model-bundle.tar.gz"
    assert archive.is_file() and leftovers(tmp_path) == []
    with tarfile.open(archive) as tar:
        assert f"model-bundle/{bf.CONFIG_FILE}" in tar.getnames()
    monkeypatch.setenv("MT_CACHE_DIR", str(tmp_path / "cache"))
    assert BundleConfig.load(resolve_model(archive)).variants.keys() == {"fp32"}


def test_int8_graphs_share_one_vocabulary_table(fixture_bundle):
    """The tied embedding is stored once: both int8 graphs read it from the same external data file,
    and neither graph holds a float copy of it."""
    config = BundleConfig.load(fixture_bundle)
    for graph in ("encoder", "decoder"):
        model = onnx.load(str(fixture_bundle / bf.graph_file(graph, "int8")), load_external_data=False)
        external = {dict((e.key, e.value) for e in i.external_data)["location"]
                    for i in model.graph.initializer if i.data_location == onnx.TensorProto.EXTERNAL}
        assert external == {"embedding.int8.bin"}
        assert not any(list(i.dims) in ([config.vocab_size, config.d_model], [config.d_model, config.vocab_size])
                       and i.data_location != onnx.TensorProto.EXTERNAL for i in model.graph.initializer)


def test_schema_1_bundles_still_load_and_wrong_special_ids_are_refused(bundle_copy):
    data = json.loads((bundle_copy / bf.CONFIG_FILE).read_text())
    old = {**data, "schema_version": 1}
    old.pop("tensors")                       # version 1 runtimes recomputed the names
    assert BundleConfig.from_json(old).names.cross == bf.tensor_names(data["model"]["decoder_layers"])["encoder"]["outputs"][1:]
    with pytest.raises(BundleError, match="special_ids"):
        BundleConfig.from_json({**data, "special_ids": {**data["special_ids"], "eos": 7}})
    with pytest.raises(BundleError, match="tensors"):
        BundleConfig.from_json({**data, "tensors": {**data["tensors"], "encoder": {"inputs": ["src_ids"], "outputs": []}}})


def test_int8_weight_range_gives_exact_integer_products():
    """MatMulInteger must be exact for the int8 variant to be batch-invariant; u8 x s8 kernels without
    VNNI saturate int16 pair sums unless the weights stay within export/int8.py's 7-bit range."""
    from onnx import TensorProto, helper, numpy_helper

    from mtkit.export.int8 import quantize_columns

    rng = np.random.default_rng(0)
    weight, _ = quantize_columns(rng.standard_normal((256, 64)).astype(np.float32))
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "w", "zero"], ["y"])], "g",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [None, 256])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(np.array(128, np.uint8), "zero")])
    session = ort.InferenceSession(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
                                   .SerializeToString(), providers=["CPUExecutionProvider"])
    activations = rng.integers(0, 256, (32, 256)).astype(np.uint8)
    activations[:16] = np.where(activations[:16] > 127, 255, 1)       # the extremes: largest pair sums
    expected = (activations.astype(np.int64) - 128) @ weight.astype(np.int64)
    assert np.array_equal(session.run(None, {"a": activations})[0], expected)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc and /sys")
@pytest.mark.parametrize("out, folder, ship", [("/proc/no-such-dir/ex1", "/proc", False), ("/sys/ex1", "/sys", False),
                                               ("/sys/ex1", "/sys", True)])
def test_cli_refuses_an_output_it_cannot_write_before_loading(fixture_checkpoint, monkeypatch, out, folder, ship):
    """Checked as the target is: before the checkpoint loads (seconds for a real model), not when the
    staging directory is made."""
    def never(*args, **kwargs):
        raise AssertionError("the checkpoint was loaded")

    monkeypatch.setattr(export_api, "load_model", never)
    monkeypatch.setattr("mtkit.export.ship.half_precision_checkpoint", never)
    result = invoke(fixture_checkpoint, "-o", out, *(["--ship"] if ship else []))
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    line = result.output.strip()          # the progress display leaves an empty line
    assert line.startswith(f"mt-export: error: {out}: cannot write in {folder} (") and "\n" not in line
    assert not Path(out).exists()


# ----- full disks, odd targets, the edge bundle ------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "fork"), reason="RLIMIT_FSIZE is POSIX")
@pytest.mark.parametrize("limit, archive", [(200_000, False), (1_000_000, True)])
def test_cli_a_full_disk_is_one_line_and_leaves_nothing(fixture_checkpoint, tmp_path, limit, archive):
    """The disk fills as a file size limit makes it (a write past it fails with EFBIG), in mt-export's
    process only: at 200 KB the tokenizer cannot be written into the staging directory; at 1 MB the
    graphs can, the .tar.gz of the bundle cannot."""
    import resource

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    target = tmp_path / ("b.tar.gz" if archive else "b")
    done = subprocess.run([str(Path(sys.executable).with_name("mt-export")), str(fixture_checkpoint), "-o", str(target),
                           "--max-sentences", "2", *(["--archive"] if archive else [])],
                          capture_output=True, text=True, timeout=300, preexec_fn=small_disk,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == f"mt-export: error: {target}: cannot write (File too large)"
    assert list(tmp_path.iterdir()) == []


def test_cli_an_archive_target_that_is_no_file_is_refused_at_once(fixture_checkpoint, tmp_path):
    """A FIFO (or a device) is never read as an archive, which would block, nor replaced."""
    fifo = tmp_path / "b.tar.gz"
    os.mkfifo(fifo)
    done = subprocess.run([str(Path(sys.executable).with_name("mt-export")), str(fixture_checkpoint), "-o", str(fifo),
                           "--archive", "--force"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1] == (f"mt-export: error: {fifo}: exists and is not an mtkit bundle archive; "
                                            "--force replaces only a bundle, so choose another output or remove it "
                                            "yourself")
    assert fifo.is_fifo() and [p.name for p in tmp_path.iterdir()] == ["b.tar.gz"]


def test_cli_opset_below_18_is_a_usage_error_and_help_lists_every_exit_status():
    """ReduceMax takes its axes as an input only from opset 18 (the search head, the int8 graphs):
    --opset 17 used to be taken, and failed after tracing."""
    result = invoke("never-read.pt", "--opset", "17")
    assert result.exit_code == 2 and "17 is not in the range 18<=x<=23" in result.output, result.output
    result = invoke("--help")
    assert result.exit_code == 0 and "18+: the int8 graphs and the search head" in " ".join(result.output.split())
    assert "130 interrupted, 143 terminated." in " ".join(result.output.split())


def test_ship_is_made_in_staging_then_moved_into_place_at_once(fixture_checkpoint, fixture_bundle, tmp_path):
    """The edge bundle's own steps (checkpoint in, fp32 graphs out, config.json rewritten) happen before
    the one rename: interrupted at that rename, a --force ship leaves the earlier bundle as it was."""
    from mtkit.export.ship import SHIPPED_CHECKPOINT, ship_bundle
    from mtkit.runtime.checksums import verify

    out = tmp_path / "ship"
    shutil.copytree(fixture_bundle, out)            # an earlier bundle, which --force replaces
    earlier = {p.name: p.read_bytes() for p in out.iterdir()}
    staged = {}

    def interrupt_the_move(message):
        if message == "moving the bundle into place":
            [staging] = [p for p in tmp_path.iterdir() if p.name.startswith(".ship.partial-")]
            staged.update({p.name: p.read_bytes() for p in staging.iterdir()})
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ship_bundle(fixture_checkpoint, out, force=True, progress=interrupt_the_move, **FAST)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == earlier and leftovers(tmp_path) == []
    assert SHIPPED_CHECKPOINT in staged and not {"encoder.onnx", "decoder.onnx"} & staged.keys()
    assert json.loads(staged[bf.CONFIG_FILE])["variants"].keys() == {"int8"}

    report = ship_bundle(fixture_checkpoint, out, force=True, **FAST)
    assert report.path == out and report.files.keys() == staged.keys() and leftovers(tmp_path) == []
    config = BundleConfig.load(out)
    assert config.variants.keys() == {"int8"} and config.provenance["checkpoint"] == SHIPPED_CHECKPOINT
    assert config.provenance["checkpoint_sha256"] == file_sha256(out / SHIPPED_CHECKPOINT)
    checked = verify(out, config)
    assert checked.ok and SHIPPED_CHECKPOINT in checked.checked and checked.unrecorded == []
    assert load_checkpoint(out / SHIPPED_CHECKPOINT).shipped_from == str(fixture_checkpoint)


def test_cli_parity_table_says_what_its_counts_mean_and_what_is_required():
    """'87% (11 real)' for int8 on a passing export, with nothing to say what 'real' was or that int8 need not
    match: the table's caption says both."""
    import io

    from rich.console import Console

    from mtkit.export.cli import parity_table

    run = {"run": True, "max_abs_logit_diff": 0.1, "greedy_match_rate": 1.0, "greedy_differences": [],
           "beam_match_rate": 0.87, "beam_differences": ["sentence 3: ..."] * 11, "bleu": 20.0}
    parity = {"sentences": 100, "source": "dev set of x", "target_lang": "en", "pytorch_bleu": 20.0, "beam_size": 4,
              "variants": {"fp32": run | {"beam_match_rate": 1.0, "beam_differences": []}, "int8": run}}
    out = io.StringIO()
    Console(file=out, width=80).print(parity_table(parity))
    text = " ".join(out.getvalue().split())
    assert "87% (11 real)" in text
    assert "(N real): N differ beyond a near-tie" in text and "int8 and fp16 are measured, not required" in text
