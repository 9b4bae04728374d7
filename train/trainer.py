"""The trainer: a run's parts (devices, DDP, data, tokenizer, model, optimizer) and the run from
its first epoch to `final.pt`. The epoch itself is `loop.py`; dev loss and BLEU `evaluation.py`; the
end of each epoch and of the run (best-k, early stopping, averaging) `finalise.py`; --resume and
--init-from `resume.py`; the progress and LR schedule `state.py`.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import time
from pathlib import Path

import torch
import torch.distributed as dist
from rich.console import Console

from mtkit.runtime.resumable import locked
from mtkit.runtime.text_io import atomic_output, blocking_file, cannot_write

from .checkpoint import Checkpoint, CheckpointError, Direction, ResumeState, load_checkpoint
from .config import RunConfig
from .data import CleaningReport, DataError
from .ema import EMA_FILE, WeightAverage
from .evaluation import dev_bleu, dev_loss, encode_pairs
from .finalise import end_epoch, end_run, finalised
from .loop import Interrupted, progress_bar, run_epoch, token_loss
from .model import Transformer
from .resume import check_same_data, load_resume, load_warm_start, restore, rng_state, warm_start
from .state import TrainingProgress, inverse_sqrt_schedule
from .tokenizer import language_tag_ids, load_tokenizer, tokenizer_from_bytes, train_tokenizer

LOCK_FILE = ".mt-train.lock"      # in output_dir: held (flock) by the run writing there, with its pid


class NothingToTrain(Exception):
    """The run is already at its --epochs or --max-steps; nothing was loaded or written."""


class DeviceError(Exception):
    """More training processes on this machine than it has GPUs."""


class RunLocked(Exception):
    """Another mt-train is writing to this output_dir."""


def training_device(local_rank: int, cuda_devices: int) -> torch.device:
    """The GPU of this process's local rank (torchrun sets LOCAL_RANK), or the CPU where torch sees none."""
    if not cuda_devices:
        return torch.device("cpu")
    if local_rank >= cuda_devices:
        raise DeviceError(f"process {local_rank} of this machine has no GPU: torch sees {cuda_devices} CUDA "
                          f"device(s); start at most {cuda_devices} (torchrun --nproc_per_node {cuda_devices}), "
                          "or hide them (CUDA_VISIBLE_DEVICES=) to train on the CPU")
    return torch.device("cuda", local_rank)


