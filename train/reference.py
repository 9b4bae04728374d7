"""The PyTorch model as a decoder backend for `mtkit.runtime.search`: the reference the ONNX
runtime is checked against, and the decoder used for dev BLEU and `mt-eval` on checkpoints."""

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


def checkpoint_translator(path, provider: str = "cpu", threads: int | None = None):
    """A runtime `Translator` whose decoder is a checkpoint's PyTorch model: the same search and
    pre/post-processing as a bundle, so checkpoint and bundle scores compare directly (mt-eval).
    Raises CheckpointError for an unusable checkpoint, TranslationError when CUDA is asked for
    but torch sees none."""
    import sentencepiece as spm

    from mtkit.runtime.bundle_format import BundleConfig
    from mtkit.runtime.errors import TranslationError
    from mtkit.runtime.translator import Translator
    from mtkit.runtime.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID

    from .checkpoint import load_model

    ckpt, model = load_model(path)
    if provider == "cuda" and not torch.cuda.is_available():
        raise TranslationError("--provider cuda: torch sees no CUDA device")
    device = "cuda" if provider != "cpu" and torch.cuda.is_available() else "cpu"
    if threads:
        torch.set_num_threads(threads)
    cfg = model.cfg
    config = BundleConfig(vocab_size=cfg.vocab_size, d_model=cfg.d_model, n_heads=cfg.n_heads, head_dim=cfg.head_dim,
                          encoder_layers=cfg.encoder_layers, decoder_layers=cfg.decoder_layers,
                          max_positions=cfg.max_positions,
                          special_ids={"pad": PAD_ID, "unk": UNK_ID, "bos": BOS_ID, "eos": EOS_ID},
                          language_tags={k: int(v) for k, v in ckpt["language_tags"].items()},
                          directions=[list(d) for d in ckpt.get("directions", [])], variants={})
    tokenizer = spm.SentencePieceProcessor(model_proto=ckpt["tokenizer_model"])
    return Translator.from_backend(TorchBackend(model.to(device), device), tokenizer, config, path,
                                   provider=device, variant="pytorch")
