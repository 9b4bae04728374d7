"""Our checkpoint as a CTranslate2 model, built with CTranslate2's own spec API.

Every option of `ModelConfig` maps onto `TransformerSpec`:

    pre_norm True/False        pre_norm (CT2 adds the final encoder/decoder norms only for pre-norm,
                               as our model does)
    fused self-attention qkv   self_attention.linear[0]; `out` is linear[1]
    cross-attention q / kv     attention.linear[0] / linear[1] (k and v fused, in that order); out linear[2]
    sqrt(d_model) scaling      scale_embeddings = True
    sinusoidal / learned       position_encodings.encodings = our table, row i = position i (from 0)
    tied embeddings            the same array for both embeddings and the projection: CT2 stores it once
    lm_head without bias       projection.bias left unset
    relu / gelu (erf)          Activation.RELU / Activation.GELU
    nn.LayerNorm eps 1e-5      config.layer_norm_epsilon

CT2's own sinusoidal table (used when `encodings` is left unset) has our layout (sines first, then
cosines, timescales 10000^(i/(half-1))) but starts at position 1 (the OpenNMT convention), where
ours starts at 0: left to itself CT2 would shift every position by one (tests/test_ct2.py shows the
scores differ). So we always write our own table (or the learned one) into the spec.

Inputs must be what our runtime feeds the encoder (`vocab.source_ids`): the target-language tag,
the pieces, then EOS. CT2 adds nothing itself when `add_source_bos`/`add_source_eos` are off (the
default, and we set them explicitly), so `source_tokens` writes the tag and `</s>` by hand.
Decoding starts from `<s>` (`decoder_start_token`), as ours does.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import sentencepiece as spm
from ctranslate2.converters import Converter
from ctranslate2.specs import common_spec, transformer_spec

from mtkit.runtime.vocab import BOS_PIECE, EOS_PIECE, UNK_PIECE

from .ct2_run import INFO_FILE, TOKENIZER_FILE

LAYER_NORM_EPS = 1e-5                  # torch.nn.LayerNorm's default, used by train/model.py
ACTIVATIONS = {"relu": common_spec.Activation.RELU, "gelu": common_spec.Activation.GELU}


class MtkitConverter(Converter):
    """`ctranslate2.converters.Converter` for an mtkit `Checkpoint` (train/checkpoint.py)."""

    def __init__(self, checkpoint, tokenizer_path: Path, info_path: Path | None = None,
                 use_our_positions: bool = True):
        self.ckpt = checkpoint
        self.tokenizer_path = Path(tokenizer_path)
        self.info_path = info_path                  # ct2_run.INFO_FILE to copy into the model dir
        self.use_our_positions = use_our_positions  # False only to show that CT2's own table differs

    def _load(self) -> transformer_spec.TransformerSpec:
        from mtkit.train.model import sinusoidal_table   # torch: conversion only

        cfg = self.ckpt.model_config
        if cfg.activation not in ACTIVATIONS:
            raise NotImplementedError(f"activation {cfg.activation!r} has no CTranslate2 equivalent")
        weights = {k: v.detach().float().cpu().numpy() for k, v in self.ckpt.model.items()}

        spec = transformer_spec.TransformerSpec.from_config(
            (cfg.encoder_layers, cfg.decoder_layers), cfg.n_heads, pre_norm=cfg.pre_norm,
            activation=ACTIVATIONS[cfg.activation])
        if cfg.positions == "learned":
            positions = weights["positions.weight"]
        else:
            positions = sinusoidal_table(cfg.max_positions, cfg.d_model).numpy()

        source_embed = weights["embed.weight"]
        target_embed = source_embed if cfg.tie_embeddings else weights["target_embed.weight"]
        output = target_embed if cfg.tie_embeddings else weights["lm_head.weight"]
        spec.encoder.embeddings[0].weight = source_embed      # a list: CT2 allows source factors
        spec.decoder.embeddings.weight = target_embed
        spec.decoder.projection.weight = output
        for side in (spec.encoder, spec.decoder):
            side.scale_embeddings = True
            if self.use_our_positions:
                side.position_encodings.encodings = positions

        for i, layer in enumerate(spec.encoder.layer):
            p = f"encoder_layers.{i}."
            set_linear(layer.self_attention.linear[0], weights, p + "self_attn.qkv")
            set_linear(layer.self_attention.linear[1], weights, p + "self_attn.out")
            set_norm(layer.self_attention.layer_norm, weights, p + "attn_block.norm")
            set_ffn(layer.ffn, weights, p)
        for i, layer in enumerate(spec.decoder.layer):
            p = f"decoder_layers.{i}."
            set_linear(layer.self_attention.linear[0], weights, p + "self_attn.qkv")
            set_linear(layer.self_attention.linear[1], weights, p + "self_attn.out")
            set_norm(layer.self_attention.layer_norm, weights, p + "self_block.norm")
            set_linear(layer.attention.linear[0], weights, p + "cross_attn.q")
            set_linear(layer.attention.linear[1], weights, p + "cross_attn.kv")
            set_linear(layer.attention.linear[2], weights, p + "cross_attn.out")
            set_norm(layer.attention.layer_norm, weights, p + "cross_block.norm")
            set_ffn(layer.ffn, weights, p)
        if cfg.pre_norm:
            set_norm(spec.encoder.layer_norm, weights, "encoder_norm")
            set_norm(spec.decoder.layer_norm, weights, "decoder_norm")

        vocab = pieces(self.tokenizer_path)
        if len(vocab) != cfg.vocab_size:
            raise ValueError(f"{self.tokenizer_path}: {len(vocab)} pieces but the model has {cfg.vocab_size} embeddings")
        spec.register_source_vocabulary(vocab)
        spec.register_target_vocabulary(vocab)
        spec.register_file(str(self.tokenizer_path), TOKENIZER_FILE)
        if self.info_path is not None:
            spec.register_file(str(self.info_path), INFO_FILE)
        spec.config.unk_token, spec.config.bos_token, spec.config.eos_token = UNK_PIECE, BOS_PIECE, EOS_PIECE
        spec.config.decoder_start_token = BOS_PIECE
        spec.config.add_source_bos = False
        spec.config.add_source_eos = False
        spec.config.layer_norm_epsilon = LAYER_NORM_EPS
        return spec


def set_linear(spec, weights: dict, name: str) -> None:
    spec.weight = weights[name + ".weight"]          # [out, in], CT2's layout too
    if name + ".bias" in weights:
        spec.bias = weights[name + ".bias"]


def set_norm(spec, weights: dict, name: str) -> None:
    spec.gamma = weights[name + ".weight"]
    spec.beta = weights[name + ".bias"]


def set_ffn(spec, weights: dict, prefix: str) -> None:
    set_linear(spec.linear_0, weights, prefix + "ffn.fc1")
    set_linear(spec.linear_1, weights, prefix + "ffn.fc2")
    set_norm(spec.layer_norm, weights, prefix + "ffn_block.norm")


def pieces(tokenizer_path: Path) -> list[str]:
    """The SentencePiece pieces in id order: CT2's vocabulary, so CT2 ids are our ids."""
    sp = spm.SentencePieceProcessor(model_file=str(tokenizer_path))
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())]


