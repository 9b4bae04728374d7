"""The greedy margins of newstest2013 line 20 (the one that differs alone and batched on emulated aarch64).

    python margin.py DATA_DIR
"""
import gzip, platform, sys
import numpy as np
from mtkit.runtime import Translator
from mtkit.runtime.agreement import greedy_margins
from mtkit.runtime.vocab import source_ids
lines = [l.rstrip("\n") for l in gzip.open(f"{sys.argv[1]}/news/newstest2013.de.gz", "rt")][:32]
t = Translator(threads=2)
tag = t.tag_id("en")
sources = [source_ids(t.tokenizer.encode(s), tag, 256) for s in lines]
res = greedy_margins(t.backend, sources, 200)
out, m = res[19]
print(platform.machine(), "line 20:", t.model_text(out))
order = np.argsort(m)[:3]
print("smallest margins (nats):", [(int(i), round(float(m[i]), 4), t.tokenizer.id_to_piece(int(out[i]))) for i in order])
print("median smallest margin over the 32 lines:", float(np.median([r[1].min() for r in res])))
