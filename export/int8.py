"""Batch-invariant int8: int8 weights, activations quantized per row, integer GEMMs.

ONNX Runtime's dynamic quantization (DynamicQuantizeLinear) gives each activation tensor ONE
scale, so the other sentences of a batch and their padding change every row's rounding: a
sentence's translation would depend on its batch (issue 16). Here every MatMul with a constant weight
becomes, from standard ONNX ops:

    scale = max(|x| over the row) / 127                 one scale per row: [.., 1]
    xq    = QuantizeLinear(x / scale, 1, 128)           uint8, zero point 128
    y     = float(MatMulInteger(xq, Wq, 128)) * w_scale * scale

Wq is int8 per output channel (w_scale [N]). A row's result depends on that row alone, and the
integer accumulation is exact, so a row gives the same bits in any batch. x / scale is shared by
every MatMul that reads the same x (q, k and v).

u8 x s8 on AVX2 without VNNI runs through vpmaddubsw, which adds pairs of products into int16 and
saturates (255 * 127 * 2 > 32767). Weights therefore use 7 bits ([-64, 64]; the pair sum stays
<= 255 * 64 * 2 = 32640), like ORT's `reduce_range`. Checked on an AMD EPYC (Zen 3, AVX2): with
weights in [-127, 127] and large activations every output of ORT's MatMulInteger was wrong (by up
to 1.4e5); with [-64, 64] all exact (tests/test_export.py checks this on the machine it runs on).

Measured on the shipped de-en weights (benchmarks/PERF_NOTES.md): 64 / 64 newstest2013 sentences the
same alone and batched (greedy and beam 4; the dynamic int8 before: 32 / 64), speed no lower than
the dynamic int8's, beam-4 BLEU on 200 news sentences 10.90 against fp32's 11.05.

The token embedding (and a tied output projection) is stored once, as int8 E^T [D, V] with one
scale per token: the output projection multiplies by it, and each input embedding is a
Gather(E^T, ids, axis=1) dequantized by that token's scale. Tables equal in both graphs go to one
external data file that the encoder and decoder both reference (`SHARED_FILE`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, external_data_helper, helper, numpy_helper

from .graph_tools import drop_dead_nodes, producers

WEIGHT_LEVELS = 64            # |Wq| <= 64: no int16 saturation in u8 x s8 pair sums (see above)
ACTIVATION_LEVELS = 127       # x / scale in [-127, 127], + 128 -> [1, 255]
SHARED_FILE = "embedding.int8.bin"
MIN_SCALE = 1e-12             # an all-zero row (after ReLU) must not divide by zero
SHARE_MIN_BYTES = 4096       # initializers this large and in both graphs are stored once
EXTERNAL_ALIGN = 4096         # tables start on a page: ONNX Runtime can map them


def quantize_columns(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 [K,N] and float32 scale [N]: symmetric, one scale per output column."""
    amax = np.abs(weight).max(axis=0).astype(np.float32)
    scale = np.maximum(amax, MIN_SCALE) / WEIGHT_LEVELS
    q = np.clip(np.rint(weight / scale), -WEIGHT_LEVELS, WEIGHT_LEVELS).astype(np.int8)
    return q, scale.astype(np.float32)


