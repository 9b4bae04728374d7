"""The edge bundle that ships in `models/`: int8 graphs for the CPU, plus the checkpoint in half
precision so the fp32/fp16 graphs can be rebuilt and parity re-run on this exact model.

The int8 graphs are exported from the half-precision weights (cast back to fp32), so the shipped
checkpoint, the shipped graphs and any rebuilt fp32 graphs all describe the same model. The fp32
graphs themselves are dropped to keep `models/` small; parity.json keeps their parity figures.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from mtkit.runtime import bundle_format as bf
from mtkit.train.checkpoint import load_checkpoint

from .api import BundleReport, export_bundle
from .bundle import check_target, writing

SHIPPED_CHECKPOINT = "checkpoint.fp16.pt"


def half_precision_checkpoint(source: Path, dest: Path) -> None:
    """The weights in fp16 with everything export needs; no optimizer or RNG state."""
    ckpt = load_checkpoint(source)
    halves = {}  # tied weights (embeddings, output layer) share one tensor: keep it shared
    ckpt.model = {k: halves.setdefault(v.data_ptr(), v.half() if v.is_floating_point() else v)
                  for k, v in ckpt.model.items()}
    ckpt.resume, ckpt.shipped_from = None, str(source)
    ckpt.save(dest)


def ship_bundle(checkpoint: Path, out: Path, force: bool = False, **export_options) -> BundleReport:
    """Export the edge bundle to `out`. Its changes to the exported bundle are made in the staging
    directory, so the one rename that puts it in place is atomic, as a plain export's is."""
    out = Path(out)
    check_target(out, archive=False, force=force)  # before the scratch directory next to it
    with writing(out):
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".mt-ship-", dir=out.parent) as scratch:
            half = Path(scratch) / SHIPPED_CHECKPOINT
            half_precision_checkpoint(Path(checkpoint), half)

            def edge_bundle(staging: Path, config: bf.BundleConfig) -> None:
                """The fp32 graphs out (parity has run on them), the checkpoint in: moved, not copied (the
                export has read it), which a nearly full disk can take."""
                fp32 = config.variants.pop("fp32")
                for graph in ("encoder", "decoder"):
                    (staging / fp32[graph]).unlink()
                os.replace(half, staging / SHIPPED_CHECKPOINT)
                config.provenance["checkpoint"] = SHIPPED_CHECKPOINT   # exported from the bundle's own copy (same sha256)
                config.extra["shipped"] = {
                    "checkpoint": SHIPPED_CHECKPOINT,
                    "dropped_variants": ["fp32"],
                    "rebuild": f"mt-export {out.name}/{SHIPPED_CHECKPOINT} --quantize int8 --fp16 -o {out.name}-full",
                }

            return export_bundle(half, out, quantize="int8", force=force, edit=edge_bundle, **export_options)
