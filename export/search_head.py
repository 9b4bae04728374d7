"""The decoder's search head: the last position's log-softmax top-k, computed inside the graph.

Beam search keeps 2 x beam candidates per row, so it needs a row's few best tokens and their
log-probabilities, not [B,V] logits. In numpy, log-softmax and a partial sort over the full
vocabulary were ~40% of an int8 beam step (benchmarks/PERF_NOTES.md); as ONNX ops (LogSoftmax,
TopK) they cost a few percent of the step, and only [B,K] arrays leave the graph.

K is fixed (bundle_format.SEARCH_HEAD_K = 16: enough for beams up to 8; wider beams use the logits).
The head reads the `logits` output, which stays an output: sampling, n-gram bans and attention
still use it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mtkit.runtime import bundle_format as bf
from mtkit.runtime.vocab import EOS_ID


def add_search_head(path: Path, vocab_size: int) -> list[str]:
    """Append the head to the decoder graph at `path` (in place); returns the record for config.json."""
    model = onnx.load(str(path))
    graph = model.graph
    if any(o.name == bf.TOP_IDS for o in graph.output):
        return []
    logits = next(o for o in graph.output if o.name == bf.LOGITS)
    scores = bf.LOGITS                                                # [B,T,V]; T = 1 in a search step
    nodes = []
    if logits.type.tensor_type.elem_type != TensorProto.FLOAT:       # fp16 graphs: rank in fp32
        nodes.append(helper.make_node("Cast", [scores], ["search_head/logits_fp32"], to=TensorProto.FLOAT))
        scores = "search_head/logits_fp32"
    # Rank every position and keep the last one's [B,K] afterwards: picking the last position of
    # the [B,T,V] logits first would copy them (5% of an int8 beam step at T = 1).
    nodes += [
        helper.make_node("LogSoftmax", [scores], ["search_head/logprobs"], axis=-1),
        helper.make_node("TopK", ["search_head/logprobs", "search_head/k"], ["search_head/top_logprobs",
                         "search_head/top_ids"], axis=-1, largest=1, sorted=1),   # ties: the lower token id first
        helper.make_node("Gather", ["search_head/logprobs", "search_head/eos"], ["search_head/eos_logprobs"], axis=2),
        helper.make_node("Gather", ["search_head/top_logprobs", "search_head/last"], [bf.TOP_LOGPROBS], axis=1),
        helper.make_node("Gather", ["search_head/top_ids", "search_head/last"], [bf.TOP_IDS], axis=1),
        helper.make_node("Gather", ["search_head/eos_logprobs", "search_head/last"], [bf.EOS_LOGPROB], axis=1),
    ]
    graph.node.extend(nodes)
    k = min(bf.SEARCH_HEAD_K, vocab_size)
    graph.initializer.extend([
        numpy_helper.from_array(np.array(-1, dtype=np.int64), "search_head/last"),
        numpy_helper.from_array(np.array(EOS_ID, dtype=np.int64), "search_head/eos"),
        numpy_helper.from_array(np.array([k], dtype=np.int64), "search_head/k"),
    ])
    graph.output.extend([
        helper.make_tensor_value_info(bf.TOP_LOGPROBS, TensorProto.FLOAT, ["batch", k]),
        helper.make_tensor_value_info(bf.TOP_IDS, TensorProto.INT64, ["batch", k]),
        helper.make_tensor_value_info(bf.EOS_LOGPROB, TensorProto.FLOAT, ["batch"]),
    ])
    onnx.save(model, str(path))
    return [f"search head: LogSoftmax + TopK({k}) of the last position in the graph "
            f"({bf.TOP_LOGPROBS}, {bf.TOP_IDS}, {bf.EOS_LOGPROB})"]
