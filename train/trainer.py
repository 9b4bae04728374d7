"""The trainer: set-up (devices, DDP, data, tokenizer, model, optimizer), checkpoints (resume and
warm start) and the run from first epoch to `final.pt`. The epoch itself is `loop.py`, dev loss
and BLEU `evaluation.py`, best-k and averaging `finalise.py`, the progress and LR schedule `state.py`.
"""

from __future__ import annotations

import gc
import json
import math
import os
import random
import signal
import time
from pathlib import Path

import torch
import torch.distributed as dist
from rich.console import Console

from .checkpoint import Checkpoint, CheckpointError, Direction, ResumeState, average_state_dicts, load_checkpoint, load_model
from .config import RunConfig
from .data import CleaningReport
from .evaluation import dev_bleu, dev_loss, encode_pairs
from .finalise import Candidate, checkpoints_to_average, prune_epoch_checkpoints, record_epoch
from .loop import progress_bar, run_epoch, token_loss
from .model import Transformer
from .state import TrainingProgress, inverse_sqrt_schedule
from .tokenizer import language_tag_ids, load_tokenizer, train_tokenizer


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
        self.stop_signal = None

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
            tok_path.write_bytes(warm.tokenizer_model)
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
        self.state = TrainingProgress()
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
    def checkpoint(self, full: bool) -> Checkpoint:
        """This run as a checkpoint; `full` adds what --resume needs (optimizer, scheduler, RNG)."""
        resume = None
        if full:
            resume = ResumeState(self.optimizer.state_dict(), self.scheduler.state_dict(), {
                "torch": torch.get_rng_state(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
                "python": list(random.getstate()[1]),
                "python_pos": random.getstate()[2],
            })
        return Checkpoint(model=self.model.state_dict(), model_config=self.run.model,
                          tokenizer_model=self.sp.serialized_model_proto(), language_tags=self.tag_ids,
                          directions=self.directions(), languages=self.run.languages, run_config=self.run.to_dict(),
                          tokenizer_path=str(self.tokenizer_path), progress=self.state, resume=resume)

    def directions(self) -> list[Direction]:
        """The directions this run trains."""
        return sorted({Direction(c.src, c.tgt) for c in self.run.data.train} |
                      {Direction(c.tgt, c.src) for c in self.run.data.train if c.both_directions})

    def _restore(self, path: Path) -> None:
        ckpt = load_checkpoint(path, map_location=self.device)
        if ckpt.resume is None:
            raise CheckpointError(f"{path}: has no optimizer state to resume from")
        self.model.load_state_dict(ckpt.model)
        self.optimizer.load_state_dict(ckpt.resume.optimizer)
        self.scheduler.load_state_dict(ckpt.resume.scheduler)
        self.state = ckpt.progress
        rng = ckpt.resume.rng
        torch.set_rng_state(rng["torch"].cpu())
        if rng["cuda"]:
            torch.cuda.set_rng_state_all([s.cpu() for s in rng["cuda"]])
        random.setstate((3, tuple(rng["python"]), rng["python_pos"]))
        self.log(f"resumed from {path}: epoch {self.state.epoch + 1}, batch {self.state.batch_in_epoch}, "
                 f"step {self.state.step}")

    def _load_warm_start(self, path: Path) -> Checkpoint:
        """The checkpoint to start from; CheckpointError unless it is a usable model of this config's shape."""
        ckpt, _ = load_model(path)
        ours = {k: v for k, v in self.run.model.to_dict().items() if k != "vocab_size"}
        theirs = {k: ckpt.model_config.to_dict().get(k) for k in ours}
        if ours != theirs:
            diff = ", ".join(f"{k}: {theirs[k]!r} there, {ours[k]!r} here" for k in ours if ours[k] != theirs[k])
            raise CheckpointError(f"{path}: its model differs from this config ({diff})")
        return ckpt

    def _warm_start(self, ckpt: Checkpoint, path: Path) -> None:
        self.model.load_state_dict(ckpt.model)  # copies into our fp32 parameters, whatever it was stored in
        self.state.step = self.state.rewarm_from = ckpt.progress.step
        self.state.epoch = ckpt.progress.epoch
        self.scheduler.last_epoch = self.state.step
        for group, base in zip(self.optimizer.param_groups, self.scheduler.base_lrs):
            group["lr"] = base * self.scheduler.lr_lambdas[0](self.state.step)
        self.log(f"warm start from {path}: its weights and tokenizer, a fresh optimizer, "
                 f"LR schedule from step {self.state.step} (epoch {self.state.epoch + 1})")

    def save_last(self) -> None:
        if self.is_main:
            self.checkpoint(full=True).save(self.checkpoint_dir / "last.pt")

    # ----- training ----------------------------------------------------------------------------
    def _handle_signal(self, signum, frame):
        self.stop_signal = signum

    def train(self) -> dict:
        o = self.optim_cfg
        previous = {s: signal.signal(s, self._handle_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            with progress_bar(self.console, self.is_main and self.console.is_terminal) as progress:
                while self.state.epoch < o.epochs:
                    if run_epoch(self, progress):
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

    def loss(self, batch, model=None):
        """`loop.token_loss` with this run's device, precision and label smoothing (DDP's model by default)."""
        return token_loss(model or self.ddp_model, batch, self.device, self.use_bf16, self.optim_cfg.label_smoothing)

    def append_metrics(self, record: dict) -> None:
        if self.is_main:
            self.metrics_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.metrics_path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"time": time.time(), **record}) + "\n")

    # ----- evaluation --------------------------------------------------------------------------
    def dev_loss(self) -> float:
        # The bare model: DDP's forward would start collectives that only this rank joins.
        return dev_loss(self.model, self.dev_data, self.optim_cfg.max_tokens, self.loss)

    def dev_bleu(self, model: Transformer | None = None) -> float:
        score = dev_bleu(model or self.model, self.sp, self.dev_data, self.tag_ids, self.directions(),
                         self.optim_cfg.dev_bleu_max_sentences, self.optim_cfg.eval_beam, self.device)
        self.model.train()
        return score

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
            self.append_metrics({"type": "dev", "epoch": epoch, "step": st.step, "dev_loss": loss,
                                 "dev_ppl": math.exp(loss), "dev_bleu": bleu})
            path = self.checkpoint_dir / f"epoch{epoch:03d}.pt"
            st.epoch, st.batch_in_epoch = epoch, 0
            record_epoch(st, bleu, path)
            self.checkpoint(full=False).save(path)
            prune_epoch_checkpoints(st, o.keep_best, o.average_last)
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

    # ----- finalisation ------------------------------------------------------------------------
    def finish(self) -> dict:
        """Average the last N epoch checkpoints, pick the better of it and the best epoch, and write
        `final.pt`, `summary.json` and the learning curve."""
        if not self.is_main:
            return {}
        st, o = self.state, self.optim_cfg
        summary = {"steps": st.step, "epochs": st.epoch, "best": [list(b) for b in st.best[:o.keep_best]]}
        candidates = []
        if st.best:
            candidates.append(Candidate("best epoch", st.best[0].bleu, Path(st.best[0].path)))
        last = checkpoints_to_average(st, o.average_last)
        if last:
            averaged = Transformer(self.run.model).to(self.device)
            averaged.load_state_dict(average_state_dicts(last))
            bleu = self.dev_bleu(averaged)
            ckpt = self.checkpoint(full=False)
            ckpt.model, ckpt.averaged_from = averaged.state_dict(), [str(p) for p in last]
            avg_path = self.checkpoint_dir / "averaged.pt"
            ckpt.save(avg_path)
            self.log(f"average of the last {len(last)} epochs: dev BLEU {bleu:.2f}")
            summary["averaged_dev_bleu"] = bleu
            candidates.append(Candidate(f"average of last {len(last)}", bleu, avg_path))
        if candidates:
            name, bleu, path = max(candidates, key=lambda c: c.bleu)
            load_checkpoint(path).save(self.out / "final.pt")
            summary |= {"final": name, "final_dev_bleu": bleu, "final_checkpoint": str(self.out / "final.pt")}
            self.log(f"final model: {name} (dev BLEU {bleu:.2f}) -> {self.out / 'final.pt'}")
        (self.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        if self.metrics_path.exists():
            from .plots import plot_learning_curve  # matplotlib only when a run ends
            plot_learning_curve(self.metrics_path, self.out / "learning_curve.png")
        return summary
