"""The fp16 variant of the (optimized) fp32 graphs, for CUDA. (int8 is export/int8.py.)"""

from __future__ import annotations

from pathlib import Path

import onnx
from onnxruntime.transformers.float16 import convert_float_to_float16


def convert_fp16(path: Path, out_path: Path) -> list[str]:
    """fp16 weights, activations, caches and outputs (inputs src_ids/src_mask/tgt_ids keep their types).

    The runtime reads the cache dtype from the decoder's past_key_0 input, so it feeds fp16 caches
    and casts the fp16 logits to fp32 for the search. Ops on the converter's block list (here only
    Range, which makes position indices) stay fp32 behind inserted Casts.
    """
    model = onnx.load(str(path))
    model = convert_float_to_float16(model, keep_io_types=False)
    onnx.save(model, str(out_path))
    return ["onnxruntime.transformers.float16.convert_float_to_float16 (keep_io_types=False): fp16 weights, "
            "activations, caches and logits"]
