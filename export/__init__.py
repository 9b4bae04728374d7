"""Checkpoint -> self-contained model bundle (ONNX graphs, tokenizer, config.json, parity report)."""

from .api import BundleReport, default_output, export_bundle
from .bundle import ExportError
from .parity import ParityError

__all__ = ["BundleReport", "ExportError", "ParityError", "default_output", "export_bundle"]
