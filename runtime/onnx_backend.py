"""ONNX Runtime as a decoder backend for `search.py`: the encoder runs once per batch, the decoder
once per step with the KV cache fed back in."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnxruntime as ort

from . import bundle_format as bf
from .bundle_format import BundleConfig


@dataclass
class OnnxState:
    src_mask: np.ndarray
    cross: dict[str, np.ndarray]     # cross_key_i / cross_value_i, computed once
    past: dict[str, np.ndarray]      # past_key_i / past_value_i, grows by one position a step


class OnnxBackend:
    def __init__(self, encoder: ort.InferenceSession, decoder: ort.InferenceSession, config: BundleConfig):
        self.encoder = encoder
        self.decoder = decoder
        self.layers = config.decoder_layers
        self.heads = config.n_heads
        self.head_dim = config.head_dim
        # fp16 graphs take fp16 caches: read the dtype from the graph rather than assume it.
        past_type = {i.name: i.type for i in decoder.get_inputs()}[bf.past_key(0)]
        self.cache_dtype = np.float16 if "float16" in past_type else np.float32
        self.cross_names = [n for i in range(self.layers) for n in (bf.cross_key(i), bf.cross_value(i))]
        self.past_names = [n for i in range(self.layers) for n in (bf.past_key(i), bf.past_value(i))]
        self.present_names = [n for i in range(self.layers) for n in (bf.present_key(i), bf.present_value(i))]

    def start(self, src_ids: np.ndarray, src_mask: np.ndarray) -> OnnxState:
        outputs = self.encoder.run(self.cross_names, {bf.SRC_IDS: src_ids.astype(np.int64, copy=False),
                                                      bf.SRC_MASK: src_mask.astype(bool, copy=False)})
        empty = np.zeros((src_ids.shape[0], self.heads, 0, self.head_dim), dtype=self.cache_dtype)
        return OnnxState(src_mask.astype(bool, copy=False), dict(zip(self.cross_names, outputs)),
                         {name: empty for name in self.past_names})

    def step(self, state: OnnxState, tokens: np.ndarray, need_attention: bool = False):
        feeds = {bf.TGT_IDS: tokens.astype(np.int64, copy=False).reshape(-1, 1), bf.SRC_MASK: state.src_mask,
                 **state.past, **state.cross}
        names = [bf.LOGITS, *self.present_names] + ([bf.CROSS_ATTENTION] if need_attention else [])
        outputs = self.decoder.run(names, feeds)
        state.past = dict(zip(self.present_names, outputs[1:1 + len(self.present_names)]))
        attention = outputs[-1][:, -1].astype(np.float32) if need_attention else None
        return outputs[0][:, -1].astype(np.float32, copy=False), attention

    def select(self, state: OnnxState, rows: np.ndarray) -> None:
        state.src_mask = state.src_mask[rows]
        state.cross = {k: v[rows] for k, v in state.cross.items()}
        state.past = {k: v[rows] for k, v in state.past.items()}
