"""Does a pair's score (Translator.score) depend on its batch? The first N newstest2013 pairs (default
64), shipped int8: all in one call against each alone. Data: $MT_DATA_DIR, else shared/data.
Run natively and under `devtools/aarch64-emulated python scores.py`."""
import gzip
import os
import sys
import time

from mtkit.runtime.translator import Translator

n = int(sys.argv[1]) if len(sys.argv) > 1 else 64
news = os.path.join(os.environ.get("MT_DATA_DIR", "shared/data"), "news", "newstest2013")
sources, targets = ([line.rstrip("\n") for line in gzip.open(f"{news}.{lang}.gz", "rt")][:n] for lang in ("de", "en"))
t = Translator(variant="int8")
started = time.time()
together = t.score(sources, targets)
alone = [t.score([s], [g])[0] for s, g in zip(sources, targets)]
diffs = [max(abs(a - b) for a, b in zip(x.log_probs, y.log_probs)) for x, y in zip(together, alone)]
print(f"pad_to {t.pad_to}: {sum(d == 0 for d in diffs)} / {n} the same bit for bit; {sum(d > 1e-4 for d in diffs)} "
      f"differ by more than 1e-4 nats; largest {max(diffs):.4g}; {time.time() - started:.0f} s")
