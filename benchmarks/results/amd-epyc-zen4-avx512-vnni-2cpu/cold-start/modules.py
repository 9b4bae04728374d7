"""Our modules' import time after numpy, onnxruntime, sentencepiece and click, and the part of it spent
building dataclasses and compiling regular expressions: python modules.py (five fresh runs in session 44)."""
import time, dataclasses, re
import numpy, onnxruntime, sentencepiece, click  # noqa: F401  (imported first, outside the timing)
spent = {"dataclass": 0.0, "re.compile": 0.0}
orig_pf = dataclasses._process_class
def timed_pf(*a, **k):
    t = time.perf_counter(); r = orig_pf(*a, **k); spent["dataclass"] += time.perf_counter() - t; return r
dataclasses._process_class = timed_pf
orig_compile = re._compile
def timed_compile(*a, **k):
    t = time.perf_counter(); r = orig_compile(*a, **k); spent["re.compile"] += time.perf_counter() - t; return r
re._compile = timed_compile
t = time.perf_counter()
import mtkit.runtime.cli  # noqa: F401
from mtkit.runtime import Translator  # noqa: F401
total = time.perf_counter() - t
print(f"modules {total*1e3:.1f} ms, dataclasses {spent['dataclass']*1e3:.1f}, regex {spent['re.compile']*1e3:.1f}")
