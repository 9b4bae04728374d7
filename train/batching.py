"""Token-based batching with length bucketing, reproducible from (seed, epoch) so a resumed run
sees exactly the batches it would have seen."""

from __future__ import annotations

import random

import numpy as np
import torch

from mtkit.runtime.vocab import BOS_ID, EOS_ID, PAD_ID


def make_batches(src_lens: list[int], tgt_lens: list[int], max_tokens: int, seed: int, epoch: int) -> list[list[int]]:
    """Group example indices into batches of at most `max_tokens` padded target (and source)
    tokens. Sorting by length keeps padding low; shuffling the batch order keeps training random."""
    rng = random.Random(seed * 100_003 + epoch)
    noise = [rng.random() for _ in src_lens]
    order = sorted(range(len(src_lens)), key=lambda i: (tgt_lens[i], src_lens[i], noise[i]))
    batches, current, longest = [], [], 0
    for i in order:
        longest_if_added = max(longest, src_lens[i], tgt_lens[i])
        if current and longest_if_added * (len(current) + 1) > max_tokens:
            batches.append(current)
            current, longest_if_added = [], max(src_lens[i], tgt_lens[i])
        current.append(i)
        longest = longest_if_added
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches


def pad(seqs: list, before: tuple[int, ...] = (), after: tuple[int, ...] = ()) -> torch.Tensor:
    """[len(seqs), longest] int64: each row `before` + the sequence + `after`, then PAD_ID. One numpy
    scatter, not a tensor per row: ~5x quicker, which matters once a GPU waits for it every step."""
    if before or after:
        seqs = [np.concatenate([before, s, after]) for s in seqs]
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    out = np.full((len(seqs), int(lengths.max())), PAD_ID, dtype=np.int64)
    out[np.arange(out.shape[1]) < lengths[:, None]] = np.concatenate(seqs)
    return torch.from_numpy(out)


def collate(src: list, tgt: list, indices: list[int]):
    """-> src_ids [B,S], src_mask [B,S], decoder input [B,T] (BOS + target), labels [B,T] (target + EOS)."""
    src_ids = pad([src[i] for i in indices])
    targets = [tgt[i] for i in indices]
    return src_ids, src_ids != PAD_ID, pad(targets, before=(BOS_ID,)), pad(targets, after=(EOS_ID,))
