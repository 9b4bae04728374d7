"""mt-export's own graph rewrites (`optimize.rewrite_for_runtime`) on the fixture model's
traced graphs: fewer kernels, the same outputs up to float rounding, for any batch and length."""

from __future__ import annotations

import collections
import shutil

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from mtkit.export import graphs, optimize
from mtkit.runtime import bundle_format as bf
from mtkit.runtime.vocab import BOS_ID, EOS_ID, PAD_ID
from mtkit.train.checkpoint import load_model


@pytest.fixture(scope="module")
def traced(fixture_checkpoint, tmp_path_factory):
    """The fixture model's graphs after ORT's fusions only, and after every rewrite of ours too."""
    _, model = load_model(fixture_checkpoint)
    cfg = model.cfg
    out = tmp_path_factory.mktemp("passes")
    raw = graphs.export_graphs(model, out)
    pairs, records = {}, {}
    for graph, path in raw.items():
        fused, rewritten = out / f"{graph}.fused.onnx", out / f"{graph}.rewritten.onnx"
        optimize.optimize_graph(path, fused, cfg.n_heads, cfg.d_model, cfg.activation)
        shutil.copy(fused, rewritten)
        records[graph] = optimize.rewrite_for_runtime(rewritten, cfg.head_dim)
        pairs[graph] = fused, rewritten
    return cfg, pairs, records


def session(path):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def op_counts(path) -> collections.Counter:
    return collections.Counter(node.op_type for node in onnx.load(str(path)).graph.node)


def test_rewrites_leave_no_run_time_arithmetic_for_fixed_sizes(traced):
    _, pairs, records = traced
    for graph, (fused, rewritten) in pairs.items():
        before, after = op_counts(fused), op_counts(rewritten)
        assert sum(after.values()) < 0.8 * sum(before.values()), (graph, before, after)
        # The attention scale and the softmax NaN guards are gone; every score product is one kernel.
        assert before["Sqrt"] and before["IsNaN"], before
        assert not after["Sqrt"] and not after["IsNaN"], after
        assert after["FusedMatMul"] >= 1
        assert any("static shape arithmetic folded" in line for line in records[graph]), records[graph]
        onnx.checker.check_model(str(rewritten), full_check=True)


def sources(cfg, batch: int, length: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Random sources of different lengths (one full, the others padded), each with tag and EOS."""
    ids = np.full((batch, length), PAD_ID, np.int64)
    for row in range(batch):
        n = length if row == 0 else int(rng.integers(2, length + 1))
        ids[row, :n] = rng.integers(EOS_ID + 1, cfg.vocab_size, n)
        ids[row, n - 1] = EOS_ID
    return ids, ids != PAD_ID


@pytest.mark.parametrize("batch,length", [(1, 2), (1, 9), (3, 7)])
def test_rewritten_encoder_gives_the_same_outputs(traced, batch, length):
    cfg, pairs, _ = traced
    src, mask = sources(cfg, batch, length, np.random.default_rng(batch * 10 + length))
    before, after = (session(path).run(None, {bf.SRC_IDS: src, bf.SRC_MASK: mask}) for path in pairs["encoder"])
    for a, b in zip(before, after):
        assert a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("sentences,group,past,new", [(1, 1, 0, 1), (1, 1, 4, 1), (2, 3, 5, 1), (2, 1, 0, 4)])
def test_rewritten_decoder_gives_the_same_outputs(traced, sentences, group, past, new):
    """Beam rows grouped per sentence (group > 1), a past of any length, one or several new tokens."""
    cfg, pairs, _ = traced
    rng = np.random.default_rng(sentences * 100 + group * 10 + past)
    src, mask = sources(cfg, sentences, 6, rng)
    encoder = session(pairs["encoder"][1])
    cross = dict(zip([o.name for o in encoder.get_outputs()], encoder.run(None, {bf.SRC_IDS: src, bf.SRC_MASK: mask})))
    rows = sentences * group
    feeds = {bf.TGT_IDS: np.concatenate([np.full((rows, 1), BOS_ID), rng.integers(EOS_ID + 1, cfg.vocab_size,
                                                                                 (rows, new - 1))], axis=1),
             bf.SRC_MASK: mask}
    for i in range(cfg.decoder_layers):
        for name in (bf.past_key(i), bf.past_value(i)):
            feeds[name] = rng.standard_normal((rows, cfg.n_heads, past, cfg.head_dim)).astype(np.float32)
        for name in (bf.cross_key(i), bf.cross_value(i)):
            feeds[name] = cross[name]
    before, after = (session(path).run(None, feeds) for path in pairs["decoder"])
    for a, b in zip(before, after):
        assert a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4)
