"""Parity between the exported graphs and the PyTorch model, checked here independently of
export/parity.py's own bookkeeping: batches with padding, cached vs uncached decoding, greedy
and beam search through the shared `runtime/search.py`."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest
import sentencepiece as spm
import torch

from conftest import FIXTURES, GERMAN
from mtkit.export import parity
from mtkit.train.checkpoint import load_model
from mtkit.runtime import bundle_format as bf
from mtkit.runtime.batching import decode_all, pad_batch
from mtkit.runtime.bundle_format import BundleConfig
from mtkit.runtime.onnx_backend import OnnxBackend
from mtkit.runtime.prefix import Prefix
from mtkit.runtime.repetition import Pieces
from mtkit.runtime.search import DecodeOptions
from mtkit.runtime.vocab import BOS_ID, source_ids
from mtkit.train.config import RunConfig
from mtkit.train.reference import TorchBackend

# Sentences the fixture model knows (wide margins) and unseen ones (near-ties likely), of mixed lengths.
UNSEEN = (FIXTURES / "tatoeba" / "dev.de").read_text(encoding="utf-8").splitlines()
SENTENCES = [GERMAN[0], GERMAN[1], UNSEEN[0], GERMAN[2] + " " + GERMAN[3], UNSEEN[1], GERMAN[4]]


@pytest.fixture(scope="module")
def setup(fixture_bundle, fixture_checkpoint):
    ckpt, model = load_model(fixture_checkpoint)
    config = BundleConfig.load(fixture_bundle)
    sp = spm.SentencePieceProcessor(model_file=str(fixture_bundle / bf.TOKENIZER_FILE))
    sources = [source_ids(p, config.language_tags["en"], config.max_positions) for p in sp.encode(SENTENCES)]
    return model, config, sources, sp


def sessions(bundle, variant):
    return [ort.InferenceSession(str(bundle / bf.graph_file(g, variant)), providers=["CPUExecutionProvider"])
            for g in ("encoder", "decoder")]


def test_padded_batch_logits_match_cached_and_full_pytorch(setup, fixture_bundle):
    model, config, sources, _ = setup
    src_ids, src_mask = pad_batch(sources)
    assert not src_mask.all(), "the batch must contain padding"
    targets = [[BOS_ID, *range(10, 10 + n)] for n in (3, 7, 5, 9, 2, 6)]   # ragged, padded too
    tgt_ids, _ = pad_batch(targets)
    encoder, decoder = sessions(fixture_bundle, "fp32")
    layers = config.decoder_layers

    enc_names = [o.name for o in encoder.get_outputs()]
    enc_out = dict(zip(enc_names, encoder.run(None, {bf.SRC_IDS: src_ids, bf.SRC_MASK: src_mask})))
    with torch.no_grad():
        ids_t, mask_t, tgt_t = map(torch.from_numpy, (src_ids, src_mask, tgt_ids))
        memory = model.encode(ids_t, mask_t)
        cross = model.cross_kv(memory)
        full = model(ids_t, mask_t, tgt_t).numpy()
        past, cached = None, []
        for t in range(tgt_t.shape[1]):
            logits, past, _ = model.decode(tgt_t[:, t:t + 1], mask_t, cross, past)
            cached.append(logits)
        cached = torch.cat(cached, 1).numpy()
    assert np.abs(enc_out[bf.ENCODER_OUT] - memory.numpy()).max() <= 1e-4
    for i in range(layers):
        assert np.abs(enc_out[bf.cross_key(i)] - cross[i][0].numpy()).max() <= 1e-4
        assert np.abs(enc_out[bf.cross_value(i)] - cross[i][1].numpy()).max() <= 1e-4

    # ONNX: one token per step, the KV cache fed back in.
    feeds_cross = {k: v for k, v in enc_out.items() if k.startswith("cross_")}
    empty = np.zeros((len(sources), config.n_heads, 0, config.head_dim), np.float32)
    past = {n: empty for i in range(layers) for n in (bf.past_key(i), bf.past_value(i))}
    out_names = [o.name for o in decoder.get_outputs()]
    onnx_logits = []
    for t in range(tgt_ids.shape[1]):
        out = dict(zip(out_names, decoder.run(None, {bf.TGT_IDS: tgt_ids[:, t:t + 1], bf.SRC_MASK: src_mask,
                                                     **past, **feeds_cross})))
        onnx_logits.append(out[bf.LOGITS])
        past = {bf.past_key(i): out[bf.present_key(i)] for i in range(layers)} | \
               {bf.past_value(i): out[bf.present_value(i)] for i in range(layers)}
    onnx_logits = np.concatenate(onnx_logits, 1)
    assert np.abs(onnx_logits - cached).max() <= 1e-4
    assert np.abs(onnx_logits - full).max() <= 1e-4


# Target prefixes (runtime/prefix.py): forced words, an unfinished word, none.
PREFIXES = ["The", "A wom", None, "I ", "He", None]


@pytest.mark.parametrize("prefixed", [False, True])
@pytest.mark.parametrize("beam", [1, 4])
def test_search_outputs_identical(setup, fixture_bundle, beam, prefixed):
    model, config, sources, sp = setup
    opts = DecodeOptions(beam_size=beam, num_hypotheses=beam, max_length=config.max_positions, no_repeat_loop=0)
    prefixes = [p and Prefix.of(p, sp) for p in PREFIXES] if prefixed else None
    # max_sentences=4 puts sentences of different lengths into one batch.
    torch_backend, pieces = TorchBackend(model), Pieces.of_tokenizer(sp)
    torch_results = decode_all(torch_backend, sources, opts, max_sentences=4 * beam, pieces=pieces, prefixes=prefixes)
    onnx_results = decode_all(OnnxBackend(*sessions(fixture_bundle, "fp32"), config), sources, opts,
                              max_sentences=4 * beam, pieces=pieces, prefixes=prefixes)
    if prefixed:
        for result, prefix in zip(onnx_results, PREFIXES):
            assert all(sp.decode(h.tokens).startswith(prefix or "") for h in result.hypotheses)
    torch_best, onnx_best = ([r.hypotheses[0].tokens for r in rs] for rs in (torch_results, onnx_results))
    assert parity.differences(torch_backend, sources, onnx_best, torch_best,
                              opts.length_penalty if beam > 1 else None) == []
    for t, o in zip(torch_results, onnx_results):
        if [h.tokens for h in t.hypotheses] == [h.tokens for h in o.hypotheses]:
            np.testing.assert_allclose([h.score for h in t.hypotheses], [h.score for h in o.hypotheses], atol=1e-4)


def test_parity_report_in_the_bundle(fixture_bundle):
    report = json.loads((fixture_bundle / bf.PARITY_FILE).read_text())
    assert report["passed"] is True and report["sentences"] > 0 and report["references"] is True
    fp32, int8 = report["variants"]["fp32"], report["variants"]["int8"]
    assert fp32["max_abs_logit_diff"] <= parity.FP32_TOLERANCE
    assert fp32["max_abs_encoder_diff"] <= parity.FP32_TOLERANCE
    assert fp32["greedy_differences"] == [] and fp32["beam_differences"] == []
    assert fp32["batches_with_padding"] > 0
    for variant in (fp32, int8):
        for key in ("max_abs_logit_diff", "greedy_match_rate", "beam_match_rate", "greedy_differences",
                    "beam_differences", "bleu", "bleu_delta_vs_fp32"):
            assert key in variant
    # int8 is reported, not required to match; on the fixture's own pairs its margins make it match.
    assert int8["max_abs_logit_diff"] > 0.0
    assert int8["greedy_differences"] == [] and int8["beam_differences"] == []
    assert int8["bleu_delta_vs_fp32"] == pytest.approx(int8["bleu"] - fp32["bleu"], abs=0.011)


@pytest.fixture(scope="module")
def checker(fixture_checkpoint, fixture_bundle):
    """The checker used by the export, on the first 16 sentences of the fixture's dev set."""
    ckpt, model = load_model(fixture_checkpoint)
    data = parity.load_parity_set(ckpt, fixture_checkpoint, None, None, limit=16)
    assert data.references is not None and len(data.sources) == 16
    expected = [p.src for p in RunConfig.from_dict(ckpt.run_config).load_split("dev")][:16]
    assert data.sources == expected
    sp = spm.SentencePieceProcessor(model_file=str(fixture_bundle / bf.TOKENIZER_FILE))
    return parity.ParityChecker(model, sp, data, ckpt.language_tags[data.target_lang])