class _Rewriter:
    """Rewrites one graph; `tables` (shared across graphs) maps a table's bytes to its int8 name."""

    def __init__(self, model: onnx.ModelProto, tables: dict):
        self.model = model
        self.graph = model.graph
        self.inits = {i.name: i for i in self.graph.initializer}
        self.producer = producers(self.graph)
        self.tables = tables
        self.quantized_inputs: dict[str, tuple[str, str]] = {}     # x -> (xq, row scale)
        self.new_inits: list = []
        self.counts = {"matmul": 0, "gather": 0}

    def const(self, name: str, value) -> str:
        if name not in self.inits:
            tensor = numpy_helper.from_array(np.asarray(value), name)
            self.inits[name] = tensor
            self.new_inits.append(tensor)
        return name

    def array(self, name: str) -> np.ndarray | None:
        """A constant 2-D float tensor: an initializer, or the Transpose of one (a tied output layer)."""
        if name in self.inits:
            a = numpy_helper.to_array(self.inits[name])
        elif name in self.producer and self.producer[name].op_type == "Transpose" \
                and self.producer[name].input[0] in self.inits:
            a = numpy_helper.to_array(self.inits[self.producer[name].input[0]]).T
        else:
            return None
        return a if a.ndim == 2 and a.dtype == np.float32 else None

    def table(self, weight_kn: np.ndarray) -> tuple[str, str]:
        """int8 [K,N] + scale [N] for a vocabulary-sized weight, shared by content across graphs."""
        key = weight_kn.tobytes()
        if key not in self.tables:
            q, scale = quantize_columns(weight_kn)
            name = f"int8/table_{len(self.tables)}"
            self.tables[key] = (name, q, scale)
        name, q, scale = self.tables[key]
        self.const(name, q)
        self.const(f"{name}/scale", scale)
        return name, f"{name}/scale"

    def quantize_input(self, x: str) -> tuple[list, str, str]:
        if x in self.quantized_inputs:
            return [], *self.quantized_inputs[x]
        p = f"int8/{x}"
        nodes = [
            helper.make_node("Abs", [x], [f"{p}/abs"]),
            helper.make_node("ReduceMax", [f"{p}/abs", self.const("int8/last_axis", np.array([-1], np.int64))],
                             [f"{p}/amax"], keepdims=1),
            helper.make_node("Max", [f"{p}/amax", self.const("int8/min_amax", np.float32(MIN_SCALE))],
                             [f"{p}/amax_safe"]),
            helper.make_node("Mul", [f"{p}/amax_safe", self.const("int8/per_level", np.float32(1 / ACTIVATION_LEVELS))],
                             [f"{p}/scale"]),
            helper.make_node("Div", [x, f"{p}/scale"], [f"{p}/scaled"]),
            helper.make_node("QuantizeLinear", [f"{p}/scaled", self.const("int8/one", np.float32(1.0)),
                                                self.const("int8/zero_point", np.uint8(128))], [f"{p}/q"]),
        ]
        self.quantized_inputs[x] = (f"{p}/q", f"{p}/scale")
        return nodes, f"{p}/q", f"{p}/scale"

    def matmul(self, node, weight: np.ndarray, vocab_size: int) -> list:
        if weight.shape[1] == vocab_size:
            wq, wscale = self.table(weight)
        else:
            q, scale = quantize_columns(weight)
            wq = self.const(f"int8/{node.name or node.output[0]}/w", q)
            wscale = self.const(f"{wq}/scale", scale)
        nodes, xq, xscale = self.quantize_input(node.input[0])
        p = f"int8/{node.output[0]}"
        nodes += [
            helper.make_node("MatMulInteger", [xq, wq, "int8/zero_point"], [f"{p}/acc"]),
            helper.make_node("Cast", [f"{p}/acc"], [f"{p}/acc_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{p}/acc_f", wscale], [f"{p}/cols"]),
            helper.make_node("Mul", [f"{p}/cols", xscale], [node.output[0]]),
        ]
        self.counts["matmul"] += 1
        return nodes

    def gather(self, node, table: np.ndarray) -> list:
        """Embedding lookup from the transposed int8 table: Gather(axis=1) -> [D,B,T] -> [B,T,D]."""
        tq, tscale = self.table(np.ascontiguousarray(table.T))
        ids, p = node.input[1], f"int8/{node.output[0]}"
        self.counts["gather"] += 1
        return [
            helper.make_node("Gather", [tq, ids], [f"{p}/cols"], axis=1),
            helper.make_node("Transpose", [f"{p}/cols"], [f"{p}/rows"], perm=[1, 2, 0]),
            helper.make_node("Cast", [f"{p}/rows"], [f"{p}/rows_f"], to=TensorProto.FLOAT),
            helper.make_node("Gather", [tscale, ids], [f"{p}/token_scale"], axis=0),
            helper.make_node("Unsqueeze", [f"{p}/token_scale", "int8/last_axis"], [f"{p}/token_scale_col"]),
            helper.make_node("Mul", [f"{p}/rows_f", f"{p}/token_scale_col"], [node.output[0]]),
        ]

    def run(self, vocab_size: int) -> None:
        new_nodes = []
        for node in self.graph.node:
            if node.op_type == "MatMul" and (w := self.array(node.input[1])) is not None:
                new_nodes += self.matmul(node, w, vocab_size)
            elif node.op_type == "Gather" and node.input[0] in self.inits and \
                    (t := self.array(node.input[0])) is not None and t.shape[0] == vocab_size and \
                    not any(a.name == "axis" and a.i != 0 for a in node.attribute):
                new_nodes += self.gather(node, t)
            else:
                new_nodes.append(node)
        del self.graph.node[:]
        self.graph.node.extend(new_nodes)
        self.graph.initializer.extend(self.new_inits)
        drop_dead_nodes(self.graph)   # and the float weights, tied Transposes


