"""`export_bundle`: checkpoint -> checked, optimized, parity-tested model bundle.

Steps: load the checkpoint; count the words of its training data (for source-language detection);
trace fp32 graphs; fuse them for ONNX Runtime; derive the int8 / fp16 variants; check every graph
(onnx.checker + an ORT session); run parity; write tokenizer, word counts, config.json and
parity.json; rename the staging directory into place. Any failure removes the
staging directory, so nothing that looks like a bundle is left behind.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import onnxruntime as ort
import sentencepiece as spm

from mtkit.runtime import bundle_format as bf
from mtkit.runtime import checksums
from mtkit.runtime.errors import ModelLoadError, ProviderError
from mtkit.runtime.onnx_backend import PROVIDERS, cuda_available
from mtkit.train.checkpoint import load_model

from . import bundle, graphs, int8, optimize, parity, variants
from .bundle import ExportError
from .lexicon import training_lexicon
from .parity import ParityError
from .search_head import add_search_head

ARCHIVE_SUFFIX = ".tar.gz"


@dataclass
class BundleReport:
    path: Path                              # the bundle directory, or the .tar.gz with archive=True
    config: bf.BundleConfig
    parity: dict
    files: dict[str, int] = field(default_factory=dict)   # file name -> size in bytes


def default_output(checkpoint: Path, archive: bool = False) -> Path:
    """`<ckpt-stem>-bundle` next to the checkpoint (plus .tar.gz for an archive)."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(f"{checkpoint.stem}-bundle" + (ARCHIVE_SUFFIX if archive else ""))


def target_path(checkpoint: Path, out: Path | None, archive: bool) -> Path:
    if out is None:
        return default_output(checkpoint, archive)
    out = Path(out)
    if archive and not out.name.endswith(ARCHIVE_SUFFIX):
        out = out.with_name(out.name + ARCHIVE_SUFFIX)
    return out


def _noop(message: str) -> None:
    pass


def export_bundle(checkpoint: Path, out: Path | None = None, quantize: str | None = None, fp16: bool = False,
                  opset: int = graphs.DEFAULT_OPSET, parity_data: Path | None = None, force: bool = False,
                  archive: bool = False, target_lang: str | None = None, max_sentences: int = parity.MAX_SENTENCES,
                  lexicon_data: Path | None = None, progress: Callable[[str], None] = _noop,
                  edit: Callable[[Path, bf.BundleConfig], None] | None = None) -> BundleReport:
    """Export `checkpoint` into a bundle at `out` and return what was written. `edit`, if given, changes
    the checked bundle (its staging directory and its config) before the manifest is made and the
    bundle is moved into place: ship.py's edge bundle.

    Raises CheckpointError (unusable checkpoint), ExportError (bad arguments, existing output,
    invalid graph, a write that fails) or ParityError (the graphs do not reproduce the model); in
    every case nothing is left at `out`.
    """
    checkpoint = Path(checkpoint)
    if quantize not in (None, "int8"):
        raise ExportError(f"--quantize {quantize!r}: only 'int8' is supported")
    target = target_path(checkpoint, out, archive)
    bundle.check_target(target, archive, force)

    progress("loading checkpoint")
    ckpt, model = load_model(checkpoint)
    bundle.check_tokenizer(ckpt, checkpoint)
    cfg = model.cfg
    data = parity.load_parity_set(ckpt, checkpoint, parity_data, target_lang, max_sentences)  # fail early
    progress("counting the words of the training data (source-language detection)")
    lexicon, lexicon_note = training_lexicon(ckpt, lexicon_data)
    progress(lexicon_note)

    with bundle.writing(target):   # a full disk: one line, once the staging directory is gone
        staging = bundle.make_staging(target)
        try:
            with tempfile.TemporaryDirectory(prefix=".mt-export-scratch-", dir=staging.parent) as scratch:
                scratch = Path(scratch)
                sp_path = bundle.write_tokenizer(ckpt, staging)  # checked above
                sp = spm.SentencePieceProcessor(model_file=str(sp_path))

                progress(f"tracing ONNX graphs (opset {opset})")
                raw = graphs.export_graphs(model, scratch, opset)
                for path in raw.values():
                    bundle.check_graph(path)

                progress("optimizing fp32 graphs for ONNX Runtime")
                entries = {}
                fp32_opts = {}
                for graph, path in raw.items():
                    dest = staging / bf.graph_file(graph, "fp32")
                    fp32_opts[graph] = optimize.optimize_graph(path, dest, cfg.n_heads, cfg.d_model, cfg.activation)
                    fp32_opts[graph] += optimize.rewrite_for_runtime(dest, cfg.head_dim)
                entries["fp32"] = _entry("fp32", "float32", fp32_opts)

                if quantize == "int8":
                    progress("quantizing int8 variant")
                    sources = {graph: staging / bf.graph_file(graph, "fp32") for graph in ("encoder", "decoder")}
                    targets = {graph: staging / bf.graph_file(graph, "int8") for graph in ("encoder", "decoder")}
                    records = int8.quantize_rowwise(sources, targets, cfg.vocab_size)
                    opts = {graph: fp32_opts[graph] + records[graph] for graph in sources}
                    entries["int8"] = _entry("int8", "int8 weights and per-row int8 activations (batch-invariant)", opts,
                                             data=[int8.SHARED_FILE])
                if fp16:
                    progress("converting fp16 variant")
                    opts = {}
                    for graph in ("encoder", "decoder"):
                        src, dest = staging / bf.graph_file(graph, "fp32"), staging / bf.graph_file(graph, "fp16")
                        opts[graph] = fp32_opts[graph] + variants.convert_fp16(src, dest)
                    entries["fp16"] = _entry("fp16", "float16", opts)

                for variant in ("fp32", "fp16"):  # after int8, which needs the output weight as an initializer
                    if variant in entries:
                        for graph in ("encoder", "decoder"):
                            entries[variant]["optimizations"][graph] = entries[variant]["optimizations"][graph] + \
                                optimize.share_tied_embedding(staging / bf.graph_file(graph, variant))

                for variant in entries:       # last: int8 and fp16 are made from the head-less fp32 graph
                    path = staging / bf.graph_file("decoder", variant)
                    entries[variant]["optimizations"]["decoder"] = entries[variant]["optimizations"]["decoder"] + \
                        add_search_head(path, cfg.vocab_size)

                progress("checking every graph (onnx.checker, ONNX Runtime load)")
                for variant in entries:
                    for graph in ("encoder", "decoder"):
                        bundle.check_graph(staging / bf.graph_file(graph, variant))
                        entries[variant]["size_bytes"][graph] = (staging / bf.graph_file(graph, variant)).stat().st_size
                    for name in entries[variant].get("data", []):
                        entries[variant]["size_bytes"][name] = (staging / name).stat().st_size

                config = bundle.build_config(ckpt, checkpoint, entries, {}, opset)
                if lexicon is not None:
                    lexicon.save(staging / bf.LEXICON_FILE)
                    config.lexicon = bf.LEXICON_FILE
                report = _run_parity(model, sp, ckpt, data, staging, config, progress)
                config.parity = {"file": bf.PARITY_FILE, "passed": report["passed"],
                                 **{v: _summary(r) for v, r in report["variants"].items()}}
                (staging / bf.PARITY_FILE).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
                if edit is not None:
                    edit(staging, config)
                config.files = checksums.manifest(staging)   # last: every other file is written
                config.save(staging)
                bf.BundleConfig.load(staging)  # what we wrote must read back
            files = {p.name: p.stat().st_size for p in sorted(staging.iterdir())}
            progress("moving the bundle into place")
            path = bundle.finish(staging, target, archive, force)
        except BaseException:
            bundle.discard(staging)
            raise
    return BundleReport(path, config, report, files)