class Trainer:
    def __init__(self, run: RunConfig, console: Console | None = None):
        self.run = run
        self.console = console or Console(stderr=True)
        self.out = Path(run.output_dir)
        self.optim_cfg = run.optim
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.is_main = self.rank == 0
        self.device = training_device(int(os.environ.get("LOCAL_RANK", "0")), torch.cuda.device_count())
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        if self.world > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")
        precision = self.optim_cfg.precision
        # bf16 pays on CPUs with AMX / AVX512-BF16 (~25% faster steps on the Xeon we trained on), not on older ones.
        self.use_bf16 = precision == "bf16" or (precision == "auto" and self.device.type == "cuda")
        if self.optim_cfg.num_threads:
            torch.set_num_threads(self.optim_cfg.num_threads)
        self.checkpoint_dir = self.out / "checkpoints"
        self.metrics_path = self.out / "metrics.jsonl"
        self.stop_signal = None
        self.saved_step = None                      # the step of this run's last.pt, once there is one
        self.finalise_only = False                  # --resume of a run whose training ended but not its end
        self.lock = None                            # output_dir's lock file, open while this run holds it
        self.data_fingerprint = None                # the training data's, saved in last.pt for --resume
        self.ema: WeightAverage | None = None       # optim.ema_decay's moving average of the weights (rank 0)
        self.ema_bleu: tuple[int, float] | None = None    # (its updates, its dev BLEU) when last scored
        # What the messages tell the user to run to continue (the CLI sets the options the run was given).
        self.resume_command = f"mt-train {run.path} --resume"

    # ----- setup -------------------------------------------------------------------------------
    def log(self, message: str) -> None:
        if not self.is_main:
            return
        # As written, never as rich markup ('[data] holdout' is a config key, not a style). A log file gets
        # one unwrapped line per message: rich wraps at 80 columns off a terminal.
        terminal = self.console.is_terminal
        self.console.print(f"[{time.strftime('%H:%M:%S')}] {message}", soft_wrap=not terminal, markup=False,
                           highlight=terminal)

    def prepare(self, resume: bool, init_from: Path | None = None) -> None:
        """Load data, tokenizer and model. `resume` continues this run exactly from last.pt;
        `init_from` starts this run from another checkpoint's weights and tokenizer, with a fresh
        optimizer and the LR schedule continued from that checkpoint's step (a warm start). Holds
        output_dir's lock from here to the end of `train`."""
        # What hold_lock's mkdir will make: a refused start takes it away again, leaving no empty run.
        made = [d for d in (self.out, *self.out.parents) if not d.exists()] if self.is_main else []
        try:
            self._prepare(resume, init_from)
        except BaseException:
            if made and self.lock is not None:
                (self.out / LOCK_FILE).unlink(missing_ok=True)    # while still held: no other run has it
            self.release_lock()
            for folder in made:
                try:
                    folder.rmdir()              # only if empty: keeps anything the start did write
                except OSError:
                    break
            raise

    def _prepare(self, resume: bool, init_from: Path | None) -> None:
        if resume and init_from:
            raise ValueError("pass either resume or init_from, not both")
        run = self.run
        # Every refusal comes before any file is written (and all but a change in the data, before the
        # data is read): a refused start must leave the run in output_dir as it was.
        last = self.checkpoint_dir / "last.pt"
        if self.out.exists() and not self.out.is_dir():
            raise FileExistsError(f"{self.out}: is a file, not a directory; choose another output_dir")
        if (blocker := blocking_file(self.out)) is not None:
            raise FileExistsError(f"{blocker}: not a directory, so output_dir {self.out} cannot be made")
        if why := cannot_write(self.out):       # a config error like any other: found before the data is read
            raise DataError(f"{why}; set another output_dir")
        if self.out.is_dir():
            self.hold_lock()                    # first: a running run's files are not this run's to judge
        resumed = load_resume(last, run.to_dict(), self.device) if resume else None
        if not resume and last.exists():
            raise FileExistsError(f"{last} exists: pass --resume to continue that run, or choose another output_dir")
        warm = load_warm_start(Path(init_from), run.model) if init_from else None
        source = resumed or warm                    # a checkpoint brings its progress and its tokenizer
        try:
            self.check_work_left(source.progress if source else TrainingProgress(), last if resumed else init_from)
        except NothingToTrain:
            # Training ended but the run's end did not (a Ctrl-C while averaging): do that end now.
            if not resumed or finalised(self.out, resumed.progress):
                raise
            self.finalise_only = True
        if resumed and 0 < run.optim.patience <= resumed.progress.epochs_without_gain:
            self.finalise_only = not finalised(self.out, resumed.progress)     # stopped early, likewise
        self.hold_lock()
        # Either split empty is refused here (DataError), before the tokenizer or model is built; dev
        # first, as its files are usually the smaller.
        dev_pairs = run.load_split("dev")
        report = CleaningReport()
        train_pairs = run.load_split("train", report)
        held_out = "" if run.data.dev else " held out of the training data ([data] holdout)"
        self.log(f"train data: {len(train_pairs)} pairs an epoch, after max_pairs and repeat (cleaning "
                 f"{report.summary()}); dev: {len(dev_pairs)} pairs{held_out}")
        tok_path = self.out / "tokenizer.model"
        if source:
            # The checkpoint's tokenizer, whatever is on disk: its ids are the ones the weights know.
            # Written to tok_path only once it loaded and the data check passed (below).
            self.sp = tokenizer_from_bytes(source.tokenizer_model, last if resumed else init_from)
        elif self.is_main:
            t0 = time.time()
            sentences = [s for p in train_pairs for s in (p.src, p.tgt)]
            self.sp = train_tokenizer(sentences, run.languages, run.tokenizer, tok_path, seed=run.optim.seed)
            self.log(f"trained SentencePiece ({self.sp.vocab_size()} pieces) in {time.time() - t0:.0f}s -> {tok_path}")
        if self.world > 1 and not source:
            dist.barrier()                      # rank 0 has written the tokenizer it trained
            self.sp = load_tokenizer(tok_path)
        self.tokenizer_path = tok_path
        self.tag_ids = language_tag_ids(self.sp, run.languages)
        max_len = run.model.max_positions
        self.train_data = encode_pairs(self.sp, train_pairs, self.tag_ids, max_len)
        self.dev_data = encode_pairs(self.sp, dev_pairs, self.tag_ids, max_len)
        self.data_fingerprint = self.train_data.fingerprint()
        if resumed:
            check_same_data(last, resumed, self.data_fingerprint)
        if source and self.is_main:
            self.write_tokenizer(tok_path, source.tokenizer_model)

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
        if resumed:
            self.state = restore(resumed, self.model, self.optimizer, self.scheduler)
            self.saved_step = self.state.step
            if self.finalise_only:
                self.log(f"{last}: training ended at step {self.state.step}, but not the run (no final.pt or "
                         f"summary.json yet): finishing it")
            else:
                self.log(f"resumed from {last}: epoch {self.state.epoch + 1}, batch {self.state.batch_in_epoch}, "
                         f"step {self.state.step}")
        if warm:
            warm_start(warm, self.model, self.optimizer, self.scheduler, self.state)
            self.log(f"warm start from {init_from}: its weights and tokenizer, a fresh optimizer, "
                     f"LR schedule from step {self.state.step} (epoch {self.state.epoch + 1})")
        if run.optim.ema_decay and self.is_main:
            self.ema = self.start_average(continued=resumed is not None)
        elif resumed and (self.checkpoint_dir / EMA_FILE).is_file():
            self.log(f"{self.checkpoint_dir / EMA_FILE} is not updated by this run (ema_decay is 0); "
                     f"set optim.ema_decay to go on with it")
        self.ddp_model = self.model
        if self.world > 1:
            self.ddp_model = torch.nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)

    def write_tokenizer(self, path: Path, model: bytes) -> None:
        """Put the checkpoint's tokenizer `model` (loaded already) at `path`, atomically, unless it is there."""
        if path.is_file() and path.read_bytes() == model:
            return
        if path.exists():
            self.log(f"{path} differs from the checkpoint's tokenizer; writing the checkpoint's back")
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(path, binary=True) as f:
            f.write(model)

    def hold_lock(self) -> None:
        """Take output_dir's lock for this run (rank 0, which writes the files), or RunLocked: a second
        mt-train there would interleave its checkpoints and metrics with the first's. Creates output_dir."""
        if self.lock is not None or not self.is_main:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        file = open(self.out / LOCK_FILE, "a+", encoding="utf-8")
        if not locked(file):
            file.seek(0)
            holder = file.read().strip() or "unknown"
            file.close()
            raise RunLocked(f"another mt-train is writing to {self.out} (pid {holder}); wait for it to end, "
                            f"or choose another output_dir")
        file.seek(0)
        file.truncate()
        file.write(f"{os.getpid()}\n")
        file.flush()
        self.lock = file

    def release_lock(self) -> None:
        if self.lock is not None:
            self.lock.close()                   # closing the file releases the lock
            self.lock = None

    def check_work_left(self, progress: TrainingProgress, source) -> None:
        """NothingToTrain unless `progress` (where the run starts) is short of epochs and max_steps;
        both count from the start of the run `source` continues, as the LR schedule does."""
        o = self.optim_cfg
        where = f"{source} is" if source else "the run is"
        counted = " (counted from the start of the run it comes from)" if source else ""
        if progress.epoch >= o.epochs:
            raise NothingToTrain(f"nothing to train: {where} already at epoch {progress.epoch} and epochs is "
                                 f"{o.epochs}{counted}; raise --epochs")
        if o.max_steps and progress.step >= o.max_steps:
            raise NothingToTrain(f"nothing to train: {where} already at step {progress.step} and max_steps is "
                                 f"{o.max_steps}{counted}; raise --max-steps")

    # ----- checkpoints -------------------------------------------------------------------------
    def checkpoint(self, full: bool) -> Checkpoint:
        """This run as a checkpoint; `full` adds what --resume needs (optimizer, scheduler, RNG)."""
        resume = ResumeState(self.optimizer.state_dict(), self.scheduler.state_dict(), rng_state(),
                             self.data_fingerprint) if full else None
        return Checkpoint(model=self.model.state_dict(), model_config=self.run.model,
                          tokenizer_model=self.sp.serialized_model_proto(), language_tags=self.tag_ids,
                          directions=self.directions(), languages=self.run.languages, run_config=self.run.to_dict(),
                          tokenizer_path=str(self.tokenizer_path), progress=self.state, resume=resume)

    def start_average(self, continued: bool) -> WeightAverage:
        """The moving average of the weights: on --resume, the run's own from ema.pt where it has one;
        else a new one, from the weights the run starts with."""
        path, decay = self.checkpoint_dir / EMA_FILE, self.optim_cfg.ema_decay
        if not (continued and path.is_file()):
            self.log(f"moving average of the weights (decay {decay}): a new one, from the weights the run starts with")
            return WeightAverage(self.model.state_dict(), decay)
        try:
            saved = load_checkpoint(path, map_location=self.device)
            ours = self.model.state_dict()
            if saved.model.keys() != ours.keys() or any(saved.model[k].shape != v.shape for k, v in ours.items()):
                raise CheckpointError(f"{path}: its weights are not this model's")
        except CheckpointError as e:
            raise CheckpointError(f"{e}; delete it to start the moving average afresh") from None
        if saved.progress.step != self.state.step:
            self.log(f"{path} is from step {saved.progress.step}, last.pt from step {self.state.step}: "
                     f"the moving average goes on from its own step")
        self.log(f"moving average of the weights (decay {decay}): goes on from {path}, "
                 f"{saved.ema_updates or 0:,} updates so far")
        return WeightAverage(saved.model, decay, saved.ema_updates or 0)

    def average_checkpoint(self) -> Checkpoint:
        """The moving average as a checkpoint of this run (what ema.pt holds)."""
        ckpt = self.checkpoint(full=False)
        ckpt.model, ckpt.ema_updates = self.ema.weights, self.ema.updates
        return ckpt

    def average_bleu(self) -> float:
        """The moving average's dev BLEU, scored once for each state of it (an epoch's end and the
        run's end are often the same step)."""
        if self.ema_bleu is None or self.ema_bleu[0] != self.ema.updates:
            model = Transformer(self.run.model).to(self.device)
            model.load_state_dict(self.ema.weights)
            self.ema_bleu = (self.ema.updates, self.dev_bleu(model))
        return self.ema_bleu[1]

    def directions(self) -> list[Direction]:
        """The directions this run trains."""
        return sorted({Direction(c.src, c.tgt) for c in self.run.data.train} |
                      {Direction(c.tgt, c.src) for c in self.run.data.train if c.both_directions})

    def save_last(self) -> None:
        if self.is_main:
            self.checkpoint(full=True).save(self.checkpoint_dir / "last.pt")
            if self.ema is not None:
                self.average_checkpoint().save(self.checkpoint_dir / EMA_FILE)
        self.saved_step = self.state.step

    # ----- training ----------------------------------------------------------------------------
    def _handle_signal(self, signum, frame):
        self.stop_signal = signum

    def stop_if_asked(self) -> None:
        """Once SIGINT or SIGTERM has arrived: save last.pt (unless it holds this step already) and raise
        Interrupted, with the command that continues the run."""
        if self.stop_signal is None:
            return
        if self.saved_step != self.state.step:
            self.save_last()
        raise Interrupted(f"stopped by signal {self.stop_signal} at step {self.state.step}: "
                          f"{self.checkpoint_dir / 'last.pt'}; continue with: {self.resume_command}", self.stop_signal)

    def train(self) -> dict:
        o = self.optim_cfg
        self.hold_lock()
        previous = {s: signal.signal(s, self._handle_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            with progress_bar(self.console, self.is_main and self.console.is_terminal) as progress:
                while not self.finalise_only and self.state.epoch < o.epochs:
                    if run_epoch(self, progress):
                        break  # max_steps reached
                    stop = end_epoch(self)
                    self.stop_if_asked()    # a signal during the dev evaluation, now that the epoch is saved
                    if stop:
                        break  # early stopping
            summary = end_run(self)         # with the handlers still ours: a signal there stops it cleanly too
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            self.release_lock()
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
