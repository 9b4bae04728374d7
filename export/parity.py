"""Parity: the exported graphs must compute what the PyTorch model computes, on real sentences.

Checked per variant, on batches that mix source lengths (so padding is exercised):
  * encoder outputs (encoder_out and every cross key/value) against `model.encode` / `model.cross_kv`;
  * decoder logits over a whole teacher-forced decode with the runtime's KV cache
    (`OnnxBackend.teacher_force`: one token a step, then a multi-token chunk after a non-empty
    past) against PyTorch's cached decode and against its full uncached forward pass
    `model(src, mask, tgt_in)`;
  * greedy and beam-4 outputs of `runtime/search.py`, run over TorchBackend and the runtime's own
    ONNX backend (opened by `runtime/graph_loading.open_backend`, as mt-translate opens it) with the
    same DecodeOptions, compared token for token with the tie-aware rule of
    `runtime/agreement.py` (a difference counts only where PyTorch itself had a near-tie);
  * BLEU of each variant when references are known.
fp32 must match (logits within 1e-4, every greedy and beam output identical or parted at a
near-tie below TIE_TOLERANCE); int8 and fp16 are reported, not required.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sacrebleu
import sentencepiece as spm
import torch

from mtkit.runtime import bundle_format as bf
from mtkit.runtime.agreement import logprobs_along, mismatch
from mtkit.runtime.batching import decode_all, pad_batch
from mtkit.runtime.onnx_backend import PROVIDERS, OnnxBackend, SessionSettings
from mtkit.runtime.search import DecodeOptions
from mtkit.runtime.graph_loading import open_backend
from mtkit.runtime.vocab import BOS_ID, source_ids
from mtkit.train.checkpoint import Checkpoint
from mtkit.train.config import RunConfig
from mtkit.train.data import DataError, read_lines
from mtkit.train.model import Transformer

from .bundle import ExportError
from mtkit.train.reference import TorchBackend

FP32_TOLERANCE = 1e-4
TIE_TOLERANCE = 1e-3     # log-prob gap under which PyTorch's own choice counts as a tie (10x the logit bound)
MAX_SENTENCES = 100
CHECK_BATCH = 8          # sentences per batch in the tensor-level checks (mixed lengths -> padding)
BEAM = 4


class ParityError(Exception):
    """The exported graphs do not reproduce the PyTorch model; the message lists what differs and
    `report` holds the measurements (for the CLI's table)."""

    def __init__(self, message: str, report: dict | None = None):
        super().__init__(message)
        self.report = report


@dataclass
class ParitySet:
    sources: list[str]
    references: list[str] | None     # None when only source sentences were given
    target_lang: str
    origin: str                      # where the sentences came from, for the report


def default_target(ckpt: Checkpoint, run: RunConfig | None) -> str:
    """The target language of the run's first dev corpus, else of the first training direction."""
    if run is not None and run.data.dev:
        return run.data.dev[0].tgt
    if ckpt.directions:
        return ckpt.directions[0].tgt
    return sorted(ckpt.language_tags)[0]


def checkpoint_run(ckpt: Checkpoint) -> RunConfig | None:
    """The run config recorded in the checkpoint, or None; DataError, KeyError or TypeError if unreadable."""
    raw = ckpt.run_config or None
    # The config file's path anchors a relative data_dir (MT_DATA_DIR overrides it).
    return RunConfig.from_dict(raw, Path(raw["path"]) if raw.get("path") else None) if raw else None


def load_parity_set(ckpt: Checkpoint, checkpoint: Path, parity_data: Path | None, target_lang: str | None,
                    limit: int = MAX_SENTENCES) -> ParitySet:
    """`parity_data` (one source per line, or TSV source<TAB>reference) or else the checkpoint's dev set.
    Unusable data is an ExportError (bad input), not a ParityError (a wrong graph)."""
    run = None
    try:
        run = checkpoint_run(ckpt)
    except (DataError, KeyError, TypeError) as e:
        if parity_data is None:
            raise ExportError(f"{checkpoint}: cannot read its run config for the dev set ({e}); "
                              f"pass --parity-data FILE") from None
    lang = target_lang or default_target(ckpt, run)
    if lang not in ckpt.language_tags:
        raise ExportError(f"target language {lang!r} has no tag in this model (tags: {sorted(ckpt.language_tags)})")
    if parity_data is not None:
        try:
            lines = [line for line in read_lines(parity_data) if line.strip()]
        except DataError as e:
            raise ExportError(str(e)) from None
        if not lines:
            raise ExportError(f"{parity_data}: no sentences")
        rows = [line.split("\t") for line in lines[:limit]]
        with_ref = all(len(r) >= 2 for r in rows)
        return ParitySet([r[0] for r in rows], [r[1] for r in rows] if with_ref else None, lang, str(parity_data))
    if run is None:
        raise ExportError(f"{checkpoint}: no run config recorded, so no dev set; pass --parity-data FILE")
    try:
        pairs = [p for p in run.load_split("dev") if p.tgt_lang == lang][:limit]
    except DataError as e:
        raise ExportError(f"cannot read the checkpoint's dev set ({e}); pass --parity-data FILE "
                          f"or set MT_DATA_DIR to the run's data directory") from None
    if not pairs:
        raise ExportError(f"{checkpoint}: the dev set has no sentences into {lang!r}; pass --parity-data FILE")
    return ParitySet([p.src for p in pairs], [p.tgt for p in pairs], lang, f"dev set of {run.name}")


def session_settings() -> SessionSettings:
    """The runtime's session settings, with OMP_NUM_THREADS intra-op threads (ORT's default when
    unset) and no optimized copy in the runtime's cache: a staging directory's graphs are loaded
    only here."""
    threads = int(os.environ.get("OMP_NUM_THREADS", "0") or 0)
    return SessionSettings(threads=threads or None, cache_optimized=False)


def chunks(steps: int) -> list[tuple[int, int]]:
    """(start, end) of each decoder call over `steps` target positions: one token a step for the
    first half, then the rest as one chunk after a non-empty past."""
    split = max(steps // 2, 1)
    return [(t, t + 1) for t in range(split)] + ([(split, steps)] if split < steps else [])


class ParityChecker:
    """Holds the PyTorch reference results so that every variant is compared with the same numbers."""

    def __init__(self, model: Transformer, sp: spm.SentencePieceProcessor, data: ParitySet, tag_id: int):
        self.model = model.eval()
        self.sp = sp
        self.data = data
        max_len = model.cfg.max_positions
        self.sources = [source_ids(p, tag_id, max_len) for p in sp.encode(data.sources)]
        # No loop ban: parity compares the graphs' own choices with the reference log-probs.
        self.greedy_opts = DecodeOptions(beam_size=1, max_length=max_len, no_repeat_loop=0)
        self.beam_opts = DecodeOptions(beam_size=BEAM, max_length=max_len, no_repeat_loop=0)
        self.torch_backend = TorchBackend(model)
        self.torch_greedy = self._tokens(decode_all(self.torch_backend, self.sources, self.greedy_opts))
        self.torch_beam = self._tokens(decode_all(self.torch_backend, self.sources, self.beam_opts))
        # Teacher-forcing targets: the references when known, else PyTorch's own greedy outputs.
        if data.references is not None:
            targets = [p[: max_len - 1] for p in sp.encode(data.references)]
        else:
            targets = [t[: max_len - 1] for t in self.torch_greedy]
        self.tgt_in = [[BOS_ID, *t] for t in targets]
        # Batches in input order, not length-sorted, so that most of them mix lengths (padding).
        self.batches = [list(range(i, min(i + CHECK_BATCH, len(self.sources))))
                        for i in range(0, len(self.sources), CHECK_BATCH)]
        self.torch_bleu = self.bleu(self.torch_greedy)

    @staticmethod
    def _tokens(results) -> list[list[int]]:
        return [r.hypotheses[0].tokens if r.hypotheses else [] for r in results]

    def bleu(self, outputs: list[list[int]]) -> float | None:
        if self.data.references is None:
            return None
        return round(sacrebleu.corpus_bleu([self.sp.decode(t) for t in outputs], [self.data.references]).score, 2)

    # ----- tensor-level checks --------------------------------------------------------------
    @torch.no_grad()
    def tensor_diffs(self, backend: OnnxBackend) -> dict:
        """Largest absolute differences of encoder outputs and of decoder logits (the backend's
        cached and chunked decode vs PyTorch's cached decode and its full forward pass)."""
        model = self.model
        enc_names = backend.names.encoder_outputs
        enc_diff = logit_vs_cached = logit_vs_full = attn_diff = 0.0
        padded_batches = 0
        for batch in self.batches:
            src_ids, src_mask = pad_batch([self.sources[i] for i in batch])
            tgt_ids, _ = pad_batch([self.tgt_in[i] for i in batch])
            padded_batches += int(not src_mask.all())
            ids_t, mask_t, tgt_t = map(torch.from_numpy, (src_ids, src_mask, tgt_ids))

            memory = model.encode(ids_t, mask_t)
            cross = model.cross_kv(memory)
            reference = [memory] + [t for kv in cross for t in kv]
            # The backend's `start` keeps only the cross keys/values: encoder_out is read here.
            outputs = backend.encoder.run(enc_names, {backend.names.src_ids: src_ids, backend.names.src_mask: src_mask})
            enc_diff = max(enc_diff, *(_maxdiff(o, r) for o, r in zip(outputs, reference)))

            # PyTorch: cached decode one token a step, and the full uncached forward pass.
            past, cached, cached_attn = None, [], []
            for t in range(tgt_t.shape[1]):
                logits, past, attn = model.decode(tgt_t[:, t:t + 1], mask_t, cross, past)
                cached.append(logits)
                cached_attn.append(attn)
            cached, cached_attn = torch.cat(cached, 1).numpy(), torch.cat(cached_attn, 1).numpy()
            full = model(ids_t, mask_t, tgt_t).numpy()

            # ONNX: the runtime's own decode, with the cross keys/values of its encoder.
            state = backend.start(src_ids, src_mask)
            calls = [backend.teacher_force(state, tgt_ids[:, a:b], need_attention=True)
                     for a, b in chunks(tgt_ids.shape[1])]
            onnx_logits, onnx_attn = (np.concatenate(parts, 1) for parts in zip(*calls))
            logit_vs_cached = max(logit_vs_cached, _maxdiff(onnx_logits, cached))
            logit_vs_full = max(logit_vs_full, _maxdiff(onnx_logits, full))
            attn_diff = max(attn_diff, _maxdiff(onnx_attn, cached_attn))
        return {
            "max_abs_encoder_diff": enc_diff,
            "max_abs_logit_diff_vs_cached": logit_vs_cached,
            "max_abs_logit_diff_vs_full": logit_vs_full,
            "max_abs_logit_diff": max(logit_vs_cached, logit_vs_full),
            "max_abs_cross_attention_diff": attn_diff,
            "batches": len(self.batches),
            "batches_with_padding": padded_batches,
        }

    # ----- search-level checks ----------------------------------------------------------------
    def check_variant(self, directory: Path, config: bf.BundleConfig, variant: str, provider: str = "cpu",
                      io_binding: bool | None = None) -> dict:
        """The report on one variant of the bundle in `directory`, opened by the runtime on `provider`
        ("cpu" or "cuda"; IOBinding by default on CUDA). The runtime's ModelLoadError or
        ProviderError when it cannot open the variant there."""
        _, backend = open_backend(directory, config, variant, provider, session_settings(), io_binding)
        report = self.tensor_diffs(backend)
        greedy = self._tokens(decode_all(backend, self.sources, self.greedy_opts))
        beam = self._tokens(decode_all(backend, self.sources, self.beam_opts))
        n = len(self.sources)
        bleu = self.bleu(greedy)
        report |= {
            "sentences": n,
            "greedy_match_rate": sum(a == b for a, b in zip(greedy, self.torch_greedy)) / n,
            "beam_match_rate": sum(a == b for a, b in zip(beam, self.torch_beam)) / n,
            "greedy_differences": differences(self.torch_backend, self.sources, greedy, self.torch_greedy, None),
            "beam_differences": differences(self.torch_backend, self.sources, beam, self.torch_beam,
                                            self.beam_opts.length_penalty),
            "tie_tolerance": TIE_TOLERANCE,
            "bleu": bleu,
            "bleu_delta_vs_pytorch": None if bleu is None else round(bleu - self.torch_bleu, 2),
            "provider": PROVIDERS[provider],
        }
        return report


@torch.no_grad()
def differences(backend, sources, outputs, references, length_penalty: float | None) -> list[str]:
    """The outputs that differ from `references` (decoded by `backend`, the reference model) where the
    reference had no near-tie, each saying where. The parity gate's rule; the tests use it too."""
    found = []
    for i, (got, ref) in enumerate(zip(outputs, references)):
        if got != ref:
            d = mismatch(ref, got, logprobs_along(backend, sources[i]), TIE_TOLERANCE, length_penalty)
            if d is not None:
                found.append(f"sentence {i + 1}: {d}")
    return found


def fp32_failures(report: dict) -> list[str]:
    """What keeps an fp32 variant from counting as a faithful export."""
    failures = []
    for key in ("max_abs_encoder_diff", "max_abs_logit_diff_vs_cached", "max_abs_logit_diff_vs_full"):
        if not report[key] <= FP32_TOLERANCE:  # `not <=` so that NaN fails too
            failures.append(f"{key} = {report[key]:.3g} > {FP32_TOLERANCE:g}")
    for search in ("greedy", "beam"):
        found = report[f"{search}_differences"]
        if found:
            failures.append(f"{search}: {len(found)} output(s) differ from PyTorch beyond a near-tie "
                            f"({'; '.join(found[:3])})")
    return failures


def _maxdiff(a, b) -> float:
    a = a.detach().numpy() if isinstance(a, torch.Tensor) else a
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else b
    if a.shape != b.shape:
        return float("inf")
    return float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max(initial=0.0))
