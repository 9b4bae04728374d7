"""What encoder/decoder depth costs at decode time, to choose the shipped model's shape.

Random weights are enough: the cost of a step does not depend on the values. Each shape is
exported with our exporter and run on ONNX Runtime (fp32, CPU) for a fixed number of steps, so
every shape does the same work: beam 4 over 32 sentences (128 rows), 16 source tokens, 20 target
steps, plus the encoder. The shapes alternate within one process and the medians are compared.

    python -m mtkit.benchmarks.depth --out benchmarks/results/<machine>/depth.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

from mtkit.export.graphs import export_graphs
from mtkit.runtime import bundle_format as bf
from mtkit.runtime.onnx_backend import SessionSettings, session_options
from mtkit.train.model import ModelConfig, Transformer

SHAPES = [(3, 3), (6, 2), (6, 1), (4, 4), (6, 6)]


def sessions(cfg: ModelConfig, work: Path, threads: int):
    torch.manual_seed(0)
    paths = export_graphs(Transformer(cfg), work)
    opts = session_options(SessionSettings(threads=threads))   # the runtime's own settings
    return [ort.InferenceSession(str(paths[g]), opts, providers=["CPUExecutionProvider"])
            for g in ("encoder", "decoder")]


def decode_time(encoder, decoder, cfg: ModelConfig, rows: int, src_len: int, steps: int) -> tuple[float, float]:
    """Seconds for the encoder and for `steps` cached decoder steps."""
    names = bf.tensor_names(cfg.decoder_layers)
    rng = np.random.default_rng(0)
    src = rng.integers(4, cfg.vocab_size, (rows, src_len))
    mask = np.ones((rows, src_len), dtype=bool)
    t0 = time.perf_counter()
    enc = dict(zip(names["encoder"]["outputs"], encoder.run(None, {bf.SRC_IDS: src, bf.SRC_MASK: mask})))
    t1 = time.perf_counter()
    empty = np.zeros((rows, cfg.n_heads, 0, cfg.head_dim), dtype=np.float32)
    feed = {bf.SRC_MASK: mask}
    for i in range(cfg.decoder_layers):
        feed |= {bf.past_key(i): empty, bf.past_value(i): empty,
                 bf.cross_key(i): enc[bf.cross_key(i)], bf.cross_value(i): enc[bf.cross_value(i)]}
    for _ in range(steps):
        feed[bf.TGT_IDS] = rng.integers(4, cfg.vocab_size, (rows, 1))
        out = dict(zip(names["decoder"]["outputs"], decoder.run(None, feed)))
        for i in range(cfg.decoder_layers):
            feed[bf.past_key(i)], feed[bf.past_value(i)] = out[bf.present_key(i)], out[bf.present_value(i)]
    return t1 - t0, time.perf_counter() - t1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=int, default=16000)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows, src_len, steps = 128, 16, 20
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        runners = {}
        for enc_layers, dec_layers in SHAPES:
            cfg = ModelConfig(vocab_size=args.vocab, d_model=args.d_model, n_heads=args.d_model // 64,
                              encoder_layers=enc_layers, decoder_layers=dec_layers, ffn_dim=4 * args.d_model)
            work = Path(tmp) / f"{enc_layers}-{dec_layers}"
            work.mkdir()
            runners[f"{enc_layers}+{dec_layers}"] = (cfg, *sessions(cfg, work, args.threads))
            results[f"{enc_layers}+{dec_layers}"] = {
                "params_millions": round(Transformer(cfg).num_parameters() / 1e6, 2), "encoder_s": [], "decoder_s": []}
        for _ in range(args.reps + 1):  # the first round is warm-up
            for name, (cfg, encoder, decoder) in runners.items():
                enc_s, dec_s = decode_time(encoder, decoder, cfg, rows, src_len, steps)
                results[name]["encoder_s"].append(enc_s)
                results[name]["decoder_s"].append(dec_s)
    base = None
    for name, r in results.items():
        r["encoder_s"], r["decoder_s"] = r["encoder_s"][1:], r["decoder_s"][1:]
        r["total_s"] = statistics.median(e + d for e, d in zip(r["encoder_s"], r["decoder_s"]))
        base = base or r["total_s"]
        r["time_vs_3+3"] = round(r["total_s"] / base, 3)
        print(f"{name}: {r['params_millions']}M params, encoder {statistics.median(r['encoder_s']) * 1e3:.0f} ms, "
              f"{steps} decoder steps {statistics.median(r['decoder_s']) * 1e3:.0f} ms, total x{r['time_vs_3+3']} of 3+3")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        meta = {"rows": rows, "src_len": src_len, "steps": steps, "threads": args.threads, "vocab": args.vocab,
                "d_model": args.d_model, "onnxruntime": ort.__version__}
        args.out.write_text(json.dumps({"setup": meta, "shapes": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
