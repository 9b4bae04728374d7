"""A one-node ONNX graph, `output = Gather(data, indices, axis=0)`, written without the `onnx` package.

The IOBinding backend reorders the KV cache on the device it lives on (beam search does so every
step); ONNX Runtime has no tensor ops outside a graph, so we run this tiny graph. The runtime
must not depend on `onnx`, so the ModelProto is serialized here by hand: a few protobuf fields,
numbered as in onnx.proto (a test checks the bytes with `onnx.checker`).
"""

from __future__ import annotations

# TensorProto.DataType values.
FLOAT, INT64, FLOAT16 = 1, 7, 10


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int(field: int, value: int) -> bytes:         # wire type 0: varint
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:   # wire type 2: length-delimited
    value = value.encode() if isinstance(value, str) else value
    return _varint(field << 3 | 2) + _varint(len(value)) + value


def _tensor_value_info(name: str, elem_type: int, dims: list[str]) -> bytes:
    shape = b"".join(_bytes(1, _bytes(2, d)) for d in dims)               # TensorShapeProto.dim.dim_param
    tensor_type = _int(1, elem_type) + _bytes(2, shape)                   # TypeProto.Tensor
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))            # ValueInfoProto{name, type}


def gather_model(elem_type: int = FLOAT, rank: int = 4) -> bytes:
    """Serialized ModelProto (IR 8, opset 13) of `output = Gather(data, indices)` along axis 0."""
    node = _bytes(1, "data") + _bytes(1, "indices") + _bytes(2, "output") + _bytes(3, "gather") + _bytes(4, "Gather")
    graph = (_bytes(1, node) + _bytes(2, "select_rows")
             + _bytes(11, _tensor_value_info("data", elem_type, [f"d{i}" for i in range(rank)]))
             + _bytes(11, _tensor_value_info("indices", INT64, ["n"]))
             + _bytes(12, _tensor_value_info("output", elem_type, ["n"] + [f"d{i}" for i in range(1, rank)])))
    opset = _bytes(1, "") + _int(2, 13)
    return _int(1, 8) + _bytes(2, "mtkit") + _bytes(7, graph) + _bytes(8, opset)
