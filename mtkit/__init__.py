"""mtkit: an offline machine-translation toolkit (train, export, runtime, TUI)."""

import os

__version__ = "0.1.0"

# ONNX Runtime's Linux wheels (1.32) start Microsoft's telemetry when imported: a device id and an event
# store under ~/.cache/Microsoft, uploaded when the network allows. An offline translator sends nothing.
# Set here, before any part of mtkit imports onnxruntime; a value the user set stays theirs.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
