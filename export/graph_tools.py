"""Small helpers every graph rewrite of mt-export uses: what a graph's constants and dims are, and
removing what a rewrite left unused."""

from __future__ import annotations

import contextlib
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


def producers(graph) -> dict:
    """The node that computes each tensor, by the tensor's name."""
    return {out: node for node in graph.node for out in node.output}


def constant_values(graph, max_elements: int) -> dict[str, np.ndarray]:
    """Initializers and Constant-node values of at most `max_elements` elements, by name."""
    values = {init.name: numpy_helper.to_array(init) for init in graph.initializer
              if int(np.prod(init.dims)) <= max_elements}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute[0].name == "value" \
                and int(np.prod(node.attribute[0].t.dims)) <= max_elements:
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values


def inferred_dims(model: onnx.ModelProto) -> dict[str, list] | None:
    """Every tensor's dims from ONNX Runtime's symbolic shape inference: an int where fixed, a
    symbol's name where it varies, None where unknown; None if the inference fails."""
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    try:
        # On failure it dumps the model into the working directory: let that be a temporary one.
        with tempfile.TemporaryDirectory() as scratch, contextlib.chdir(scratch):
            inferred = SymbolicShapeInference.infer_shapes(model, auto_merge=True, guess_output_rank=True)
    except Exception:
        return None
    shapes = {}
    for info in (*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output):
        dims = info.type.tensor_type.shape.dim
        shapes[info.name] = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in dims]
    return shapes


def drop_dead_nodes(graph) -> None:
    """Remove nodes none of whose outputs is used (by a node or as a graph output), then the
    initializers nothing reads any more."""
    outputs = {o.name for o in graph.output}
    while True:
        used = {name for node in graph.node for name in node.input} | outputs
        dead = [node for node in graph.node if not any(out in used for out in node.output)]
        if not dead:
            break
        for node in dead:
            graph.node.remove(node)
    for init in [i for i in graph.initializer if i.name not in used]:
        graph.initializer.remove(init)
