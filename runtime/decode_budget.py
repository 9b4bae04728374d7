"""How much one decode holds at once, by default: kept apart from batching.py, which needs numpy,
so that the command-line help can state it without loading numpy."""

from __future__ import annotations

# The default budget of one decode: padded source tokens and rows (sentences x beam) in flight, across
# the parallel batches. Both bound memory: the KV cache grows with rows x length, and the vocabulary-wide
# activations of every step (about 0.4 MB a row at 16k pieces) with rows. On the int8 CPU graphs the
# smaller budget lowered mt-bench's peak RSS on the Zen 5 from 141-151 to 117-120 MB (under CTranslate2's)
# and a 300-line file's greedy peak from 227-255 to 140-143 MB, for 3-8% of beam throughput (both budgets
# in the same mt-bench runs: `ort-int8-64`). It cost the fp32 graphs, whose larger GEMMs gain from more
# rows, 12-33% of theirs, so they keep the larger one (PERF_NOTES.md, session 24).
BUDGET = (4096, 64)              # (max_tokens, max_sentences)
INT8_BUDGET = (1024, 32)


def default_budget(variant: str) -> tuple[int, int]:
    return INT8_BUDGET if variant == "int8" else BUDGET
