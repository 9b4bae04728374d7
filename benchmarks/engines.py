"""The engines `mt-bench` compares, behind one call: translate a batch of sentences into one language.

Every engine gets the same sentences and the same search settings (greedy or beam, length penalty
1, max length ratio 1.5 + 10, capped by the model's positions), decodes a whole request batch at
once, and returns (text, number of target tokens) per sentence. Imports are lazy so that the
process running an engine loads only that engine's libraries: the ONNX Runtime worker never
imports torch, and its peak RSS is its own.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

@dataclass(frozen=True)
class EngineSpec:
    name: str          # "ort-int8", ...: the key in results
    label: str         # what the report calls it
    kind: str          # "torch" | "ort" | "ct2"
    device: str        # "cpu" | "cuda"
    precision: str     # "fp32" | "int8" | "fp16"
    use_cache: bool = True
    budget: tuple[int, int] | None = None   # ort: (max_batch_tokens, max_batch_sentences); None = its default
    # ct2: 0 = one translator using every thread (intra_threads), the whole request one batch; N = one
    # replica per thread (inter_threads, one intra-op thread each) translating batches of at most N
    # sentences side by side, CTranslate2's layout for throughput on few cores.
    replica_batch: int = 0
    low_latency: bool = False   # ort: `Translator(low_latency=True)`, for one request at a time

    def ct2_threads(self, threads: int) -> tuple[int, int]:
        """(inter_threads, intra_threads) of a CTranslate2 engine given `threads`."""
        return (threads, 1) if self.replica_batch else (1, threads)

    @property
    def ct2_model(self) -> str:
        """The artifact a CTranslate2 engine loads: int8 was quantized at conversion; fp32, fp16 and int16
        start from the float32 model (CTranslate2 converts its weights on load)."""
        return "ct2_int8" if self.precision == "int8" else "ct2_fp32"

    @property
    def ct2_compute_type(self) -> str:
        return {"fp32": "float32", "int8": "int8", "fp16": "float16", "int16": "int16"}[self.precision]

    @property
    def reference(self) -> str:
        """The CTranslate2 engine this one is compared with: same device, same precision."""
        if self.device == "cuda":
            return "ct2-cuda-fp16" if self.precision == "fp16" else "ct2-cuda-fp32"
        return "ct2-int8" if self.precision == "int8" else "ct2-fp32"


CPU_ENGINES = [
    EngineSpec("torch-nocache", "PyTorch, no KV cache", "torch", "cpu", "fp32", use_cache=False),
    EngineSpec("torch", "PyTorch, KV cache", "torch", "cpu", "fp32"),
    EngineSpec("ort-fp32", "ONNX Runtime fp32", "ort", "cpu", "fp32"),
    EngineSpec("ort-int8", "ONNX Runtime int8", "ort", "cpu", "int8"),
    # Our layout for latency, as the replicas below are CTranslate2's for throughput: one batch at a time,
    # the decoder's step on two cores (PERF_NOTES.md, session 39).
    EngineSpec("ort-int8-latency", "ONNX Runtime int8, low_latency", "ort", "cpu", "int8", low_latency=True),
    EngineSpec("ct2-fp32", "CTranslate2 fp32", "ct2", "cpu", "fp32"),
    EngineSpec("ct2-int8", "CTranslate2 int8", "ct2", "cpu", "int8"),
    # Where CTranslate2 uses Intel MKL (Intel CPUs) it also offers int16: one more candidate for its best.
    EngineSpec("ct2-int16", "CTranslate2 int16", "ct2", "cpu", "int16"),
    # CTranslate2's replicas: on the 2-core Intel Xeon of session 35 its int8 beam throughput was 2.3-2.7x
    # and its greedy latency 2.7-4.0x better this way than with two intra-op threads. Batches of 4
    # sentences match our int8 decode budget (32 rows, two batches at a time, beam 4); 8 was CT2's best on
    # Tatoeba dev there, 4 on newstest2013.
    EngineSpec("ct2-int8-replicas4", "CTranslate2 int8, a replica per thread, batches of 4", "ct2", "cpu", "int8",
               replica_batch=4),
    EngineSpec("ct2-int8-replicas8", "CTranslate2 int8, a replica per thread, batches of 8", "ct2", "cpu", "int8",
               replica_batch=8),
]
GPU_ENGINES = [
    EngineSpec("torch-cuda", "PyTorch CUDA, KV cache", "torch", "cuda", "fp32"),
    EngineSpec("ort-cuda-fp32", "ONNX Runtime CUDA fp32 (IOBinding)", "ort", "cuda", "fp32"),
    EngineSpec("ort-cuda-fp16", "ONNX Runtime CUDA fp16 (IOBinding)", "ort", "cuda", "fp16"),
    EngineSpec("ct2-cuda-fp32", "CTranslate2 CUDA fp32", "ct2", "cuda", "fp32"),
    EngineSpec("ct2-cuda-fp16", "CTranslate2 CUDA fp16", "ct2", "cuda", "fp16"),
]
# Asked for by name only: our int8 with the decode budget it had before session 24, so that a CPU where
# the smaller default might cost speed can show it in one run (PERF_NOTES.md, session 24).
EXTRA_ENGINES = [
    EngineSpec("ort-int8-64", "ONNX Runtime int8, 64 rows / 4096 tokens", "ort", "cpu", "int8", budget=(4096, 64)),
]
ENGINES = {e.name: e for e in CPU_ENGINES + GPU_ENGINES + EXTRA_ENGINES}


def decode_options(beam_size: int, max_positions: int):
    from mtkit.runtime.decode_options import DecodeOptions

    return DecodeOptions(beam_size=beam_size, no_repeat_loop=0).for_model(max_positions)   # CT2 has no loop ban


# Each engine is called as a user calls it, one request of --batch-size sentences, and batches it
# its own way: our Translator by its defaults (`decode_budget.py`: on the int8 graphs 32 rows and
# 1024 padded tokens in flight, so a beam-4 request of 32 decodes as length-sorted batches of at most 4
# sentences, two at a time), CTranslate2 by its default (max_batch_size=0: one batch) or, with replicas,
# in batches of `replica_batch` sentences, one per replica at a time.
# Measured on the AMD EPYC (2 cores): one batch of 32 instead raised our peak RSS from 147 to 238 MB
# at about the same speed (Tatoeba dev 1.04x, newstest2013 0.97x).


class RuntimeEngine:
    """A `mtkit.runtime.Translator` (sentence splitting off: one line, one sentence)."""

    translator = None

    def translate(self, texts: list[str], src: str, to: str, beam_size: int) -> list[tuple[str, int]]:
        # The test set's source language (no detection) and the same decode options as CT2.
        options = decode_options(beam_size, self.translator.config.max_positions)
        out = self.translator.translate(texts, to, options, from_lang=src, split_sentences=False)
        return [(t.text, t.num_tokens) for t in out]


class TorchEngine(RuntimeEngine):
    """The checkpoint translator (train/reference.py): the PyTorch model, with or without its KV
    cache, under the runtime's search and pre/post-processing."""

    def __init__(self, spec: EngineSpec, artifacts: dict, threads: int):
        from mtkit.train.reference import checkpoint_translator

        self.translator = checkpoint_translator(artifacts["checkpoint"], spec.device, threads, spec.use_cache)


