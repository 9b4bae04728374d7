"""Encoder outputs of newstest2013 lines 1-32, each alone and in one padded batch: equal bit for bit?

    python encdiff.py DATA_DIR FP32_BUNDLE     # the shipped int8 model, then the fp32 graphs of its weights
    python encdiff.py DATA_DIR --same-pad      # int8, each sentence alone padded to the batch's length
"""
import gzip
import platform
import sys

import numpy as np

from mtkit.runtime import Translator
from mtkit.runtime.batching import pad_batch
from mtkit.runtime.vocab import PAD_ID, source_ids

same_pad = sys.argv[2] == "--same-pad"
lines = [l.rstrip("\n") for l in gzip.open(f"{sys.argv[1]}/news/newstest2013.de.gz", "rt")][:32]
for path, variant in ((None, "int8"),) if same_pad else ((None, "int8"), (sys.argv[2], "fp32")):
    t = Translator(path, threads=1, variant=variant)
    tag = t.tag_id("en")
    sources = [source_ids(t.tokenizer.encode(s), tag, 256) for s in lines]
    ids, mask = pad_batch(sources)
    batched = t.backend.start(ids, mask).cross
    differ, worst = 0, 0.0
    for i, s in enumerate(sources):
        a_ids = np.full((1, ids.shape[1] if same_pad else len(s)), PAD_ID, dtype=np.int64)
        a_ids[0, :len(s)] = s
        alone = t.backend.start(a_ids, a_ids != PAD_ID).cross
        d = max(float(np.abs(alone[k][0][..., :len(s), :] - batched[k][i][..., :len(s), :]).max()) for k in alone)
        differ += d > 0
        worst = max(worst, d)
    print(platform.machine(), variant, "alone padded to the batch's length" if same_pad else "alone",
          f"{differ}/32 sentences whose encoder output (cross K/V) differs from batched; max |diff| {worst:.3g}")
