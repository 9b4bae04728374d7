"""Evaluation on the dev set during training: loss over the references, and BLEU of translations
made by the one checkpoint translator (`reference.model_translator`), as mt-eval would make them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import sacrebleu
import torch

from mtkit.runtime.decode_options import DecodeOptions
from mtkit.runtime.vocab import source_ids

from .batching import collate, make_batches
from .data import Pair
from .model import Transformer
from .reference import model_translator


@dataclass
class EncodedSplit:
    src: list[np.ndarray]
    tgt: list[np.ndarray]
    refs: list[str]
    raw_src: list[str]
    tgt_langs: list[str]
    src_langs: list[str]

    @property
    def src_lens(self):
        return [len(s) for s in self.src]

    @property
    def tgt_lens(self):
        return [len(t) + 1 for t in self.tgt]

    def fingerprint(self) -> str:
        """The pairs' count and a hash of their token ids in order (what the batches are made of), for
        --resume to refuse training data that changed under a run."""
        digest = hashlib.sha256()
        for seqs in (self.src, self.tgt):
            digest.update(np.asarray([len(s) for s in seqs], dtype=np.int64).tobytes())
            if seqs:
                digest.update(np.concatenate(seqs).astype(np.int32).tobytes())
        return f"{len(self.src)} pairs, sha256 {digest.hexdigest()[:16]}"


def encode_pairs(sp, pairs: list[Pair], tag_ids: dict[str, int], max_len: int) -> EncodedSplit:
    src_pieces = sp.encode([p.src for p in pairs])
    tgt_pieces = sp.encode([p.tgt for p in pairs])
    src = [np.asarray(source_ids(s, tag_ids[p.tgt_lang], max_len), dtype=np.int32) for s, p in zip(src_pieces, pairs)]
    tgt = [np.asarray(t[: max_len - 1], dtype=np.int32) for t in tgt_pieces]
    return EncodedSplit(src, tgt, [p.tgt for p in pairs], [p.src for p in pairs], [p.tgt_lang for p in pairs],
                        [p.src_lang for p in pairs])


@torch.no_grad()
def dev_loss(model: Transformer, data: EncodedSplit, max_tokens: int, loss) -> float:
    """Per-token NLL of the references; `loss(batch, model)` is the training loop's."""
    model.eval()
    total, tokens = 0.0, 0
    for indices in make_batches(data.src_lens, data.tgt_lens, max_tokens, 0, 0):
        _, nll, n = loss(collate(data.src, data.tgt, indices), model)
        total += nll.item()
        tokens += n
    model.train()
    return total / max(tokens, 1)


def dev_bleu(model: Transformer, sp, data: EncodedSplit, tag_ids: dict[str, int], directions,
             max_sentences: int, beam_size: int, device) -> float:
    """BLEU of `model`'s translations of (at most `max_sentences` of) the dev sources."""
    n = min(len(data.src), max_sentences)
    # Evenly spaced, so a capped sample still covers every dev corpus and direction.
    picks = [i * len(data.src) // n for i in range(n)]
    translator = model_translator(model, sp, tag_ids, directions, device=device)
    hyps = {}
    for source, lang in sorted({(data.src_langs[i], data.tgt_langs[i]) for i in picks}):
        group = [i for i in picks if (data.src_langs[i], data.tgt_langs[i]) == (source, lang)]
        # The source language is known: no detection, and every sentence is translated, as in the loss.
        out = translator.translate([data.raw_src[i] for i in group], lang, DecodeOptions(beam_size=beam_size),
                                   from_lang=source, split_sentences=False)
        hyps.update(zip(group, (t.text for t in out)))
    model.train()
    return sacrebleu.corpus_bleu([hyps[i] for i in picks], [[data.refs[i] for i in picks]]).score
