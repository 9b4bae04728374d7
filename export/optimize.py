"""ONNX Runtime's transformer fusions on the exported graphs, with an honest record of what applied.

`onnxruntime.transformers.optimizer` runs with opt_level=0: only its Python pattern fusions,
which write standard ONNX plus com.microsoft contrib ops that both the CPU and the CUDA provider
implement, so one optimized graph serves every provider. (ORT's own graph optimizations still
run at session creation; saving their result offline would tie the file to one provider.)
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnxruntime.transformers import optimizer
from onnxruntime.transformers.fusion_options import FusionOptions

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