def test_checker_on_the_dev_set(checker, fixture_bundle):
    """The checker run directly: the dev set decodes identically in ONNX fp32."""
    report = checker.check_variant(fixture_bundle, BundleConfig.load(fixture_bundle), "fp32")
    assert parity.fp32_failures(report) == []
    assert report["batches_with_padding"] >= 1
    assert report["provider"] == "CPUExecutionProvider"


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_iobinding_backend_gives_the_same_checks(checker, fixture_bundle, variant):
    """Parity through the runtime's IOBinding backend (the CUDA path, run here on the CPU) measures
    exactly what it measures through the plain backend: same kernels, the cache only kept elsewhere."""
    config = BundleConfig.load(fixture_bundle)
    plain = checker.check_variant(fixture_bundle, config, variant, io_binding=False)
    bound = checker.check_variant(fixture_bundle, config, variant, io_binding=True)
    assert bound == plain
    assert plain["max_abs_logit_diff"] > 0.0          # the checks did compare something


def test_failures_are_detected():
    good = {"max_abs_encoder_diff": 1e-6, "max_abs_logit_diff_vs_cached": 2e-6, "max_abs_logit_diff_vs_full": 2e-6,
            "greedy_match_rate": 0.99, "beam_match_rate": 1.0, "greedy_differences": [], "beam_differences": []}
    assert parity.fp32_failures(good) == []       # a difference at a near-tie is not a failure
    assert parity.fp32_failures(good | {"max_abs_logit_diff_vs_full": 1e-3})
    assert parity.fp32_failures(good | {"max_abs_encoder_diff": float("nan")})
    [failure] = parity.fp32_failures(good | {"beam_differences": ["sentence 3: differs at step 2"]})
    assert "beam" in failure and "sentence 3: differs at step 2" in failure
