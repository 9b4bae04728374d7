"""Shape arithmetic that the model's fixed sizes decide, folded into constants.

The tracer computes every size from `Shape` at run time, also those the model fixes: the split
points of the fused q/k/v projection (from d_model), the attention scale (from head_dim), a head
reshape's last two dims. Each is a chain of small kernels run at every call, and at batch 1 a
kernel costs about as much as it computes: the int8 graphs of the shipped model ran 519 kernels
per encoder call and 276 per decoder step, a third of them such chains (benchmarks/PERF_NOTES.md).

Here every value that follows from constants and the dims symbolic shape inference knows is
evaluated once (by ONNX's reference evaluator) and stored as an initializer. Sizes that truly vary
(batch, length) stay, and `Unsqueeze(Gather(Shape(x), i))` becomes one `Shape(x, start=i, end=i+1)`.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from .graph_tools import constant_values, drop_dead_nodes, inferred_dims, producers

MAX_ELEMENTS = 64     # only shape-sized values are folded, never a weight or a table
# Deterministic ops that shape arithmetic uses; any other op is left to run.
FOLDABLE = {"Add", "Sub", "Mul", "Div", "Neg", "Sqrt", "Reciprocal", "Cast", "Gather", "Slice", "Concat",
            "Unsqueeze", "Squeeze", "Reshape", "Range", "Equal", "Where", "Max", "Min", "ReduceProd"}
# Ops evaluated on partly known 1-D shape vectors (None = known only at run time).
PARTIAL = {"Shape", "Gather", "Slice", "Concat", "Unsqueeze", "Squeeze"}


def fold_static_shapes(model: onnx.ModelProto) -> list[str]:
    """Fold the model's static shape arithmetic in place; returns what was done, for config.json."""
    graph = model.graph
    dims = inferred_dims(model)
    if dims is None:
        return ["static shape arithmetic: not folded (symbolic shape inference failed)"]
    known = constant_values(graph, MAX_ELEMENTS)
    partial: dict[str, np.ndarray] = {}          # object arrays, None where only run time knows
    folded = []
    for node in graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "Constant":      # already in `known`, if small
            continue
        value = _evaluate(node, known, partial, dims)
        if value is None:
            continue
        if value.dtype == object and any(v is None for v in value.flat):
            partial[node.output[0]] = value
        elif value.size <= MAX_ELEMENTS:
            known[node.output[0]] = value.astype(np.int64) if value.dtype == object else value
            folded.append(node)
    before = len(graph.node)
    for node in folded:
        graph.node.remove(node)
        graph.initializer.append(numpy_helper.from_array(known[node.output[0]], node.output[0]))
    sliced = _shape_slices(graph, known)
    drop_dead_nodes(graph)          # and the folded values nothing reads
    if before == len(graph.node):
        return []
    return [f"static shape arithmetic folded: {len(folded)} values computed once, {sliced} x Shape(start, end) "
            f"for a run-time dim ({before} -> {len(graph.node)} nodes)"]


def _evaluate(node, known: dict, partial: dict, dims: dict) -> np.ndarray | None:
    """The node's single output if it follows from what is known (an object array if only in part)."""
    if len(node.output) != 1:
        return None
    inputs = [name for name in node.input if name]
    if node.op_type in FOLDABLE and all(name in known for name in inputs):
        feeds = {name: known[name] for name in inputs}
        try:
            return np.asarray(ReferenceEvaluator(node).run(None, feeds)[0])
        except Exception:     # an op form the reference evaluator lacks: leave it to run time
            return None
    if node.op_type not in PARTIAL:
        return None
    if node.op_type == "Shape":
        shape = dims.get(node.input[0])
        if shape is None:
            return None
        attrs = {a.name: a.i for a in node.attribute}
        shape = shape[attrs.get("start", 0):attrs.get("end", len(shape))]
        return np.array([d if isinstance(d, int) and d > 0 else None for d in shape], dtype=object)
    data = partial.get(node.input[0])
    others = [known.get(name) for name in node.input[1:] if name]
    if data is None or any(o is None for o in others):
        return None
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "Gather" and attrs.get("axis", 0) == 0 and data.ndim == 1:
        return np.array(np.take(data, others[0]), dtype=object)
    if node.op_type == "Slice" and data.ndim == 1 and all(int(np.prod(o.shape)) == 1 for o in others):
        start, end, *rest = (int(o.reshape(-1)[0]) for o in others)
        step = rest[1] if len(rest) > 1 else 1
        return data[start:end:step]
    if node.op_type == "Unsqueeze" and data.ndim == 0 and list(others[0].reshape(-1)) in ([0], [-1]):
        return data.reshape(1)
    if node.op_type == "Squeeze" and data.shape == (1,):
        return data.reshape(())
    if node.op_type == "Concat" and attrs.get("axis") == 0:
        parts = [partial.get(name, known.get(name)) for name in node.input]
        if any(p is None or np.ndim(p) != 1 for p in parts):
            return None
        return np.concatenate([np.asarray(p, dtype=object) for p in parts])
    return None


def _shape_slices(graph, known: dict) -> int:
    """Unsqueeze(Gather(Shape(x), i), [0]) -> Shape(x, start=i, end=i+1): one kernel instead of three."""
    producer = producers(graph)
    replaced = 0
    for node in list(graph.node):
        if node.op_type != "Unsqueeze" or list(known.get(node.input[1], np.array([1])).reshape(-1)) != [0]:
            continue
        gather = producer.get(node.input[0])
        if gather is None or gather.op_type != "Gather" or any(a.name == "axis" and a.i for a in gather.attribute):
            continue
        index, shape = known.get(gather.input[1]), producer.get(gather.input[0])
        if index is None or index.ndim != 0 or shape is None or shape.op_type != "Shape" or shape.attribute:
            continue
        i = int(index)
        ends = {"end": i + 1} if i != -1 else {}
        graph.node.insert(list(graph.node).index(node), helper.make_node(
            "Shape", [shape.input[0]], list(node.output), name=f"{node.output[0]}/shape_slice", start=i, **ends))
        graph.node.remove(node)
        replaced += 1
    return replaced