def convert(ckpt, output_dir: Path, quantization: str | None = None, use_our_positions: bool = True,
            checkpoint_sha256: str | None = None) -> Path:
    """Write a CTranslate2 model directory for a loaded `Checkpoint`, replacing any previous one.
    `quantization` is CT2's weight type ("int8", "float32", ...; None keeps fp32). An int8 model
    can also be had from an fp32 directory at load time with compute_type="int8".
    `checkpoint_sha256`, the source file's, is recorded so that mt-bench can tell its conversions apart."""
    output_dir = Path(output_dir)
    work = output_dir.with_name(output_dir.name + ".tmp")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        tokenizer = work / "source.model"
        tokenizer.write_bytes(ckpt.tokenizer_model)
        info = work / "info.json"
        info.write_text(json.dumps({"max_positions": ckpt.model_config.max_positions,
                                    "language_tags": dict(ckpt.language_tags),
                                    "quantization": quantization or "float32",
                                    "checkpoint_sha256": checkpoint_sha256}, indent=2) + "\n", encoding="utf-8")
        converted = work / "model"
        MtkitConverter(ckpt, tokenizer, info, use_our_positions).convert(str(converted), quantization=quantization,
                                                                         force=True)
        shutil.rmtree(output_dir, ignore_errors=True)
        converted.rename(output_dir)      # a half-written directory never takes the final name
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return output_dir


def convert_checkpoint(checkpoint_path: Path, output_dir: Path, quantization: str | None = None) -> Path:
    """`convert` for an mtkit checkpoint file (.pt)."""
    from mtkit.runtime.checksums import file_sha256
    from mtkit.train.checkpoint import load_checkpoint   # torch: conversion only

    return convert(load_checkpoint(checkpoint_path), output_dir, quantization,
                   checkpoint_sha256=file_sha256(checkpoint_path))


def main(argv: list[str] | None = None) -> None:
    """python -m mtkit.benchmarks.ct2_convert CHECKPOINT OUT_DIR [--quantization int8]"""
    import argparse
    import sys

    from mtkit.train.checkpoint import CheckpointError

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("output_dir", type=Path)
    parser.add_argument("--quantization", default=None, help="CT2 weight type: int8, float32, float16, ...")
    args = parser.parse_args(argv)
    try:
        out = convert_checkpoint(args.checkpoint, args.output_dir, args.quantization)
    except (CheckpointError, ValueError, NotImplementedError) as e:
        sys.exit(f"error: {e}")
    print(out)


if __name__ == "__main__":
    main()
