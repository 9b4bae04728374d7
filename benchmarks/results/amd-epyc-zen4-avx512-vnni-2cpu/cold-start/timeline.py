"""A fresh process's stages, in the order `mt-translate` meets them: python timeline.py BUNDLE."""
import time, sys
t = [("start", time.perf_counter())]
def mark(name): t.append((name, time.perf_counter()))
import numpy  # noqa: F401
mark("numpy")
import onnxruntime  # noqa: F401
mark("onnxruntime")
import sentencepiece  # noqa: F401
mark("sentencepiece")
import click  # noqa: F401
mark("click")
import mtkit.runtime.cli  # noqa: F401
mark("mtkit.runtime.cli")
from mtkit.runtime import Translator; mark("mtkit.runtime (Translator)")
tr = Translator(sys.argv[1], variant="int8", threads=2); mark("Translator(...)")
out = tr.translate(["Ich habe Hunger."], "en", from_lang="de", beam_size=4); mark("translate, beam 4")
print(" ".join(f"{b[0]}={1000*(b[1]-a[1]):.1f}" for a, b in zip(t, t[1:])))
