"""Length-sorted batching for inference: similar lengths decode together, results come back in input order."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .search import DecodeOptions, DecoderBackend, Result, decode
from .vocab import PAD_ID


def length_batches(lengths: list[int], max_tokens: int, max_sentences: int) -> Iterator[list[int]]:
    """Indices grouped by similar length, each group within `max_tokens` padded tokens."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batch: list[int] = []
    for i in order:
        if batch and (len(batch) + 1 > max_sentences or lengths[i] * (len(batch) + 1) > max_tokens):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


def pad_batch(sequences: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    ids = np.full((len(sequences), max(len(s) for s in sequences)), PAD_ID, dtype=np.int64)
    for row, s in enumerate(sequences):
        ids[row, : len(s)] = s
    return ids, ids != PAD_ID


def decode_all(backend: DecoderBackend, sources: list[list[int]], opts: DecodeOptions,
               max_tokens: int = 4096, max_sentences: int = 64) -> list[Result]:
    """Decode every source (encoder ids) and return the results in input order."""
    results: list[Result | None] = [None] * len(sources)
    beam = max(opts.beam_size, 1)
    for batch in length_batches([len(s) for s in sources], max_tokens // beam, max(max_sentences // beam, 1)):
        src_ids, src_mask = pad_batch([sources[i] for i in batch])
        for i, result in zip(batch, decode(backend, src_ids, src_mask, opts)):
            results[i] = result
    return results
