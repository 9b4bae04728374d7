"""ONNX Runtime's transformer fusions on the exported graphs, with an honest record of what applied.

`onnxruntime.transformers.optimizer` runs with opt_level=0: only its Python pattern fusions,
which write standard ONNX plus com.microsoft contrib ops that both the CPU and the CUDA provider
implement, so one optimized graph serves every provider. (ORT's own graph optimizations still
run at session creation; saving their result offline would tie the file to one provider: the runtime
caches it per machine instead, see runtime/onnx_backend.py.)

Rewrites of our own follow, each measured in benchmarks/PERF_NOTES.md and run in order by
`rewrite_for_runtime`: attention scores as one FusedMatMul (`fuse_attention_scores`), the static shape
arithmetic folded (static_shapes.py), constant Reshape shapes (`constant_reshapes`) and attention
masks without NaN guards (`drop_softmax_nan_guards`).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnxruntime.transformers import optimizer
from onnxruntime.transformers.fusion_options import FusionOptions

from . import static_shapes
from .graph_tools import constant_values, drop_dead_nodes, inferred_dims, producers

# Fusions worth recording, with the reason one may find nothing to fuse in this model.
RECORDED = {
    "SkipLayerNormalization": "fused residual Add + LayerNormalization",
    "LayerNormalization": "LayerNormalization without a residual (exported as one op at opset 17+)",
    "Attention": "fused self-attention",
    "MultiHeadAttention": "fused multi-head attention",
    "Gelu": "fused GELU",
    "FastGelu": "fused GELU (tanh approximation)",
    "BiasGelu": "fused bias + GELU",
}


def optimize_graph(path: Path, out_path: Path, num_heads: int, hidden_size: int, activation: str) -> list[str]:
    """Fuse `path` into `out_path`; returns the list of optimizations applied or ruled out, for config.json."""
    logging.getLogger("onnxruntime.transformers").setLevel(logging.ERROR)  # its INFO chatter is not for users
    options = FusionOptions("bert")
    model = optimizer.optimize_model(str(path), model_type="bert", num_heads=num_heads, hidden_size=hidden_size,
                                     optimization_options=options, opt_level=0, use_gpu=False)
    stats = model.get_fused_operator_statistics()
    model.save_model_to_file(str(out_path))  # also adds the com.microsoft opset import for fused ops
    before = len(onnx.load(str(path), load_external_data=False).graph.node)
    after = len(model.model.graph.node)
    record = [f"onnxruntime.transformers.optimizer (opt_level=0, model_type=bert): {before} -> {after} nodes"]
    for op, what in RECORDED.items():
        if stats.get(op):
            record.append(f"{what}: {stats[op]} x {op}")
    if not (stats.get("Attention") or stats.get("MultiHeadAttention")):
        record.append("attention fusion: not applicable (ORT does not match the masked "
                      "scaled_dot_product_attention pattern of this export; attention stays MatMul/Softmax)")
    if activation == "relu":
        record.append("GELU fusion: not applicable (the model uses ReLU)")
    elif not any(stats.get(op) for op in ("Gelu", "FastGelu", "BiasGelu")):
        record.append("GELU fusion: no pattern matched")
    return record


def share_tied_embedding(path: Path) -> list[str]:
    """Store a tied embedding once. The tracer folds `lm_head.weight.T` into a second initializer
    (a full vocab x d_model copy); replace that copy with a Transpose of the embedding table.
    ONNX Runtime constant-folds the Transpose when it loads the graph, so steps pay nothing.

    Applied to fp32/fp16 files only: int8 quantization needs the output weight as an initializer.
    """
    model = onnx.load(str(path))
    graph = model.graph
    arrays = {init.name: numpy_helper.to_array(init) for init in graph.initializer if len(init.dims) == 2}
    by_shape: dict[tuple, list[str]] = {}
    for name, array in arrays.items():
        by_shape.setdefault(array.shape, []).append(name)
    replaced = []
    # Replace the tracer's anonymous folded copy ("onnx::MatMul_..."), keep the named parameter.
    for name, array in sorted(arrays.items(), key=lambda item: not item[0].startswith("onnx::")):
        for other in by_shape.get(array.shape[::-1], []):
            if other != name and other not in replaced and name not in (r[1] for r in replaced) \
                    and array.shape[0] != array.shape[1] and np.array_equal(array, arrays[other].T):
                replaced.append((name, other))
                break
    if not replaced:
        return []
    for copy, original in replaced:
        graph.initializer.remove(next(i for i in graph.initializer if i.name == copy))
        # The Transpose writes the old initializer name, so every consumer stays as it is.
        graph.node.insert(0, helper.make_node("Transpose", [original], [copy], name=f"{copy}/tied_transpose",
                                              perm=[1, 0]))
    onnx.save(model, str(path))
    return [f"tied embedding stored once: {copy} is now Transpose({original}) instead of a copy "
            f"({arrays[copy].nbytes / 1e6:.1f} MB saved; ONNX Runtime folds it at load)" for copy, original in replaced]


def rewrite_for_runtime(path: Path, head_dim: int) -> list[str]:
    """Our own rewrites of an fp32 graph after `optimize_graph`, in order, in place (one load, one
    save); what each did, for config.json."""
    model = onnx.load(str(path))
    records = (fuse_attention_scores(model, head_dim) + static_shapes.fold_static_shapes(model)
               + constant_reshapes(model) + drop_softmax_nan_guards(model))
    if records:
        onnx.save(model, str(path))
    return records


def fuse_attention_scores(model: onnx.ModelProto, head_dim: int) -> list[str]:
    """Compute attention scores as one FusedMatMul(q, k, alpha=1/sqrt(head_dim)).

    The exporter decomposes `F.scaled_dot_product_attention` into MatMul(q * sqrt(s), k^T * sqrt(s)),
    with s = 1/sqrt(head_dim) computed from shapes at run time. For the decoder's self-attention
    that transposes and scales the whole KV cache at every step, and the cross-attention does the
    same to the cross keys: ~20% of a beam-search step (benchmarks/PERF_NOTES.md). FusedMatMul
    reads k transposed in place (transB) where k^T is a Transpose of the last two axes, and scales
    the (much smaller) product instead. The encoder's k^T comes straight from the head split
    ([B,S,H,Dh] -> [B,H,Dh,S]); there only the scaling goes. The scores change by float rounding
    only (max logit difference ~3e-6 on the Multi30k model).
    """
    graph = model.graph
    producer = producers(graph)
    fused = 0
    for node in list(graph.node):
        if node.op_type != "MatMul":
            continue
        q_mul, k_mul = (producer.get(name) for name in node.input)
        if not (q_mul is not None and k_mul is not None and q_mul.op_type == k_mul.op_type == "Mul"):
            continue
        q_scale, k_scale, k_t = producer.get(q_mul.input[1]), producer.get(k_mul.input[1]), producer.get(k_mul.input[0])
        # Both factors are the same sqrt(scale) of the exporter's scaled_dot_product_attention.
        if not (q_scale is not None and k_scale is not None and q_scale.op_type == k_scale.op_type == "Sqrt"
                and q_scale.input[0] == k_scale.input[0]):
            continue
        swaps_last_axes = k_t is not None and k_t.op_type == "Transpose" and \
            [list(a.ints) for a in k_t.attribute if a.name == "perm"] == [[0, 1, 3, 2]]
        k = k_t.input[0] if swaps_last_axes else k_mul.input[0]
        replacement = helper.make_node("FusedMatMul", [q_mul.input[0], k], list(node.output),
                                       name=f"{node.name}/fused_scores", domain="com.microsoft",
                                       transA=0, transB=int(swaps_last_axes), alpha=1.0 / float(np.sqrt(head_dim)))
        graph.node.insert(list(graph.node).index(node), replacement)
        graph.node.remove(node)
        fused += 1
    if not fused:
        return []
    # Drop what only fed the replaced MatMuls (the Transposes, Muls and the scale's shape arithmetic).
    before = len(graph.node)
    drop_dead_nodes(graph)
    if not any(op.domain == "com.microsoft" for op in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return [f"attention scores: {fused} x FusedMatMul(q, k) with the scale inside instead of scaling q and k "
            f"at every call ({before} -> {len(graph.node)} nodes)"]


def drop_softmax_nan_guards(model: onnx.ModelProto) -> list[str]:
    """Fill masked attention scores with float32's lowest finite value, and drop the NaN guards.

    For a boolean mask the exporter adds -inf to masked scores and, since a row masked throughout
    would be NaN, follows every softmax with Where(IsNaN(p), 0, p): two kernels per attention at
    every call. With a finite fill, a row with one unmasked key gets the same weights (the masked
    ones underflow to exactly 0) and a row masked throughout a finite one, so the guard has nothing
    left to catch. The runtime never sends such a row: every source holds its language tag and EOS.
    """
    graph = model.graph
    producer = producers(graph)
    constants = constant_values(graph, max_elements=1)
    fill = "finite_mask_fill"
    renamed: dict[str, str] = {}
    for guard in graph.node:
        if guard.op_type != "Where":
            continue
        is_nan, probs = producer.get(guard.input[0]), guard.input[2]
        softmax = producer.get(probs)
        if not (is_nan is not None and is_nan.op_type == "IsNaN" and is_nan.input[0] == probs
                and softmax is not None and softmax.op_type == "Softmax"):
            continue
        add = producer.get(softmax.input[0])
        masks = [producer.get(name) for name in add.input] if add is not None and add.op_type == "Add" else []
        mask = next((m for m in masks if m is not None and m.op_type == "Where"), None)
        # -inf, or the fill already (a mask another guard's softmax shares)
        minus_inf = [i for i, name in enumerate(mask.input) if i and (name == fill or name in constants
                     and constants[name].size == 1 and constants[name].item() == -np.inf)] if mask else []
        if not minus_inf:
            continue
        if not renamed:
            graph.initializer.append(numpy_helper.from_array(np.array(np.finfo(np.float32).min, np.float32), fill))
        mask.input[minus_inf[0]] = fill
        renamed[guard.output[0]] = probs
    if not renamed:
        return []
    for node in graph.node:
        for i, name in enumerate(node.input):
            node.input[i] = renamed.get(name, name)
    before = len(graph.node)
    drop_dead_nodes(graph)
    return [f"attention masks filled with a finite value: {len(renamed)} softmax NaN guards dropped "
            f"({before} -> {len(graph.node)} nodes)"]


def constant_reshapes(model: onnx.ModelProto) -> list[str]:
    """Give every Reshape a constant target shape where shape inference can tell it.

    The tracer computes each head split / merge shape at run time (Shape -> Gather -> Unsqueeze ->
    Concat, ~7 small kernels per Reshape). With the shapes known symbolically, a constant like
    [0, 0, 4, 64] (0 = keep that input dim) says the same, so the shape arithmetic goes: 358 -> 226
    decoder nodes on the Multi30k model, identical outputs, ~9% faster greedy steps at batch 1.
    """
    graph = model.graph
    shapes = inferred_dims(model)
    if shapes is None:   # the graph still works as it is; record why it was left alone
        return ["constant Reshape shapes: not applied (symbolic shape inference failed)"]
    constants = {i.name for i in graph.initializer}
    changed = 0
    for node in graph.node:
        if node.op_type != "Reshape" or node.input[1] in constants:
            continue
        if any(a.name == "allowzero" and a.i for a in node.attribute):
            continue                      # 0 would mean an empty dimension, not "keep"
        src, out = shapes.get(node.input[0]), shapes.get(node.output[0])
        if not src or not out or None in src or None in out:
            continue
        # A known size stays; a symbolic one equal to the input's at that axis is 0 ("keep"); one more is -1.
        target = [d if isinstance(d, int) and d > 0 else 0 if i < len(src) and src[i] == d else -1
                  for i, d in enumerate(out)]
        if target.count(-1) > 1:
            continue
        name = f"{node.output[0]}/constant_shape"
        graph.initializer.append(numpy_helper.from_array(np.array(target, dtype=np.int64), name))
        node.input[1] = name
        changed += 1
    if not changed:
        return []
    before = len(graph.node)
    drop_dead_nodes(graph)
    return [f"constant Reshape shapes: {changed} x Reshape without run-time shape arithmetic "
            f"({before} -> {len(graph.node)} nodes)"]
