"""The training loop: token batches, label smoothing, AdamW with warmup + inverse-sqrt decay,
per-epoch dev loss and BLEU, atomic checkpoints with exact resume, best-k and averaging."""

from __future__ import annotations

import gc
import json
import math
import os
import random
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import sacrebleu
import torch
import torch.distributed as dist
import torch.nn.functional as F
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from mtkit.runtime.batching import decode_all
from mtkit.runtime.search import DecodeOptions
from mtkit.runtime.vocab import PAD_ID, source_ids

from .batching import collate, make_batches
from .checkpoint import CheckpointError, average_state_dicts, load_checkpoint, load_model, save_checkpoint
from .config import RunConfig
from .data import CleaningReport, Pair
from .model import Transformer
from .reference import TorchBackend
from .tokenizer import language_tag_ids, load_tokenizer, train_tokenizer


class TrainingDiverged(Exception):
    """The loss became NaN or infinite; nothing from that step was kept."""


class Interrupted(Exception):
    """SIGINT/SIGTERM arrived; a resumable checkpoint was written first."""


@dataclass
class Progress_:
    """Where training stands; saved in every checkpoint so `--resume` continues exactly."""
    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best: list = field(default_factory=list)       # [(bleu, epoch, path)], best first
    epochs_without_gain: int = 0
    epoch_checkpoints: list = field(default_factory=list)
    rewarm_from: int | None = None                  # step at which --init-from restarted the optimizer


REWARM_STEPS = 100  # after --init-from: fresh Adam moments must not take full-size steps at once


def inverse_sqrt_schedule(warmup: int, rewarm_from=lambda: None):
    """Linear warmup to the peak LR, then decay with 1/sqrt(step) (the Noam shape, peak set directly).
    `rewarm_from()` gives the step where a warm start reset the optimizer; the LR ramps up again there."""
    def factor(step: int) -> float:
        start = rewarm_from()
        ramp = 1.0 if start is None else min(1.0, (step - start + 1) / REWARM_STEPS)
        step = max(step, 1)
        return min(step / warmup, math.sqrt(warmup / step)) * ramp
    return factor


@dataclass
class EncodedSplit:
    src: list[np.ndarray]
    tgt: list[np.ndarray]
    refs: list[str]
    raw_src: list[str]

    @property
    def src_lens(self):
        return [len(s) for s in self.src]

    @property
    def tgt_lens(self):
        return [len(t) + 1 for t in self.tgt]


def encode_pairs(sp, pairs: list[Pair], tag_ids: dict[str, int], max_len: int) -> EncodedSplit:
    src_pieces = sp.encode([p.src for p in pairs])
    tgt_pieces = sp.encode([p.tgt for p in pairs])
    src = [np.asarray(source_ids(s, tag_ids[p.tgt_lang], max_len), dtype=np.int32) for s, p in zip(src_pieces, pairs)]
    tgt = [np.asarray(t[: max_len - 1], dtype=np.int32) for t in tgt_pieces]
    return EncodedSplit(src, tgt, [p.tgt for p in pairs], [p.src for p in pairs])


