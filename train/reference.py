"""The PyTorch model as a decoder backend for `mtkit.runtime.search` (the reference the ONNX runtime
is checked against), and the one checkpoint translator built on it (dev BLEU, `mt-eval` and
`mt-bench` on checkpoints)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .model import Transformer


@dataclass
class TorchState:
    src_mask: torch.Tensor
    cross: list
    past: list | None = None
    prefix: torch.Tensor | None = None     # all tokens so far (no-cache mode only)


class TorchBackend:
    """`use_cache=False` is the tutorials' decoding: every step re-runs the decoder over the whole prefix."""

    def __init__(self, model: Transformer, device: str | torch.device = "cpu", use_cache: bool = True):
        self.model = model.eval()
        self.device = torch.device(device)
        self.use_cache = use_cache

    @torch.no_grad()
    def start(self, src_ids: np.ndarray, src_mask: np.ndarray) -> TorchState:
        ids = torch.from_numpy(np.ascontiguousarray(src_ids)).to(self.device)
        mask = torch.from_numpy(np.ascontiguousarray(src_mask)).to(self.device)
        memory = self.model.encode(ids, mask)
        return TorchState(mask, self.model.cross_kv(memory))

    @torch.no_grad()
    def step(self, state: TorchState, tokens: np.ndarray, need_attention: bool = False):
        new = torch.from_numpy(np.ascontiguousarray(tokens)).to(self.device)[:, None]
        if self.use_cache:
            logits, state.past, weights = self.model.decode(new, state.src_mask, state.cross, state.past)
        else:
            state.prefix = new if state.prefix is None else torch.cat([state.prefix, new], dim=1)
            logits, _, weights = self.model.decode(state.prefix, state.src_mask, state.cross)
        attention = weights[:, -1].float().cpu().numpy() if need_attention else None
        return logits[:, -1].float().cpu().numpy(), attention

    def select(self, state: TorchState, rows: np.ndarray) -> None:
        index = torch.from_numpy(np.ascontiguousarray(rows)).to(self.device)
        pick = lambda t: t.index_select(0, index)  # noqa: E731
        state.src_mask = pick(state.src_mask)
        state.cross = [(pick(k), pick(v)) for k, v in state.cross]
        if state.past is not None:
            state.past = [(pick(k), pick(v)) for k, v in state.past]
        if state.prefix is not None:
            state.prefix = pick(state.prefix)


def model_translator(model: Transformer, tokenizer, language_tags: dict[str, int], directions, path="",
                     device: str | torch.device = "cpu", use_cache: bool = True, **batching):
    """The one checkpoint translator: a runtime `Translator` whose decoder is this PyTorch model, so
    text goes through the same search and pre/post-processing as with a bundle and the scores
    compare directly. Used for the trainer's dev BLEU, mt-eval on checkpoints and mt-bench's
    PyTorch engines. `batching`: the Translator's max_batch_tokens / max_batch_sentences."""
    from mtkit.runtime.translator import Translator

    from .checkpoint import bundle_config

    device = torch.device(device)
    config = bundle_config(model.cfg, language_tags, directions)
    return Translator.from_backend(TorchBackend(model.to(device), device, use_cache), tokenizer, config, path,
                                   provider=device.type, variant="pytorch", **batching)


def checkpoint_translator(path, provider: str = "cpu", threads: int | None = None, use_cache: bool = True,
                          **batching):
    """`model_translator` for a checkpoint file. Raises CheckpointError for an unusable checkpoint,
    TranslationError when CUDA is asked for but torch sees none."""
    import sentencepiece as spm

    from mtkit.runtime.errors import TranslationError

    from .checkpoint import load_model

    ckpt, model = load_model(path)
    if provider == "cuda" and not torch.cuda.is_available():
        raise TranslationError("--provider cuda: torch sees no CUDA device")
    device = "cuda" if provider != "cpu" and torch.cuda.is_available() else "cpu"
    if threads:
        torch.set_num_threads(threads)
    tokenizer = spm.SentencePieceProcessor(model_proto=ckpt.tokenizer_model)
    return model_translator(model, tokenizer, ckpt.language_tags, ckpt.directions, path, device, use_cache,
                            **batching)
