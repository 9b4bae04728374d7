"""One epoch of training: token batches from the saved data position, gradient accumulation over
ranks, clipping, the LR schedule, progress and metrics, periodic and interrupt checkpoints."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist
import torch.nn.functional as F
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from mtkit.runtime.vocab import PAD_ID

from .batching import collate, make_batches

if TYPE_CHECKING:
    from .trainer import Trainer


class TrainingDiverged(Exception):
    """The loss became NaN or infinite; nothing from that step was kept."""


class Interrupted(Exception):
    """SIGINT/SIGTERM arrived; a resumable checkpoint was written first."""

    def __init__(self, message: str, signum: int):
        super().__init__(message)
        self.signum = signum


def diverged(trainer: Trainer, what: str) -> TrainingDiverged:
    """The error for a NaN or infinite `what`, with the way on that is open from here."""
    last = trainer.checkpoint_dir / "last.pt"
    if trainer.saved_step is None:
        return TrainingDiverged(f"{what}; no checkpoint was saved yet: lower optim.lr (--set optim.lr=...) "
                                f"or check the data, then start again")
    # --resume keeps the optimizer's learning rate; a new one needs a fresh optimizer (--init-from).
    return TrainingDiverged(f"{what}; the last good checkpoint is {last} (step {trainer.saved_step}): go on from it "
                            f"with a lower learning rate in a new run (--init-from {last} --set optim.lr=... "
                            f"--output-dir NEW_DIR), or check the data")


def progress_bar(console: Console, enabled: bool) -> Progress:
    return Progress(
        TextColumn("epoch {task.fields[epoch]}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
        TextColumn("loss {task.fields[loss]:.3f} ppl {task.fields[ppl]:.1f} lr {task.fields[lr]:.2e} "
                   "{task.fields[tok_s]:.0f} tok/s"),
        TimeElapsedColumn(), TimeRemainingColumn(), console=console, disable=not enabled)


def token_loss(model, batch, device, use_bf16: bool, label_smoothing: float):
    """(label-smoothed loss, NLL, target tokens) of a batch, both losses summed over tokens."""
    tokens = int((batch[3] != PAD_ID).sum())         # counted on the host: no wait for the GPU
    src_ids, src_mask, dec_in, labels = (t.to(device, non_blocking=True) for t in batch)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16):
        logits = model(src_ids, src_mask, dec_in)
    logits = logits.float().view(-1, logits.size(-1))
    labels = labels.view(-1)
    loss = F.cross_entropy(logits, labels, ignore_index=PAD_ID, label_smoothing=label_smoothing, reduction="sum")
    with torch.no_grad():
        nll = F.cross_entropy(logits, labels, ignore_index=PAD_ID, reduction="sum")
    return loss, nll, tokens


def run_epoch(trainer: Trainer, progress: Progress) -> bool:
    """One epoch from the saved data position. Returns True when max_steps is reached."""
    o, st, data = trainer.optim_cfg, trainer.state, trainer.train_data
    batches = make_batches(data.src_lens, data.tgt_lens, o.max_tokens, o.seed, st.epoch)
    # Every rank must run the same number of backward passes, or DDP's all-reduce hangs.
    batches = batches[: len(batches) - len(batches) % trainer.world]
    task = progress.add_task("train", total=len(batches), completed=st.batch_in_epoch, epoch=st.epoch + 1,
                             loss=0.0, ppl=0.0, lr=0.0, tok_s=0.0)
    trainer.model.train()
    window_loss = window_nll = window_tokens = 0.0
    window_start = time.time()
    bi = st.batch_in_epoch
    while bi < len(batches):
        group = batches[bi: bi + o.accum_steps * trainer.world]
        mine = group[trainer.rank::trainer.world]
        trainer.optimizer.zero_grad(set_to_none=True)
        step_tokens, step_loss, step_nll = 0, 0.0, 0.0
        for j, indices in enumerate(mine):
            loss, nll, tokens = trainer.loss(collate(data.src, data.tgt, indices))
            if not torch.isfinite(loss):
                raise diverged(trainer, f"loss is {loss.item()} at step {st.step + 1} "
                                        f"(epoch {st.epoch + 1}, batch {bi + j})")
            loss.backward()
            step_tokens += tokens
            step_loss += loss.item()
            step_nll += nll.item()
        total_tokens = step_tokens
        if trainer.world > 1:
            count = torch.tensor([step_tokens], device=trainer.device, dtype=torch.float64)
            dist.all_reduce(count)
            total_tokens = int(count.item())
        # Gradients are sums over tokens; normalise by the tokens of the whole (global) step.
        scale = trainer.world / max(total_tokens, 1)
        for p in trainer.model.parameters():
            if p.grad is not None:
                p.grad.mul_(scale)
        grad_norm = torch.nn.utils.clip_grad_norm_(trainer.model.parameters(), o.clip_norm)
        if not torch.isfinite(grad_norm):
            raise diverged(trainer, f"gradient norm is {grad_norm.item()} at step {st.step + 1}")
        trainer.optimizer.step()
        trainer.scheduler.step()
        if trainer.ema is not None:
            trainer.ema.update(trainer.model)
        st.step += 1
        bi += len(group)
        st.batch_in_epoch = bi
        window_loss += step_loss
        window_nll += step_nll
        window_tokens += step_tokens
        elapsed = max(time.time() - window_start, 1e-9)
        per_token = max(window_tokens, 1)
        fields = dict(loss=window_loss / per_token, ppl=math.exp(min(window_nll / per_token, 50)),
                      lr=trainer.scheduler.get_last_lr()[0], tok_s=window_tokens * trainer.world / elapsed)
        # Every step, not only at log steps: the bar shows the loss and lr from an epoch's first step.
        progress.update(task, completed=bi, **fields)
        if st.step % o.log_every_steps == 0 or bi >= len(batches) or st.step == o.max_steps:
            if not trainer.console.is_terminal:     # the progress bar shows them on a terminal
                trainer.log(f"epoch {st.epoch + 1} batch {bi}/{len(batches)} step {st.step} "
                            f"loss {fields['loss']:.3f} ppl {fields['ppl']:.2f} lr {fields['lr']:.2e} "
                            f"{fields['tok_s']:.0f} tok/s")
            trainer.append_metrics({"type": "train", "epoch": st.epoch + 1, "step": st.step, **fields})
            window_loss = window_nll = window_tokens = 0.0
            window_start = time.time()
        if o.save_every_steps and st.step % o.save_every_steps == 0:
            trainer.save_last()
        trainer.stop_if_asked()
        if o.max_steps and st.step >= o.max_steps:
            trainer.save_last()
            progress.remove_task(task)
            return True
    progress.remove_task(task)
    return False
