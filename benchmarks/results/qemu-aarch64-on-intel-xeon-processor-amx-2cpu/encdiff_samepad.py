"""Like encdiff.py, but each sentence alone is padded to the batch's length: does the padded length
alone decide the encoder's rounding on Arm?

    python encdiff_samepad.py DATA_DIR
"""
import gzip, platform, sys
import numpy as np
from mtkit.runtime import Translator
from mtkit.runtime.batching import pad_batch
from mtkit.runtime.vocab import PAD_ID, source_ids
lines = [l.rstrip("\n") for l in gzip.open(f"{sys.argv[1]}/news/newstest2013.de.gz", "rt")][:32]
t = Translator(None, threads=1, variant="int8")
tag = t.tag_id("en")
sources = [source_ids(t.tokenizer.encode(s), tag, 256) for s in lines]
ids, mask = pad_batch(sources)
batched = t.backend.start(ids, mask).cross
differ, worst = 0, 0.0
for i, s in enumerate(sources):
    a_ids = np.full((1, ids.shape[1]), PAD_ID, dtype=np.int64)
    a_ids[0, :len(s)] = s
    alone = t.backend.start(a_ids, a_ids != PAD_ID).cross
    d = max(float(np.abs(alone[k][0][..., :len(s), :] - batched[k][i][..., :len(s), :]).max()) for k in alone)
    differ += d > 0
    worst = max(worst, d)
print(platform.machine(), f"int8, alone padded to the batch's length: {differ}/32 differ; max |diff| {worst:.3g}")
