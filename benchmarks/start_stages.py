"""The stages of a fresh process that starts an engine, timed from inside it, for `start_floor.py`:

    python start_stages.py ours THREADS ENCODER DECODER TOKENIZER NAMES   (ONNX Runtime: one decoder step)
    python -m mtkit.benchmarks.start_stages ct2 THREADS CT2_INT8_DIR   (CTranslate2: one sentence too)

NAMES is JSON from `start_floor.py`: the target tag's piece and the graphs' tensor names, as the
bundle's config.json gives them. Prints the stages (milliseconds, and the resident memory after
each), the engine modules imported before them, and the peak as one JSON line. It imports nothing at
the top beyond what every Python start has, so a stage's figure is that stage's.
"""

from __future__ import annotations

import os
import sys
import time

TEXT = "Guten Morgen, wie geht es dir?"


def rss_mb(field: str = "VmRSS") -> float:
    """One field of /proc/self/status in MB (worker.memory_kb reads them all, but importing it would
    import mtkit before the stages)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


ENGINE_PACKAGES = ("mtkit", "numpy", "onnxruntime", "sentencepiece", "ctranslate2")


def staged(steps) -> dict:
    """Run (name, thunk) steps in order: each one's milliseconds and the RSS after it, and which
    engine modules were imported before the first (none, for ours: each stage's cost is its own)."""
    before = sorted(m for m in sys.modules if m.split(".")[0] in ENGINE_PACKAGES)
    out = []
    for name, step in steps:
        start = time.perf_counter()
        step()
        out.append({"stage": name, "ms": 1e3 * (time.perf_counter() - start), "rss_mb": rss_mb()})
    return {"stages": out, "imported_before": before}


def ours_floor(encoder: str, decoder: str, tokenizer: str, names: str, threads: int) -> dict:
    """Imports, then the two sessions and the tokenizer built at once on three Python threads (ONNX
    Runtime and SentencePiece release the GIL while they load), as the runtime overlaps them."""
    import threading

    def session(path: str):
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL   # optimized already
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])

    def load_all():
        import sentencepiece as spm
        jobs = {"encoder": lambda: session(encoder), "decoder": lambda: session(decoder),
                "tokenizer": lambda: spm.SentencePieceProcessor(model_file=tokenizer)}
        workers = [threading.Thread(target=lambda k=k, job=job: held.__setitem__(k, job())) for k, job in jobs.items()]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        if len(held) != len(jobs):
            raise SystemExit(f"failed to load: {', '.join(sorted(set(jobs) - set(held)))}")

    def first_step():
        """The least any translation computes: the encoder once, and one decoder step from BOS."""
        import json

        import numpy as np
        n = json.loads(names)
        sp, enc, dec = held["tokenizer"], held["encoder"], held["decoder"]
        ids = np.array([[sp.piece_to_id(n["tag"]), *sp.encode(TEXT), sp.eos_id()]], dtype=np.int64)
        mask = np.ones(ids.shape, dtype=bool)
        outputs = enc.run(None, {n["src_ids"]: ids, n["src_mask"]: mask})
        encoded = dict(zip([o.name for o in enc.get_outputs()], outputs))
        feed = {n["tgt_ids"]: np.array([[sp.bos_id()]], dtype=np.int64), n["src_mask"]: mask}
        for item in dec.get_inputs():
            if item.name in encoded:
                feed[item.name] = encoded[item.name]
            elif item.name in n["past"]:          # an empty cache: [rows 1, heads, 0 steps, head dim]
                feed[item.name] = np.zeros([1, item.shape[1], 0, item.shape[3]], dtype=np.float32)
        dec.run(None, feed)

    held = {}
    return staged([("import numpy", lambda: __import__("numpy")),
                   ("import onnxruntime", lambda: __import__("onnxruntime")),
                   ("import sentencepiece", lambda: __import__("sentencepiece")),
                   ("both sessions and the tokenizer, at once", load_all),
                   ("the encoder once, one decoder step", first_step)])


def ct2_stages(model_dir: str, threads: int) -> dict:
    from pathlib import Path

    from mtkit.benchmarks.ct2_run import read_info, source_tokens, translate_options    # ct2_run's own imports
    from mtkit.runtime.decode_options import DecodeOptions

    held = {}

    def load():
        import ctranslate2
        held["max_positions"] = read_info(Path(model_dir))["max_positions"]      # as ct2_run reads it first
        held["tr"] = ctranslate2.Translator(model_dir, device="cpu", compute_type="int8", inter_threads=threads,
                                            intra_threads=1)     # its replica layout: the faster start

    def load_tokenizer():
        import sentencepiece as spm
        held["sp"] = spm.SentencePieceProcessor(model_file=str(Path(model_dir) / "tokenizer.model"))

    def translate():
        source = source_tokens(held["sp"], TEXT, "en", held["max_positions"])
        opts = DecodeOptions(beam_size=4, no_repeat_loop=0).for_model(held["max_positions"])
        held["tr"].translate_batch([source], **translate_options(opts, len(source)))

    return staged([("import ctranslate2", lambda: __import__("ctranslate2")),
                   ("import sentencepiece", lambda: __import__("sentencepiece")),
                   ("load model", load), ("load tokenizer", load_tokenizer), ("translate one sentence", translate)])


def main(argv: list[str] | None = None) -> None:
    kind, threads, *paths = sys.argv[1:] if argv is None else argv
    result = ours_floor(*paths, int(threads)) if kind == "ours" else ct2_stages(*paths, int(threads))
    import json
    print(json.dumps({**result, "peak_rss_mb": rss_mb("VmHWM")}), flush=True)
    os._exit(0)          # as mt-translate does: no interpreter teardown


if __name__ == "__main__":
    main()
