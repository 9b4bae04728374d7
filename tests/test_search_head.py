"""The decoder's search head (export/search_head.py) against numpy's ranking, on a stand-in graph
whose `logits` output is its input: both TopK forms, several vocabulary sizes, fp32 and fp16."""

from __future__ import annotations

import json
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from mtkit.export.search_head import add_search_head, block_size
from mtkit.runtime import bundle_format as bf
from mtkit.runtime.vocab import EOS_ID


def logits_graph(path, vocab: int, elem=TensorProto.FLOAT):
    node = helper.make_node("Identity", ["scores"], [bf.LOGITS])
    graph = helper.make_graph([node], "stand_in",
                              [helper.make_tensor_value_info("scores", elem, ["batch", "new_len", vocab])],
                              [helper.make_tensor_value_info(bf.LOGITS, elem, ["batch", "new_len", vocab])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


def test_block_size():
    assert block_size(16000, 16) == 64
    assert block_size(600, 16) == 30          # at least 16 blocks
    assert block_size(97, 16) is None         # prime: one TopK
    assert block_size(10, 10) is None


@pytest.mark.parametrize("vocab", [16000, 600, 97, 10])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_head_is_the_top_of_the_last_positions_log_softmax(tmp_path, vocab, dtype):
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16
    path = logits_graph(tmp_path / "g.onnx", vocab, elem)
    record = add_search_head(path, vocab)
    assert ("two-stage" in record[0]) == (block_size(vocab, min(bf.SEARCH_HEAD_K, vocab)) is not None)
    assert add_search_head(path, vocab) == []                        # idempotent
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(vocab)
    scores = (rng.normal(size=(5, 3, vocab)) * 4).astype(dtype)
    top_logp, top_ids, eos = session.run([bf.TOP_LOGPROBS, bf.TOP_IDS, bf.EOS_LOGPROB], {"scores": scores})

    last = scores[:, -1].astype(np.float64)
    logp = last - last.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    k = min(bf.SEARCH_HEAD_K, vocab)
    assert top_ids.shape == top_logp.shape == (5, k) and eos.shape == (5,)
    expected = -np.sort(-logp, axis=1)[:, :k]
    np.testing.assert_allclose(top_logp, expected, atol=1e-4)                  # the k best, best first
    np.testing.assert_allclose(np.take_along_axis(logp, top_ids, 1), top_logp, atol=1e-4)   # ...and their ids
    assert all(len(set(row)) == k for row in top_ids.tolist())
    np.testing.assert_allclose(eos, logp[:, EOS_ID], atol=1e-4)


def test_bundles_without_the_head_still_translate_alike(fixture_bundle, fixture_translator, tmp_path):
    """A bundle exported before the search head: its decoder lacks the head's outputs, the runtime
    ranks the logits in numpy, and the translations are the same."""
    import shutil

    import onnx

    from mtkit.runtime import Translator
    from mtkit.runtime.checksums import record as record_checksums

    old = tmp_path / "old-bundle"
    shutil.copytree(fixture_bundle, old)
    model = onnx.load(str(old / "decoder.onnx"))
    head_outputs = [o for o in model.graph.output if o.name in (bf.TOP_LOGPROBS, bf.TOP_IDS, bf.EOS_LOGPROB)]
    for output in head_outputs:
        model.graph.output.remove(output)
    onnx.save(model, str(old / "decoder.onnx"))
    config = json.loads((old / bf.CONFIG_FILE).read_text())
    config["tensors"] = bf.tensor_names(config["model"]["decoder_layers"])    # names without the head
    (old / bf.CONFIG_FILE).write_text(json.dumps(config))
    record_checksums(old)                       # as that export would have recorded them

    from conftest import ENGLISH, GERMAN, ORT_THREADS

    sentences = GERMAN[:3]
    with_head = fixture_translator
    without = Translator(old, variant="fp32", threads=ORT_THREADS)
    assert with_head.backend.search_head_k == bf.SEARCH_HEAD_K and without.backend.search_head_k == 0
    for beam in (1, 4):
        a = with_head.translate(sentences, to="en", beam_size=beam)
        b = without.translate(sentences, to="en", beam_size=beam)
        assert [t.text for t in a] == [t.text for t in b] == ENGLISH[:3]
        assert [t.score for t in a] == pytest.approx([t.score for t in b], abs=1e-4)