class Trainer:
    def __init__(self, run: RunConfig, console: Console | None = None):
        self.run = run
        self.console = console or Console(stderr=True)
        self.out = Path(run.output_dir)
        self.optim_cfg = run.optim
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.is_main = self.rank == 0
        if self.world > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        if torch.cuda.is_available():
            self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(self.device)
        else:
            self.device = torch.device("cpu")
        precision = self.optim_cfg.precision
        # bf16 pays on CPUs with AMX / AVX512-BF16 (~25% faster steps on the Xeon we trained on), not on older ones.
        self.use_bf16 = precision == "bf16" or (precision == "auto" and self.device.type == "cuda")
        if self.optim_cfg.num_threads:
            torch.set_num_threads(self.optim_cfg.num_threads)
        self.checkpoint_dir = self.out / "checkpoints"
        self.metrics_path = self.out / "metrics.jsonl"
        self._stop_signal = None

    # ----- setup -------------------------------------------------------------------------------
    def log(self, message: str) -> None:
        if self.is_main:
            self.console.log(message)

    def prepare(self, resume: bool, init_from: Path | None = None) -> None:
        """Load data, tokenizer and model. `resume` continues this run exactly from last.pt;
        `init_from` starts this run from another checkpoint's weights and tokenizer, with a fresh
        optimizer and the LR schedule continued from that checkpoint's step (a warm start)."""
        if resume and init_from:
            raise ValueError("pass either resume or init_from, not both")
        run = self.run
        warm = self._load_warm_start(Path(init_from)) if init_from else None
        report = CleaningReport()
        train_pairs = run.load_split("train", report)
        dev_pairs = run.load_split("dev")
        self.log(f"train data: {report.summary()}; dev: {len(dev_pairs)} pairs")
        tok_path = self.out / "tokenizer.model"
        if warm and self.is_main:
            tok_path.parent.mkdir(parents=True, exist_ok=True)
            tok_path.write_bytes(warm["tokenizer_model"])
        if (resume or warm) and tok_path.exists():
            self.sp = load_tokenizer(tok_path)
        elif self.is_main:
            t0 = time.time()
            sentences = [s for p in train_pairs for s in (p.src, p.tgt)]
            self.sp = train_tokenizer(sentences, run.languages, run.tokenizer, tok_path, seed=run.optim.seed)
            self.log(f"trained SentencePiece ({self.sp.vocab_size()} pieces) in {time.time() - t0:.0f}s -> {tok_path}")
        if self.world > 1:
            dist.barrier()
            self.sp = load_tokenizer(tok_path)
        self.tokenizer_path = tok_path
        self.tag_ids = language_tag_ids(self.sp, run.languages)
        max_len = run.model.max_positions
        self.train_data = encode_pairs(self.sp, train_pairs, self.tag_ids, max_len)
        self.dev_data = encode_pairs(self.sp, dev_pairs, self.tag_ids, max_len)

        run.model.vocab_size = self.sp.vocab_size()
        torch.manual_seed(run.optim.seed)
        self.model = Transformer(run.model).to(self.device)
        self.log(f"model: {self.model.num_parameters() / 1e6:.2f}M parameters, {run.model}")
        decay = [p for n, p in self.model.named_parameters() if p.dim() >= 2]
        no_decay = [p for n, p in self.model.named_parameters() if p.dim() < 2]
        o = run.optim
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": o.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=o.lr, betas=o.betas, eps=1e-8)
        self.state = Progress_()
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, inverse_sqrt_schedule(o.warmup_steps, lambda: self.state.rewarm_from))
        if resume:
            self._restore(self.checkpoint_dir / "last.pt")
        elif (self.checkpoint_dir / "last.pt").exists():
            raise FileExistsError(f"{self.checkpoint_dir / 'last.pt'} exists: pass --resume to continue that run, "
                                  f"or choose another output_dir")
        if warm:
            self._warm_start(warm, Path(init_from))
        self.ddp_model = self.model
        if self.world > 1:
            self.ddp_model = torch.nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)

    # ----- checkpoints -------------------------------------------------------------------------
    def _payload(self, full: bool) -> dict:
        payload = {
            "model": self.model.state_dict(),
            "model_config": self.run.model.to_dict(),
            "run_config": self.run.to_dict(),
            "tokenizer_path": str(self.tokenizer_path),
            "tokenizer_model": self.sp.serialized_model_proto(),
            "vocab_size": self.sp.vocab_size(),
            "language_tags": self.tag_ids,
            "languages": self.run.languages,
            "directions": sorted({(c.src, c.tgt) for c in self.run.data.train} |
                                 {(c.tgt, c.src) for c in self.run.data.train if c.both_directions}),
            "progress": asdict(self.state),
        }
        if full:
            payload |= {
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "rng": {
                    "torch": torch.get_rng_state(),
                    "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
                    "python": list(random.getstate()[1]),
                    "python_pos": random.getstate()[2],
                },
            }
        return payload

    def _restore(self, path: Path) -> None:
        ckpt = load_checkpoint(path, map_location=self.device)
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.scheduler.load_state_dict(ckpt["scheduler"])
        self.state = Progress_(**ckpt["progress"])
        rng = ckpt["rng"]
        torch.set_rng_state(rng["torch"].cpu())
        if rng["cuda"]:
            torch.cuda.set_rng_state_all([s.cpu() for s in rng["cuda"]])
        random.setstate((3, tuple(rng["python"]), rng["python_pos"]))
        self.log(f"resumed from {path}: epoch {self.state.epoch + 1}, batch {self.state.batch_in_epoch}, "
                 f"step {self.state.step}")

    def _load_warm_start(self, path: Path) -> dict:
        """The checkpoint to start from; CheckpointError unless it is a usable model of this config's shape."""
        ckpt, _ = load_model(path)
        ours = {k: v for k, v in self.run.model.to_dict().items() if k != "vocab_size"}
        theirs = {k: ckpt["model_config"].get(k) for k in ours}
        if ours != theirs:
            diff = ", ".join(f"{k}: {theirs[k]!r} there, {ours[k]!r} here" for k in ours if ours[k] != theirs[k])
            raise CheckpointError(f"{path}: its model differs from this config ({diff})")
        return ckpt

    def _warm_start(self, ckpt: dict, path: Path) -> None:
        self.model.load_state_dict(ckpt["model"])  # copies into our fp32 parameters, whatever it was stored in
        done = ckpt.get("progress", {})
        self.state.step = self.state.rewarm_from = done.get("step", 0)
        self.state.epoch = done.get("epoch", 0)
        self.scheduler.last_epoch = self.state.step
        for group, base in zip(self.optimizer.param_groups, self.scheduler.base_lrs):
            group["lr"] = base * self.scheduler.lr_lambdas[0](self.state.step)
        self.log(f"warm start from {path}: its weights and tokenizer, a fresh optimizer, "
                 f"LR schedule from step {self.state.step} (epoch {self.state.epoch + 1})")

    def save_last(self) -> None:
        if self.is_main:
            save_checkpoint(self._payload(full=True), self.checkpoint_dir / "last.pt")

    # ----- training ----------------------------------------------------------------------------
    def _handle_signal(self, signum, frame):
        self._stop_signal = signum

    def train(self) -> dict:
        o = self.optim_cfg
        previous = {s: signal.signal(s, self._handle_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            with self._progress() as progress:
                while self.state.epoch < o.epochs:
                    if self._run_epoch(progress):
                        break  # max_steps reached
                    if self._end_epoch():
                        break  # early stopping
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        summary = self.finish()
        if self.world > 1:
            # DDP's reducer holds gloo work objects; freed during interpreter shutdown, they abort the
            # process ("terminate called without an active exception"), so free them now.
            self.ddp_model = self.model
            gc.collect()
            # Every rank leaves together: a rank exiting while rank 0 still writes final.pt can abort gloo.
            dist.barrier()
            dist.destroy_process_group()
        return summary

    def _progress(self) -> Progress:
        return Progress(
            TextColumn("epoch {task.fields[epoch]}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
            TextColumn("loss {task.fields[loss]:.3f} ppl {task.fields[ppl]:.1f} lr {task.fields[lr]:.2e} "
                       "{task.fields[tok_s]:.0f} tok/s"),
            TimeElapsedColumn(), TimeRemainingColumn(), console=self.console,
            disable=not (self.is_main and self.console.is_terminal))

    def _loss(self, batch, model=None):
        src_ids, src_mask, dec_in, labels = (t.to(self.device, non_blocking=True) for t in batch)
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.use_bf16):
            logits = (model or self.ddp_model)(src_ids, src_mask, dec_in)
        logits = logits.float().view(-1, logits.size(-1))
        labels = labels.view(-1)
        tokens = int((labels != PAD_ID).sum())
        loss = F.cross_entropy(logits, labels, ignore_index=PAD_ID, label_smoothing=self.optim_cfg.label_smoothing,
                               reduction="sum")
        with torch.no_grad():
            nll = F.cross_entropy(logits, labels, ignore_index=PAD_ID, reduction="sum")
        return loss, nll, tokens

    def _run_epoch(self, progress: Progress) -> bool:
        """One epoch from the saved data position. Returns True when max_steps is reached."""
        o, st, data = self.optim_cfg, self.state, self.train_data
        batches = make_batches(data.src_lens, data.tgt_lens, o.max_tokens, o.seed, st.epoch)
        # Every rank must run the same number of backward passes, or DDP's all-reduce hangs.
        batches = batches[: len(batches) - len(batches) % self.world]
        task = progress.add_task("train", total=len(batches), completed=st.batch_in_epoch, epoch=st.epoch + 1,
                                 loss=0.0, ppl=0.0, lr=0.0, tok_s=0.0)
        self.model.train()
        window_loss = window_nll = window_tokens = 0.0
        window_start = time.time()
        bi = st.batch_in_epoch
        while bi < len(batches):
            group = batches[bi: bi + o.accum_steps * self.world]
            mine = group[self.rank::self.world]
            self.optimizer.zero_grad(set_to_none=True)
            step_tokens, step_loss, step_nll = 0, 0.0, 0.0
            for j, indices in enumerate(mine):
                loss, nll, tokens = self._loss(collate(data.src, data.tgt, indices))
                if not torch.isfinite(loss):
                    raise TrainingDiverged(
                        f"loss is {loss.item()} at step {st.step + 1} (epoch {st.epoch + 1}, batch {bi + j}); "
                        f"the last good checkpoint is {self.checkpoint_dir / 'last.pt'}. Lower the learning rate "
                        f"or check the data, then resume.")
                loss.backward()
                step_tokens += tokens
                step_loss += loss.item()
                step_nll += nll.item()
            total_tokens = step_tokens
            if self.world > 1:
                t = torch.tensor([step_tokens], device=self.device, dtype=torch.float64)
                dist.all_reduce(t)
                total_tokens = int(t.item())
            # Gradients are sums over tokens; normalise by the tokens of the whole (global) step.
            scale = self.world / max(total_tokens, 1)
            for p in self.model.parameters():
                if p.grad is not None:
                    p.grad.mul_(scale)
            grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), o.clip_norm)
            if not torch.isfinite(grad_norm):
                raise TrainingDiverged(f"gradient norm is {grad_norm.item()} at step {st.step + 1}; "
                                       f"the last good checkpoint is {self.checkpoint_dir / 'last.pt'}")
            self.optimizer.step()
            self.scheduler.step()
            st.step += 1
            bi += len(group)
            st.batch_in_epoch = bi
            window_loss += step_loss
            window_nll += step_nll
            window_tokens += step_tokens
            if st.step % o.log_every_steps == 0 or bi >= len(batches) or st.step == o.max_steps:
                elapsed = max(time.time() - window_start, 1e-9)
                fields = dict(loss=window_loss / max(window_tokens, 1), ppl=math.exp(min(window_nll / max(window_tokens, 1), 50)),
                              lr=self.scheduler.get_last_lr()[0], tok_s=window_tokens * self.world / elapsed)
                progress.update(task, completed=bi, **fields)
                if self.is_main and not self.console.is_terminal:
                    self.console.log(f"epoch {st.epoch + 1} batch {bi}/{len(batches)} step {st.step} "
                                     f"loss {fields['loss']:.3f} ppl {fields['ppl']:.2f} lr {fields['lr']:.2e} "
                                     f"{fields['tok_s']:.0f} tok/s")
                self._append_metrics({"type": "train", "epoch": st.epoch + 1, "step": st.step, **fields})
                window_loss = window_nll = window_tokens = 0.0
                window_start = time.time()
            else:
                progress.update(task, completed=bi)
            if o.save_every_steps and st.step % o.save_every_steps == 0:
                self.save_last()
            if self._stop_signal is not None:
                self.save_last()
                raise Interrupted(f"stopped by signal {self._stop_signal} at step {st.step}; "
                                  f"continue with: mt-train {self.run.path} --resume")
            if o.max_steps and st.step >= o.max_steps:
                self.save_last()
                progress.remove_task(task)
                return True
        progress.remove_task(task)
        return False

    # ----- evaluation --------------------------------------------------------------------------
    @torch.no_grad()
    def dev_loss(self) -> float:
        self.model.eval()
        data = self.dev_data
        total, tokens = 0.0, 0
        for indices in make_batches(data.src_lens, data.tgt_lens, self.optim_cfg.max_tokens, 0, 0):
            # The bare model: DDP's forward would start collectives that only this rank joins.
            _, nll, n = self._loss(collate(data.src, data.tgt, indices), self.model)
            total += nll.item()
            tokens += n
        self.model.train()
        return total / max(tokens, 1)

    def dev_bleu(self, model: Transformer | None = None) -> float:
        data = self.dev_data
        n = min(len(data.src), self.optim_cfg.dev_bleu_max_sentences)
        # Evenly spaced, so a capped sample still covers every dev corpus and direction.
        picks = [i * len(data.src) // n for i in range(n)]
        hyps = translate_encoded(model or self.model, self.sp, [data.src[i].tolist() for i in picks],
                                 DecodeOptions(beam_size=self.optim_cfg.eval_beam), self.device)
        self.model.train()
        return sacrebleu.corpus_bleu(hyps, [[data.refs[i] for i in picks]]).score

    def _append_metrics(self, record: dict) -> None:
        if self.is_main:
            self.metrics_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.metrics_path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"time": time.time(), **record}) + "\n")

    def _end_epoch(self) -> bool:
        """Evaluate, checkpoint and decide on early stopping. Returns True to stop."""
        st, o = self.state, self.optim_cfg
        stop = False
        if self.is_main:
            t0 = time.time()
            loss = self.dev_loss()
            bleu = self.dev_bleu()
            epoch = st.epoch + 1
            self.log(f"epoch {epoch}: dev loss {loss:.3f} ppl {math.exp(loss):.2f} BLEU {bleu:.2f} "
                     f"({time.time() - t0:.0f}s to evaluate)")
            self._append_metrics({"type": "dev", "epoch": epoch, "step": st.step, "dev_loss": loss,
                                  "dev_ppl": math.exp(loss), "dev_bleu": bleu})
            path = self.checkpoint_dir / f"epoch{epoch:03d}.pt"
            st.epoch, st.batch_in_epoch = epoch, 0
            improved = not st.best or bleu > st.best[0][0]
            st.epochs_without_gain = 0 if improved else st.epochs_without_gain + 1
            st.best = sorted(st.best + [[bleu, epoch, str(path)]], key=lambda b: -b[0])
            st.epoch_checkpoints.append(str(path))
            save_checkpoint(self._payload(full=False), path)
            self._prune_epoch_checkpoints()
            self.save_last()
            stop = o.patience > 0 and st.epochs_without_gain >= o.patience
            if stop:
                self.log(f"early stopping: no dev BLEU gain for {o.patience} epochs")
        else:
            st.epoch, st.batch_in_epoch = st.epoch + 1, 0
        if self.world > 1:
            flag = torch.tensor([int(stop)], device=self.device)
            dist.broadcast(flag, 0)
            stop = bool(flag.item())
        return stop

    def _prune_epoch_checkpoints(self) -> None:
        """Keep the best `keep_best` by BLEU and the last `average_last`; delete the rest."""
        st, o = self.state, self.optim_cfg
        keep = {b[2] for b in st.best[: o.keep_best]} | set(st.epoch_checkpoints[-max(o.average_last, 1):])
        for p in st.epoch_checkpoints:
            if p not in keep and Path(p).exists():
                Path(p).unlink()
        st.best = [b for b in st.best if b[2] in keep]

    def finish(self) -> dict:
        """Average the last N epoch checkpoints, pick the better of it and the best epoch, and write
        `final.pt`, `scores.json` and the learning curve."""
        if not self.is_main:
            return {}
        st, o = self.state, self.optim_cfg
        summary = {"steps": st.step, "epochs": st.epoch, "best": st.best[:o.keep_best]}
        candidates = []
        if st.best:
            candidates.append(("best epoch", st.best[0][0], Path(st.best[0][2])))
        last = [Path(p) for p in st.epoch_checkpoints[-o.average_last:] if Path(p).exists()] if o.average_last > 1 else []
        if len(last) > 1:
            averaged = Transformer(self.run.model).to(self.device)
            averaged.load_state_dict(average_state_dicts(last))
            bleu = self.dev_bleu(averaged)
            payload = self._payload(full=False) | {"model": averaged.state_dict(), "averaged_from": [str(p) for p in last]}
            avg_path = self.checkpoint_dir / "averaged.pt"
            save_checkpoint(payload, avg_path)
            self.log(f"average of the last {len(last)} epochs: dev BLEU {bleu:.2f}")
            summary["averaged_dev_bleu"] = bleu
            candidates.append((f"average of last {len(last)}", bleu, avg_path))
        if candidates:
            name, bleu, path = max(candidates, key=lambda c: c[1])
            final = load_checkpoint(path)
            save_checkpoint({k: v for k, v in final.items() if k not in ("format", "version")},
                            self.out / "final.pt")
            summary |= {"final": name, "final_dev_bleu": bleu, "final_checkpoint": str(self.out / "final.pt")}
            self.log(f"final model: {name} (dev BLEU {bleu:.2f}) -> {self.out / 'final.pt'}")
        (self.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        if self.metrics_path.exists():
            from .plots import plot_learning_curve  # matplotlib only when a run ends
            plot_learning_curve(self.metrics_path, self.out / "learning_curve.png")
        return summary


def translate_encoded(model: Transformer, sp, sources: list[list[int]], opts: DecodeOptions,
                      device="cpu") -> list[str]:
    """Decode encoder inputs with the PyTorch model and return detokenized best hypotheses
    (`opts` capped by the model's positions, as the runtime caps them)."""
    results = decode_all(TorchBackend(model, device), sources, opts.for_model(model.cfg.max_positions))
    return [sp.decode(r.hypotheses[0].tokens) if r.hypotheses else "" for r in results]
