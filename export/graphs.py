"""The two ONNX graphs of a bundle, traced from train/model.py's Transformer.

The wrappers below only call `model.encode`, `model.cross_kv` and `model.decode` and flatten their
tensors into the names of `bundle_format.tensor_names`, so the graphs compute exactly the math
that training used. The graph I/O contract is in runtime/bundle_format.py's docstring.

The TorchScript exporter (`torch.onnx.export(..., dynamo=False)`) traces them: the dynamo exporter
needs onnxscript, which is not among mtkit's dependencies. The example sizes (B=2, S=5, T=3, P=4)
avoid 0 and 1 so that no dimension can be folded into a constant: torch.export specialises example
dimensions of size 0 or 1 ("0/1 specialization"), so tracing the first step (P = 0) or a one-token
step (T = 1) with dynamic dims fails ("Constraints violated (past_len)" / "(new_len)").
"""

from __future__ import annotations

import warnings
from pathlib import Path

import torch
from torch import nn

from mtkit.runtime import bundle_format as bf
from mtkit.train.model import Transformer

from .bundle import ExportError

DEFAULT_OPSET = 18

# Example sizes for tracing: deliberately not 0 or 1 so no dimension can be specialised.
EXAMPLE_BATCH, EXAMPLE_SRC, EXAMPLE_TGT, EXAMPLE_PAST = 2, 5, 3, 4
EXAMPLE_ROWS_PER_SENTENCE = 2


class EncoderGraph(nn.Module):
    """src_ids, src_mask -> encoder_out, cross_key_0, cross_value_0, cross_key_1, ..."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self, src_ids, src_mask):
        memory = self.model.encode(src_ids, src_mask)
        cross = self.model.cross_kv(memory)
        return (memory, *[t for kv in cross for t in kv])


class DecoderGraph(nn.Module):
    """One decoder step graph for every step: tgt_ids, src_mask, past k/v (P may be 0), cross k/v
    -> logits, present k/v, cross_attention."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model
        self.layers = model.cfg.decoder_layers

    def forward(self, tgt_ids, src_mask, *caches):
        n = self.layers
        past = [(caches[2 * i], caches[2 * i + 1]) for i in range(n)]
        cross = [(caches[2 * n + 2 * i], caches[2 * n + 2 * i + 1]) for i in range(n)]
        logits, presents, weights = self.model.decode(tgt_ids, src_mask, cross, past)
        return (logits, *[t for kv in presents for t in kv], weights)


def example_inputs(model: Transformer) -> tuple[tuple, tuple]:
    """Encoder and decoder example inputs, with padding in the second source row. The decoder's
    have two target rows per sentence (beams sharing the sentence's cross keys and values)."""
    cfg = model.cfg
    b, s, t, p = EXAMPLE_BATCH, EXAMPLE_SRC, EXAMPLE_TGT, EXAMPLE_PAST
    g = torch.Generator().manual_seed(0)
    src_ids = torch.randint(4, cfg.vocab_size, (b, s), generator=g)
    src_mask = torch.ones(b, s, dtype=torch.bool)
    src_mask[1, -2:] = False
    src_ids[~src_mask] = 0
    rows = EXAMPLE_ROWS_PER_SENTENCE * b
    tgt_ids = torch.randint(4, cfg.vocab_size, (rows, t), generator=g)
    shape_past = (rows, cfg.n_heads, p, cfg.head_dim)
    shape_cross = (b, cfg.n_heads, s, cfg.head_dim)
    past = [torch.randn(shape_past, generator=g) for _ in range(2 * cfg.decoder_layers)]
    cross = [torch.randn(shape_cross, generator=g) for _ in range(2 * cfg.decoder_layers)]
    return (src_ids, src_mask), (tgt_ids, src_mask, *past, *cross)


def dynamic_axes(layers: int) -> tuple[dict, dict]:
    """Every dimension but heads, head dim and vocab is dynamic."""
    names = bf.tensor_names(layers)
    enc = {bf.SRC_IDS: {0: "batch", 1: "src_len"}, bf.SRC_MASK: {0: "batch", 1: "src_len"},
           bf.ENCODER_OUT: {0: "batch", 1: "src_len"}}
    for n in names["encoder"]["outputs"][1:]:
        enc[n] = {0: "batch", 2: "src_len"}
    # The decoder's rows and its sentences (src_mask, cross) are separate axes: one name for both
    # would let shape inference fold rows = sentences into the cross-attention's reshapes.
    dec = {bf.TGT_IDS: {0: "rows", 1: "new_len"}, bf.SRC_MASK: {0: "sentences", 1: "src_len"},
           bf.LOGITS: {0: "rows", 1: "new_len"}, bf.CROSS_ATTENTION: {0: "rows", 1: "new_len", 2: "src_len"}}
    for i in range(layers):
        dec[bf.past_key(i)] = dec[bf.past_value(i)] = {0: "rows", 2: "past_len"}
        dec[bf.cross_key(i)] = dec[bf.cross_value(i)] = {0: "sentences", 2: "src_len"}
        dec[bf.present_key(i)] = dec[bf.present_value(i)] = {0: "rows", 2: "total_len"}
    return enc, dec


def export_graphs(model: Transformer, out_dir: Path, opset: int = DEFAULT_OPSET) -> dict[str, Path]:
    """Write fp32 encoder.onnx and decoder.onnx into `out_dir`; returns {"encoder": path, "decoder": path}."""
    model = model.eval()
    layers = model.cfg.decoder_layers
    names = bf.tensor_names(layers)
    enc_axes, dec_axes = dynamic_axes(layers)
    enc_args, dec_args = example_inputs(model)
    paths = {g: Path(out_dir) / bf.graph_file(g, "fp32") for g in ("encoder", "decoder")}
    # .eval() on the wrappers too: the exporter restores each wrapper's training flag afterwards,
    # and restoring a fresh (training) wrapper would switch the wrapped model's dropout back on.
    jobs = [("encoder", EncoderGraph(model).eval(), enc_args, enc_axes),
            ("decoder", DecoderGraph(model).eval(), dec_args, dec_axes)]
    for graph, module, args, axes in jobs:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer warnings about Python ints from .size() are expected
            try:
                torch.onnx.export(
                    module, args, str(paths[graph]),
                    input_names=names[graph]["inputs"], output_names=names[graph]["outputs"],
                    dynamic_axes=axes, opset_version=opset, do_constant_folding=True, dynamo=False,
                )
            except OSError:         # a full disk: worded as every write of the export (bundle.writing)
                raise
            except Exception as e:  # the exporter's errors (unsupported opset, op) are not the user's bug to trace
                raise ExportError(f"torch.onnx.export of the {graph} at opset {opset} failed "
                                  f"({type(e).__name__}: {str(e).strip().splitlines()[0][:300]})") from None
    model.eval()
    return paths
