"""The learning curve: training loss and dev loss / BLEU per step, from metrics.jsonl."""

from __future__ import annotations

import json
from pathlib import Path


def plot_learning_curve(metrics_path: Path, png_path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = [json.loads(line) for line in Path(metrics_path).read_text().splitlines() if line.strip()]
    train = [r for r in records if r["type"] == "train"]
    dev = [r for r in records if r["type"] == "dev"]
    fig, (ax_loss, ax_bleu) = plt.subplots(1, 2, figsize=(11, 4))
    ax_loss.plot([r["step"] for r in train], [r["loss"] for r in train], label="train (label-smoothed)", lw=0.8)
    ax_loss.plot([r["step"] for r in dev], [r["dev_loss"] for r in dev], "o-", label="dev NLL")
    ax_loss.set_xlabel("step")
    ax_loss.set_ylabel("loss per token")
    ax_loss.legend()
    ax_bleu.plot([r["epoch"] for r in dev], [r["dev_bleu"] for r in dev], "o-", color="tab:green")
    ax_bleu.set_xlabel("epoch")
    ax_bleu.set_ylabel("dev sacreBLEU")
    fig.suptitle(Path(metrics_path).parent.name)
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)
    plt.close(fig)