class OrtEngine(RuntimeEngine):
    """Our runtime: `mtkit.runtime.Translator` on a bundle."""

    def __init__(self, spec: EngineSpec, artifacts: dict, threads: int):
        from mtkit.runtime.translator import Translator

        tokens, rows = spec.budget or (None, None)
        self.translator = t = Translator(artifacts["bundle"], provider=spec.device, threads=threads,
                                         variant=spec.precision, max_batch_tokens=tokens, max_batch_sentences=rows,
                                         low_latency=spec.low_latency)
        self.impl = (f"mtkit.runtime.Translator ({type(t.backend).__name__}, {t.max_batch_sentences} rows / "
                     f"{t.max_batch_tokens} tokens in flight{', low_latency' if spec.low_latency else ''})")
        # Wall seconds with at least one encoder or decoder call running: the rest is the search loop on
        # the critical path. Batches decode in parallel threads (`parallel_batches`), so the calls'
        # own durations would overlap and add up to more than the wall time.
        self.graph_seconds = 0.0
        self._running, self._since, self._lock = 0, 0.0, threading.Lock()
        backend = self.translator.backend
        for session in (backend.encoder, backend.decoder):
            for method in ("run", "run_with_iobinding"):
                setattr(session, method, self._timed(getattr(session, method)))

    def _timed(self, run):
        def timed(*args, **kwargs):
            with self._lock:
                if not self._running:
                    self._since = time.perf_counter()
                self._running += 1
            try:
                return run(*args, **kwargs)
            finally:
                with self._lock:
                    self._running -= 1
                    if not self._running:
                        self.graph_seconds += time.perf_counter() - self._since
        return timed


class Ct2Engine:
    """A model converted by `ct2_convert.py`, fed exactly our encoder inputs."""

    def __init__(self, spec: EngineSpec, artifacts: dict, threads: int):
        import ctranslate2
        import sentencepiece as spm

        from .ct2_run import TOKENIZER_FILE, read_info

        directory = Path(artifacts[spec.ct2_model])
        self.max_positions = read_info(directory)["max_positions"]
        self.sp = spm.SentencePieceProcessor(model_file=str(directory / TOKENIZER_FILE))
        inter, intra = spec.ct2_threads(threads)
        self.max_batch_size = spec.replica_batch    # 0: the whole request as one batch
        self.translator = ctranslate2.Translator(str(directory), device=spec.device, compute_type=spec.ct2_compute_type,
                                                 inter_threads=inter, intra_threads=intra)

    def translate(self, texts: list[str], src: str, to: str, beam_size: int) -> list[tuple[str, int]]:
        """`src` is not used: the model's input names only the target language (`source_tokens`)."""
        from .ct2_run import source_tokens, translate_options

        sources = [source_tokens(self.sp, t, to, self.max_positions) for t in texts]
        opts = decode_options(beam_size, self.max_positions)
        # One max_decoding_length per call: the longest source's (our search has one per sentence).
        kwargs = translate_options(opts, max(len(s) for s in sources))
        results = self.translator.translate_batch(sources, max_batch_size=self.max_batch_size, **kwargs)
        best = [r.hypotheses[0] for r in results]
        return [(self.sp.decode_pieces(tokens).strip(), len(tokens)) for tokens in best]


# What each kind of engine imports before it loads a model: the worker records the memory they take.
LIBRARIES = {"torch": ("torch", "sentencepiece"),
             "ort": ("numpy", "onnxruntime", "sentencepiece", "mtkit.runtime.translator"),
             "ct2": ("ctranslate2", "sentencepiece")}


def import_libraries(name: str) -> None:
    import importlib

    for module in LIBRARIES[ENGINES[name].kind]:
        importlib.import_module(module)


def load(name: str, artifacts: dict, threads: int):
    spec = ENGINES[name]
    return {"torch": TorchEngine, "ort": OrtEngine, "ct2": Ct2Engine}[spec.kind](spec, artifacts, threads)