def _constants_to_initializers(graph) -> None:
    """Large Constant nodes (the sinusoidal position table) become initializers, so they can be
    shared, in float16 with a Cast back to float32 (ONNX Runtime folds it at load): an error below
    5e-4 on values within [-1, 1], far under the int8 rounding, and 128 KB less per table."""
    for node in [n for n in graph.node if n.op_type == "Constant"]:
        value = next((a.t for a in node.attribute if a.name == "value"), None)
        array = numpy_helper.to_array(value) if value is not None else None
        if array is None or array.nbytes < SHARE_MIN_BYTES:
            continue
        index = list(graph.node).index(node)
        graph.node.remove(node)
        if array.dtype == np.float32:
            half = f"{node.output[0]}/fp16"
            graph.initializer.append(numpy_helper.from_array(array.astype(np.float16), half))
            graph.node.insert(index, helper.make_node("Cast", [half], [node.output[0]], to=TensorProto.FLOAT))
        else:
            graph.initializer.append(numpy_helper.from_array(array, node.output[0]))


def _write_shared(models: dict, path: Path) -> None:
    """Every vocabulary table, and every other large initializer found in more than one graph, goes
    once into `path` (page-aligned raw bytes); the graphs reference it as external data."""
    by_content: dict[bytes, list] = {}
    for model in models.values():
        for init in model.graph.initializer:
            if len(init.raw_data) >= SHARE_MIN_BYTES:
                by_content.setdefault(init.data_type.to_bytes(4, "little") + init.raw_data, []).append(init)
    blob = bytearray()
    for inits in by_content.values():
        if len(inits) < 2 and not inits[0].name.startswith("int8/table_"):
            continue
        blob += b"\0" * (-len(blob) % EXTERNAL_ALIGN)
        offset, length = len(blob), len(inits[0].raw_data)
        blob += inits[0].raw_data
        for init in inits:
            external_data_helper.set_external_data(init, SHARED_FILE, offset=offset, length=length)
            init.data_location = TensorProto.EXTERNAL
            init.ClearField("raw_data")
    path.write_bytes(bytes(blob))


def _compact_names(graph) -> None:
    """Short names for nodes and inner tensors (the exporter's are ~60 characters, used 3 times each:
    about 100 KB per graph). Graph inputs, outputs and shared initializers keep theirs."""
    keep = {v.name for v in (*graph.input, *graph.output)} | \
           {i.name for i in graph.initializer if i.data_location == TensorProto.EXTERNAL}
    names: dict[str, str] = {}

    def short(name: str) -> str:
        if not name or name in keep:
            return name
        return names.setdefault(name, f"t{len(names)}")

    for init in graph.initializer:
        init.name = short(init.name)
    for i, node in enumerate(graph.node):
        node.name = f"n{i}"
        node.input[:] = [short(n) for n in node.input]
        node.output[:] = [short(n) for n in node.output]
    del graph.value_info[:]


def quantize_rowwise(sources: dict[str, Path], targets: dict[str, Path], vocab_size: int) -> dict[str, list[str]]:
    """Write int8 copies of the fp32 graphs `sources` ({"encoder": path, "decoder": path}) to `targets`.

    Vocabulary tables are written once into SHARED_FILE next to the targets (page-aligned, raw int8)
    and referenced by both graphs as external data. Returns each graph's record for config.json."""
    tables: dict = {}
    models, records = {}, {}
    for graph, path in sources.items():
        model = onnx.load(str(path))
        _constants_to_initializers(model.graph)
        rewriter = _Rewriter(model, tables)
        rewriter.run(vocab_size)
        models[graph] = model
        records[graph] = [f"int8 (export/int8.py): {rewriter.counts['matmul']} x MatMul as MatMulInteger with int8 "
                          f"weights ({WEIGHT_LEVELS * 2 + 1} levels, per output channel) and activations quantized "
                          "per row; batch-invariant",
                          f"int8 vocabulary table(s) in {SHARED_FILE}: {rewriter.counts['gather']} x embedding "
                          "Gather from the transposed table, dequantized per token"]
    _write_shared(models, Path(next(iter(targets.values()))).parent / SHARED_FILE)
    for graph, model in models.items():
        _compact_names(model.graph)
        onnx.save(model, str(targets[graph]))
    return records
