"""Length-sorted batching for inference: similar lengths decode together, results come back in input order."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

from . import decode_cache
from .decode_budget import BUDGET
from .prefix import Prefix
from . import progress
from .repetition import Pieces
from .search import DecodeOptions, DecoderBackend, Result, decode
from .threads import run_in_threads
from .vocab import PAD_ID


# ONNX Runtime's Softmax and MatMul round with the padded length on Arm (on x86 they are exact), and
# per-row int8 turns that into a step of a level now and then: a sentence came out differently alone
# and batched. There a batch is padded to a multiple of this and holds one such bucket only, so a
# sentence has the same padded length alone and in any batch (benchmarks/RESULTS.md, "On Arm").
ARM_PAD_MULTIPLE = 16
PAD_MULTIPLE = ARM_PAD_MULTIPLE if os.uname().machine.lower() in ("aarch64", "arm64") else 1


def padded_length(length: int, pad_to: int = 1, most: int | None = None) -> int:
    """`length` rounded up to a multiple of `pad_to`, but not past `most` (the model's positions)."""
    rounded = -(-length // pad_to) * pad_to
    return max(length, min(rounded, most)) if most is not None else rounded


def length_batches(lengths: list[int], max_tokens: int, max_sentences: int,
                   buckets: list | None = None) -> Iterator[list[int]]:
    """Indices grouped by similar length, each group within `max_tokens` padded tokens. `buckets`: a key
    per index (on Arm, its padded widths), and a group holds one key only."""
    keys = buckets or [0] * len(lengths)
    order = sorted(range(len(lengths)), key=lambda i: (keys[i], lengths[i]))
    batch: list[int] = []
    for i in order:
        if batch and (len(batch) + 1 > max_sentences or lengths[i] * (len(batch) + 1) > max_tokens
                      or keys[i] != keys[batch[0]]):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


def pad_batch(sequences: list[list[int]], pad_to: int = 1, most: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    width = padded_length(max(len(s) for s in sequences), pad_to, most)
    ids = np.full((len(sequences), width), PAD_ID, dtype=np.int64)
    for row, s in enumerate(sequences):
        ids[row, : len(s)] = s
    return ids, ids != PAD_ID


def decode_all(backend: DecoderBackend, sources: list[list[int]], opts: DecodeOptions,
               max_tokens: int = BUDGET[0], max_sentences: int = BUDGET[1], parallel_batches: int = 1,
               pieces: Pieces | None = None, prefixes: list[Prefix | None] | None = None,
               pad_to: int = 1, most: int | None = None) -> list[Result]:
    """Decode every source (encoder ids) and return the results in input order. `pieces`: the
    vocabulary, so that the loop ban sees words (repetition.py); `prefixes`, one per source (None:
    none), what each output must start with (prefix.py).

    With `parallel_batches` > 1, that many batches decode at once, in threads: ONNX Runtime releases
    the GIL while it runs, and a decoder step's kernels are too small to keep every core busy from
    one batch. Each batch then gets that share of the token and row budget, so the rows in flight,
    and the memory their caches take, stay as with one batch at a time.

    A source given more than once (a subtitle's "Yes.", a page's menu) is decoded once and its result
    shared, except when sampling without a seed, where each is its own draw (with one, a sentence's
    samples depend on it alone: search.row_draws).

    `pad_to`: pad each batch to a multiple of it, up to `most` positions, with one such length a batch
    (PAD_MULTIPLE: on Arm, for batch invariance)."""
    prefixes = prefixes or [None] * len(sources)
    if not opts.sampling or opts.seed is not None:
        unique: dict[tuple, int] = {}
        index = [unique.setdefault((tuple(s), p), len(unique)) for s, p in zip(sources, prefixes)]
        if len(unique) < len(sources):
            decoded_once = decode_all(backend, [list(s) for s, _ in unique], opts, max_tokens, max_sentences,
                                      parallel_batches, pieces, [p for _, p in unique], pad_to, most)
            return [decoded_once[i] for i in index]
    results: list[Result | None] = [None] * len(sources)
    todo = list(range(len(sources)))
    if (cache := decode_cache.active(opts)) is not None:          # an interrupted run's sentences, kept
        for i, result in cache.lookup(sources, prefixes, opts).items():
            results[i] = result
        todo = [i for i in todo if results[i] is None]
    rows = max(opts.num_hypotheses if opts.sampling else opts.beam_size, 1)      # a sentence's rows
    if (report := progress.reporter()) is not None:
        report(0, len(todo))

    def run(batch: list[int]) -> list[Result]:
        batch = [todo[j] for j in batch]
        src_ids, src_mask = pad_batch([sources[i] for i in batch], pad_to, most)
        decoded = decode(backend, src_ids, src_mask, opts, pieces, [prefixes[i] for i in batch])
        if cache is not None:           # as soon as decoded, on this batch's thread: a stop costs one batch
            cache.keep([sources[i] for i in batch], [prefixes[i] for i in batch], opts, decoded)
        if report is not None:
            report(len(batch), 0)
        return decoded

    widths = [padded_length(len(sources[i]), pad_to, most) for i in todo]
    for i, result in zip(todo, in_batches(run, widths, max_tokens // rows, max(max_sentences // rows, 1),
                                          parallel_batches, widths if pad_to > 1 else None)):
        results[i] = result
    return results


def in_batches(run, lengths: list[int], max_tokens: int, max_sentences: int, parallel_batches: int = 1,
               buckets: list | None = None) -> list:
    """`run(batch)` (a list of indices into `lengths`, giving one result per index) over length-sorted
    batches within `max_tokens` padded tokens and `max_sentences` items, `parallel_batches` of them at
    once in threads, each within its share of that budget; the results in input order. `buckets`: as
    `length_batches` takes them."""
    share = max(parallel_batches, 1)
    batches = list(length_batches(lengths, max_tokens // share, max(max_sentences // share, 1), buckets))
    if share > 1 and len(batches) > 1:
        done = run_in_threads(run, batches, min(share, len(batches)))
    else:
        done = map(run, batches)
    results: list = [None] * len(lengths)
    for batch, batch_results in zip(batches, done):
        for i, result in zip(batch, batch_results):
            results[i] = result
    return results
