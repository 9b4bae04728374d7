"""What a bigger model shape would cost as shipped: int8 bundle size and decoding speed (issue 18).

For each shape (encoder x decoder layers, d_model, FFN width; 64-dim heads; the shipped model's
tokenizer, vocabulary and tags), a checkpoint with random weights is exported to an int8 bundle by
`mt-export`'s own code, and decoded by the runtime as `mt-bench` decodes it (its ONNX Runtime engine
and its latency and throughput loops). Random weights cost what trained ones cost per step, but they
rarely end a sentence: every output is held to the source's length in tokens, about what a trained
model writes (with mt-bench's cap of 1.5 x source + 10 the decoder's share of the time, and so the
cost of a wider decoder against a wider encoder, would be overstated). The shapes take turns within
one process, round after round, and the medians are compared with the first shape (today's).

    python -m mtkit.benchmarks.shapes --out benchmarks/results/<machine>/shapes.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path

SHAPES = ["6x2-256-1024", "6x2-256-2048", "8x2-256-1024", "12x2-256-1024", "6x3-256-1024", "6x2-320-1280", "6x2-384-1536",
          "6x1-384-1536", "6x2-512-2048"]
INT8_FILES = ("encoder.int8.onnx", "decoder.int8.onnx", "embedding.int8.bin")
SHIPPED_FILES = INT8_FILES + ("tokenizer.model", "config.json", "parity.json")   # what the wheel carries
SETS = {"tatoeba-dev": "tatoeba/dev", "newstest2013": "news/newstest2013"}


def parse_shape(spec: str) -> dict:
    """"6x2-256-1024" -> encoder_layers 6, decoder_layers 2, d_model 256, ffn_dim 1024, n_heads 4."""
    try:
        layers, d_model, ffn = spec.split("-")
        encoder, decoder = layers.split("x")
        shape = dict(encoder_layers=int(encoder), decoder_layers=int(decoder), d_model=int(d_model), ffn_dim=int(ffn))
    except ValueError:
        raise SystemExit(f"shape {spec!r}: expected ENCxDEC-DMODEL-FFN, e.g. 6x2-256-1024") from None
    if shape["d_model"] % 64:
        raise SystemExit(f"shape {spec!r}: d_model must be a multiple of 64 (64-dim heads)")
    return shape | {"n_heads": shape["d_model"] // 64}


def random_bundle(base_checkpoint: Path, spec: str, parity_source: Path, work: Path) -> tuple[Path, int]:
    """An int8 bundle of shape `spec` with random weights, and its parameter count."""
    import torch

    from mtkit.export.api import export_bundle
    from mtkit.train.checkpoint import Checkpoint, load_checkpoint
    from mtkit.train.model import Transformer

    base = load_checkpoint(base_checkpoint)
    cfg = replace(base.model_config, **parse_shape(spec))
    torch.manual_seed(0)
    model = Transformer(cfg)
    checkpoint = work / f"{spec}.pt"
    Checkpoint(model=model.state_dict(), model_config=cfg, tokenizer_model=base.tokenizer_model,
               language_tags=base.language_tags, directions=base.directions, languages=base.languages).save(checkpoint)
    report = export_bundle(checkpoint, work / spec, quantize="int8", parity_data=parity_source, max_sentences=8)
    checkpoint.unlink()
    return report.path, model.num_parameters()


def source_length_engine(path: Path, threads: int):
    """mt-bench's ONNX Runtime int8 engine, with every output as long as its source (see above)."""
    from mtkit.benchmarks.engines import ENGINES, OrtEngine, decode_options

    class SourceLengthEngine(OrtEngine):
        def translate(self, texts: list[str], src: str, to: str, beam_size: int) -> list[tuple[str, int]]:
            options = replace(decode_options(beam_size, self.translator.config.max_positions),
                              max_length_ratio=1.0, max_length_extra=0)
            out = self.translator.translate(texts, to, options, from_lang=src, split_sentences=False)
            return [(t.text, t.num_tokens) for t in out]

    return SourceLengthEngine(ENGINES["ort-int8"], {"bundle": path}, threads)