def _entry(variant: str, precision: str, optimizations: dict, data: list[str] | None = None) -> dict:
    """A variant's config.json entry; `data` names the external data files its graphs read."""
    entry = {"encoder": bf.graph_file("encoder", variant), "decoder": bf.graph_file("decoder", variant),
             "precision": precision, "optimizations": optimizations, "size_bytes": {}}
    return entry | ({"data": data} if data else {})


def _summary(report: dict) -> dict:
    keys = ("max_abs_logit_diff", "greedy_match_rate", "beam_match_rate", "greedy_differences", "beam_differences",
            "bleu", "bleu_delta_vs_fp32", "run")
    return {k: report[k] for k in keys if k in report}


def _run_parity(model, sp, ckpt, data: parity.ParitySet, staging, config, progress) -> dict:
    progress(f"parity: PyTorch reference on {len(data.sources)} sentences ({data.origin})")
    checker = parity.ParityChecker(model, sp, data, ckpt.language_tags[data.target_lang])
    report = {"sentences": len(data.sources), "source": data.origin, "target_lang": data.target_lang,
              "references": data.references is not None, "tolerance_fp32": parity.FP32_TOLERANCE,
              "beam_size": parity.BEAM, "pytorch_bleu": checker.torch_bleu, "variants": {}}
    for variant in config.variants:   # fp32 first: a failure there ends the export
        if variant == "fp16":
            report["variants"][variant] = _fp16_parity(checker, staging, config, progress)
        else:
            progress(f"parity: {variant}")
            report["variants"][variant] = {"run": True, **checker.check_variant(staging, config, variant)}
        if variant == "fp32":
            failures = parity.fp32_failures(report["variants"]["fp32"])
            report["passed"] = not failures
            if failures:
                raise ParityError("fp32 graphs do not reproduce the PyTorch model: " + "; ".join(failures), report)
    fp32 = report["variants"]["fp32"]
    for result in report["variants"].values():
        if result.get("run") and result["bleu"] is not None and fp32["bleu"] is not None:
            result["bleu_delta_vs_fp32"] = round(result["bleu"] - fp32["bleu"], 2)
    return report


# ONNX Runtime's own exception types, raised by a run (the runtime turns those of loading into
# ModelLoadError): NOT_IMPLEMENTED for a missing fp16 kernel, and friends.
ORT_ERRORS = tuple(getattr(ort.capi.onnxruntime_pybind11_state, name) for name in
                   ("Fail", "NotImplemented", "RuntimeException", "InvalidGraph", "InvalidArgument", "EPFail"))


def _fp16_parity(checker, staging: Path, config, progress) -> dict:
    """fp16 is meant for CUDA. Without it, try ORT's CPU provider, which lacks fp16 kernels for
    some ops in some builds; if the runtime cannot load or run the graphs on the provider, record
    that parity was not run here, and why."""
    provider = "cuda" if cuda_available() else "cpu"
    name = PROVIDERS[provider]
    progress(f"parity: fp16 on {name}")
    try:
        return {"run": True, **checker.check_variant(staging, config, "fp16", provider)}
    except (ModelLoadError, ProviderError, *ORT_ERRORS) as e:
        return {"run": False, "provider": name,
                "reason": f"fp16 parity not run on this machine: ONNX Runtime {name} cannot run the fp16 "
                          f"graphs ({type(e).__name__}: {str(e).strip().splitlines()[0][:300]})"}
