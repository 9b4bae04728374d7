"""Checkpoint -> self-contained model bundle (ONNX graphs, tokenizer, config.json, parity report).

The public names load lazily, so `mt-export --help` (mtkit.export.cli) does not import torch.
"""

_EXPORTS = {"BundleReport": "api", "default_output": "api", "export_bundle": "api", "ExportError": "bundle",
            "ParityError": "parity"}

__all__ = list(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
