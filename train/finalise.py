"""The end of each epoch and of the run: evaluate and checkpoint each epoch, keep the best
`keep_best` epoch checkpoints by dev BLEU and the last `average_last`, stop early when dev BLEU no
longer improves, and at the end average those last ones and make the best of them, the best epoch
and the moving average of the weights (`ema_decay`) `final.pt`."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import torch
import torch.distributed as dist

from mtkit.runtime.text_io import atomic_output

from .checkpoint import average_state_dicts, load_checkpoint
from .ema import EMA_FILE
from .model import Transformer
from .state import BestEpoch, TrainingProgress

if TYPE_CHECKING:
    from .trainer import Trainer


class Candidate(NamedTuple):
    """A model that may become final.pt."""
    name: str          # "best epoch", "average of last N" or "moving average"
    bleu: float        # dev BLEU
    path: Path


def record_epoch(progress: TrainingProgress, bleu: float, path: Path) -> None:
    """Note an epoch's checkpoint and dev BLEU (`progress.epoch` already counts it). Only the file name
    is kept: the run directory may be moved or copied, or resumed from another working directory."""
    improved = not progress.best or bleu > progress.best[0].bleu
    progress.epochs_without_gain = 0 if improved else progress.epochs_without_gain + 1
    progress.best = sorted(progress.best + [BestEpoch(bleu, progress.epoch, path.name)], key=lambda b: -b.bleu)
    progress.epoch_checkpoints.append(path.name)


def epoch_file(checkpoint_dir: Path, entry: str) -> Path:
    """The file an entry of `progress.epoch_checkpoints` or `best` names: always inside `checkpoint_dir`
    (the last part of an older entry's path), never another run's file."""
    return checkpoint_dir / Path(entry).name


def prune_epoch_checkpoints(progress: TrainingProgress, checkpoint_dir: Path, keep_best: int,
                            average_last: int) -> None:
    """Keep the best `keep_best` by BLEU and the last `average_last`; delete the rest."""
    keep = {b.path for b in progress.best[:keep_best]} | set(progress.epoch_checkpoints[-max(average_last, 1):])
    for name in progress.epoch_checkpoints:             # file names (`record_epoch`, `resume.restore`)
        if name not in keep and (file := epoch_file(checkpoint_dir, name)).is_file():
            file.unlink()
    progress.best = [b for b in progress.best if b.path in keep]


def checkpoints_to_average(progress: TrainingProgress, checkpoint_dir: Path, average_last: int) -> list[Path]:
    """The last `average_last` epoch checkpoints still on disk; none unless there are two to average."""
    if average_last <= 1:
        return []
    last = [epoch_file(checkpoint_dir, p) for p in progress.epoch_checkpoints[-average_last:]]
    last = [p for p in last if p.is_file()]
    return last if len(last) > 1 else []


def end_epoch(trainer: Trainer) -> bool:
    """Evaluate, checkpoint and decide on early stopping. Returns True to stop."""
    st, o = trainer.state, trainer.optim_cfg
    stop = False
    if trainer.is_main:
        t0 = time.time()
        loss = trainer.dev_loss()
        bleu = trainer.dev_bleu()
        epoch = st.epoch + 1
        trainer.log(f"epoch {epoch}: dev loss {loss:.3f} ppl {math.exp(loss):.2f} BLEU {bleu:.2f} "
                    f"({time.time() - t0:.0f}s to evaluate)")
        record = {"type": "dev", "epoch": epoch, "step": st.step, "dev_loss": loss, "dev_ppl": math.exp(loss),
                  "dev_bleu": bleu}
        if trainer.ema is not None:
            record["ema_dev_bleu"] = trainer.average_bleu()
            trainer.log(f"epoch {epoch}: moving average of the weights: dev BLEU {record['ema_dev_bleu']:.2f}")
        trainer.append_metrics(record)
        path = trainer.checkpoint_dir / f"epoch{epoch:03d}.pt"
        st.epoch, st.batch_in_epoch = epoch, 0
        record_epoch(st, bleu, path)
        trainer.checkpoint(full=False).save(path)
        prune_epoch_checkpoints(st, trainer.checkpoint_dir, o.keep_best, o.average_last)
        trainer.save_last()
        stop = o.patience > 0 and st.epochs_without_gain >= o.patience
        if stop:
            trainer.log(f"early stopping: no dev BLEU gain for {o.patience} epochs")
    else:
        st.epoch, st.batch_in_epoch = st.epoch + 1, 0
    if trainer.world > 1:
        flag = torch.tensor([int(stop)], device=trainer.device)
        dist.broadcast(flag, 0)
        stop = bool(flag.item())
    return stop


def end_run(trainer: Trainer) -> dict:
    """Average the last N epoch checkpoints, pick the better of it and the best epoch, and write
    `final.pt`, the learning curve and, last, `summary.json` (so that its step count says the run's end
    is complete: `finalised`). Returns the summary ({} on ranks other than 0)."""
    if not trainer.is_main:
        return {}
    st, o, out = trainer.state, trainer.optim_cfg, trainer.out
    summary = {"steps": st.step, "epochs": st.epoch, "best": [list(b) for b in st.best[:o.keep_best]]}
    candidates = []
    if st.best:
        best = epoch_file(trainer.checkpoint_dir, st.best[0].path)
        if best.is_file():
            candidates.append(Candidate("best epoch", st.best[0].bleu, best))
        else:
            trainer.log(f"{best} (the best epoch) is missing, so it cannot become final.pt")
    last = checkpoints_to_average(st, trainer.checkpoint_dir, o.average_last)
    if last:
        averaged = Transformer(trainer.run.model).to(trainer.device)
        averaged.load_state_dict(average_state_dicts(last))
        bleu = trainer.dev_bleu(averaged)
        ckpt = trainer.checkpoint(full=False)
        ckpt.model, ckpt.averaged_from = averaged.state_dict(), [p.name for p in last]
        avg_path = trainer.checkpoint_dir / "averaged.pt"
        ckpt.save(avg_path)
        trainer.log(f"average of the last {len(last)} epochs: dev BLEU {bleu:.2f}")
        summary["averaged_dev_bleu"] = bleu
        candidates.append(Candidate(f"average of last {len(last)}", bleu, avg_path))
    if trainer.ema is not None:
        bleu = trainer.average_bleu()
        ema_path = trainer.checkpoint_dir / EMA_FILE
        if not ema_path.is_file():              # saved with last.pt, but for a run resumed only to end it
            trainer.average_checkpoint().save(ema_path)
        trainer.log(f"moving average of the weights ({trainer.ema.updates} steps): dev BLEU {bleu:.2f}")
        summary["ema_dev_bleu"] = bleu
        candidates.append(Candidate("moving average", bleu, ema_path))
    trainer.stop_if_asked()     # a Ctrl-C while averaging: --resume does the run's end again
    if candidates:
        name, bleu, path = max(candidates, key=lambda c: c.bleu)
        load_checkpoint(path).save(out / "final.pt")
        summary |= {"final": name, "final_dev_bleu": bleu, "final_checkpoint": str(out / "final.pt")}
        trainer.log(f"final model: {name} (dev BLEU {bleu:.2f}) -> {out / 'final.pt'}")
    if trainer.metrics_path.exists():
        from .plots import plot_learning_curve  # matplotlib only when a run ends
        plot_learning_curve(trainer.metrics_path, out / "learning_curve.png")
    with atomic_output(out / "summary.json") as f:
        f.write(json.dumps(summary, indent=2) + "\n")
    return summary


def finalised(out: Path, progress: TrainingProgress) -> bool:
    """Whether the end of the run (`end_run`) was completed at `progress`'s step: its summary.json says so."""
    try:
        return json.loads((out / "summary.json").read_text(encoding="utf-8")).get("steps") == progress.step
    except (OSError, ValueError, AttributeError):
        return False
