"""The decoder's search head: the last position's log-softmax top-k, computed inside the graph.

Beam search keeps 2 x beam candidates per row, so it needs a row's few best tokens and their
log-probabilities, not [B,V] logits. In numpy, log-softmax and a partial sort over the full
vocabulary were ~40% of an int8 beam step (benchmarks/PERF_NOTES.md); as ONNX ops (LogSoftmax
and a two-stage TopK) they cost a fraction of that, and only [B,K] arrays leave the graph.

K is fixed (bundle_format.SEARCH_HEAD_K = 16: enough for beams up to 8; wider beams use the logits).
The head reads the `logits` output, which stays an output: sampling, n-gram bans and attention
still use it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mtkit.runtime import bundle_format as bf
from mtkit.runtime.vocab import EOS_ID

PREFERRED_BLOCK = 64       # measured for V = 16000, K = 16: 32 about the same, 128 slower
MIN_BLOCK = 8              # smaller blocks leave too little for the first stage to skip


def block_size(vocab_size: int, k: int) -> int | None:
    """The two-stage top-k's block: the divisor of V nearest PREFERRED_BLOCK that leaves at least
    k blocks, or None (then one TopK over the whole vocabulary)."""
    fits = [b for b in range(MIN_BLOCK, vocab_size // k + 1) if vocab_size % b == 0]
    return min(fits, key=lambda b: (abs(math.log(b / PREFERRED_BLOCK)), b)) if fits else None


def add_search_head(path: Path, vocab_size: int) -> list[str]:
    """Append the head to the decoder graph at `path` (in place); returns the record for config.json."""
    model = onnx.load(str(path), load_external_data=False)   # shared int8 tables stay where they are
    graph = model.graph
    if any(o.name == bf.TOP_IDS for o in graph.output):
        return []
    k = min(bf.SEARCH_HEAD_K, vocab_size)
    block = block_size(vocab_size, k)
    constants = {"k": [k], "last": -1, "eos": EOS_ID}
    nodes = []
    scores = bf.LOGITS                                                # [B,T,V]; T = 1 in a search step
    logits = next(o for o in graph.output if o.name == bf.LOGITS)
    if logits.type.tensor_type.elem_type != TensorProto.FLOAT:       # fp16 graphs: rank in fp32
        nodes.append(_node("Cast", [scores], ["h/logits_fp32"], to=TensorProto.FLOAT))
        scores = "h/logits_fp32"
    # Every position is ranked and the last one's [B,K] is picked afterwards: picking the last
    # position of the [B,T,V] logits first would copy them (5% of an int8 beam step at T = 1).
    nodes.append(_node("LogSoftmax", [scores], ["h/logprobs"], axis=-1))
    if block:
        top_nodes, top_constants = _two_stage_top_k(vocab_size, k, block)
        nodes += top_nodes
        constants |= top_constants
    else:
        nodes.append(_node("TopK", ["h/logprobs", "h/k"], ["h/top_logprobs_all", "h/top_ids_all"], axis=-1))
    nodes += [
        _node("Gather", ["h/logprobs", "h/eos"], ["h/eos_logprobs_all"], axis=2),
        _node("Gather", ["h/top_logprobs_all", "h/last"], [bf.TOP_LOGPROBS], axis=1),
        _node("Gather", ["h/top_ids_all", "h/last"], [bf.TOP_IDS], axis=1),
        _node("Gather", ["h/eos_logprobs_all", "h/last"], [bf.EOS_LOGPROB], axis=1),
    ]
    graph.node.extend(nodes)
    graph.initializer.extend(numpy_helper.from_array(np.array(v, dtype=np.int64), f"h/{name}")
                             for name, v in constants.items())
    graph.output.extend([
        helper.make_tensor_value_info(bf.TOP_LOGPROBS, TensorProto.FLOAT, ["rows", k]),
        helper.make_tensor_value_info(bf.TOP_IDS, TensorProto.INT64, ["rows", k]),
        helper.make_tensor_value_info(bf.EOS_LOGPROB, TensorProto.FLOAT, ["rows"]),
    ])
    onnx.save(model, str(path))
    how = f"two-stage TopK({k}) over {vocab_size // block} blocks of {block}" if block else f"TopK({k})"
    return [f"search head: LogSoftmax + {how} of the last position in the graph "
            f"({bf.TOP_LOGPROBS}, {bf.TOP_IDS}, {bf.EOS_LOGPROB})"]


def _two_stage_top_k(vocab_size: int, k: int, block: int) -> tuple[list, dict]:
    """TopK over the best k blocks' tokens only. ONNX Runtime's TopK is slow (over [128, 16000] it
    takes ~7x a max pass), so: the max of each block of `block` tokens, the k blocks with the
    largest maxima, then TopK over their k * block tokens. Exact: a token of the top k lies in one
    of those blocks, since any other block has a maximum below k blocks' maxima, that is, below k
    distinct better tokens (of two equal log-probs at the k-th place, either may be kept). Decoder
    step 0.82-0.86x of one TopK's at 32-128 rows, the same at batch 1 (PERF_NOTES.md)."""
    nodes = [
        _node("Reshape", ["h/logprobs", "h/blocks_shape"], ["h/blocks"]),                          # [B,T,V/b,b]
        _node("ReduceMax", ["h/blocks", "h/last_axis"], ["h/block_max"], keepdims=0),             # [B,T,V/b]
        _node("TopK", ["h/block_max", "h/k"], ["h/best_block_max", "h/best_blocks"], axis=-1),    # [B,T,k]
        _node("Unsqueeze", ["h/best_blocks", "h/last_axis"], ["h/best_blocks_index"]),             # [B,T,k,1]
        _node("GatherND", ["h/blocks", "h/best_blocks_index"], ["h/candidates"], batch_dims=2),   # [B,T,k,b]
        _node("Reshape", ["h/candidates", "h/candidates_shape"], ["h/candidates_flat"]),           # [B,T,k*b]
        _node("TopK", ["h/candidates_flat", "h/k"], ["h/top_logprobs_all", "h/position"], axis=-1),  # [B,T,k]
        # token id = best_blocks[position // b] * b + position % b
        _node("Div", ["h/position", "h/block"], ["h/slot"]),
        _node("GatherElements", ["h/best_blocks", "h/slot"], ["h/block_of_top"], axis=-1),
        _node("Mul", ["h/block_of_top", "h/block"], ["h/block_start"]),
        _node("Mod", ["h/position", "h/block"], ["h/offset"]),
        _node("Add", ["h/block_start", "h/offset"], ["h/top_ids_all"]),
    ]
    constants = {"blocks_shape": [0, 0, vocab_size // block, block], "last_axis": [-1],
                 "candidates_shape": [0, 0, k * block], "block": block}
    return nodes, constants


def _node(op: str, inputs: list[str], outputs: list[str], **attributes):
    """A head node. Its tensors are named h/... so that they cannot clash with the decoder's own."""
    return helper.make_node(op, inputs, outputs, name=f"search_head/{outputs[-1]}", **attributes)