def main() -> None:
    from mtkit.benchmarks.worker import measure_latency, measure_throughput
    from mtkit.runtime.data_dir import corpus_file, default_data_dir
    from mtkit.runtime.text_io import read_lines

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=",".join(SHAPES), help="ENCxDEC-DMODEL-FFN,...; the first is the baseline")
    ap.add_argument("--checkpoint", type=Path, default=Path("models/de-en/checkpoint.fp16.pt"),
                    help="whose tokenizer, vocabulary and tags the shapes get")
    ap.add_argument("--data-dir", type=Path)
    ap.add_argument("--limit", type=int, default=64, help="sentences of each test set for beam search")
    ap.add_argument("--latency-limit", type=int, default=16, help="of those, sentences for greedy batch-1 latency")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    shapes = args.shapes.split(",")
    for spec in shapes:
        parse_shape(spec)
    data_dir = default_data_dir(args.data_dir)
    sources = {name: read_lines(corpus_file(data_dir, prefix, "de"))[:args.limit] for name, prefix in SETS.items()}

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        engines = {}
        for spec in shapes:
            path, params = random_bundle(args.checkpoint, spec, corpus_file(data_dir, "tatoeba/dev", "de"), Path(tmp))
            engines[spec] = source_length_engine(path, args.threads)
            results[spec] = {"parameters_millions": round(params / 1e6, 2),
                             "int8_weights_bytes": sum((path / f).stat().st_size for f in INT8_FILES),
                             "shipped_bytes": sum((path / f).stat().st_size for f in SHIPPED_FILES),
                             **{name: {"beam_tok_s": [], "greedy_ms": [], "greedy_ms_per_token": []} for name in SETS}}
            print(f"{spec}: {params / 1e6:.2f}M parameters, int8 bundle {results[spec]['shipped_bytes'] / 1e6:.1f} MB",
                  flush=True)
        for round_ in range(args.rounds):
            order = shapes[round_ % len(shapes):] + shapes[:round_ % len(shapes)]   # no shape always first
            for spec in order:
                for name, texts in sources.items():
                    runs, _ = measure_throughput(engines[spec], texts, "de", "en", reps=1, warmup=1, beam_size=4,
                                                 batch_size=32)
                    seconds, outputs = measure_latency(engines[spec], texts[:args.latency_limit], "de", "en", reps=1,
                                                       warmup=2)
                    tokens = [n for _, n in engines[spec].translate(texts[:args.latency_limit], "de", "en", 1)]
                    row = results[spec][name]
                    row["beam_tok_s"].append(runs[0]["tokens_per_s"])
                    row["greedy_ms"].append(1e3 * statistics.median(seconds))
                    row["greedy_ms_per_token"].append(1e3 * sum(seconds) / max(1, sum(tokens)))
            print(f"round {round_ + 1} of {args.rounds} done", flush=True)

    base = shapes[0]
    for spec in shapes:
        r = results[spec]
        for name in SETS:
            row = r[name]
            row |= {f"{k}_median": statistics.median(v) for k, v in list(row.items())}
            ours, theirs = row, results[base][name]
            row["beam_time_vs_first"] = theirs["beam_tok_s_median"] / ours["beam_tok_s_median"]
            row["greedy_time_vs_first"] = ours["greedy_ms_per_token_median"] / theirs["greedy_ms_per_token_median"]
        cells = "  ".join(f"{name}: beam x{r[name]['beam_time_vs_first']:.2f} greedy x{r[name]['greedy_time_vs_first']:.2f}"
                          for name in SETS)
        print(f"{spec:>14}  {r['parameters_millions']:6.2f}M  {r['shipped_bytes'] / 1e6:5.1f} MB  {cells}")
    if args.out:
        import onnxruntime

        args.out.parent.mkdir(parents=True, exist_ok=True)
        setup = {"rounds": args.rounds, "limit": args.limit, "latency_limit": args.latency_limit, "threads": args.threads,
                 "beam": 4, "batch": 32, "onnxruntime": onnxruntime.__version__, "machine": platform.processor()}
        args.out.write_text(json.dumps({"setup": setup, "shapes": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
