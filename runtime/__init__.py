"""Torch-free runtime: ONNX Runtime + numpy + SentencePiece."""
