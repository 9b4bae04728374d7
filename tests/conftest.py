"""Shared fixtures: a tiny real model, trained for seconds on real Tatoeba pairs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).parent.parent

# Keep the suite light on a 2-core machine and deterministic.
os.environ.setdefault("OMP_NUM_THREADS", "1")


def tiny_run_dict(output_dir: Path, **optim) -> dict:
    """A bidirectional de<->en run over the Tatoeba sample: 2+2 layers, d_model 64."""
    return {
        "name": "tiny",
        "output_dir": str(output_dir),
        "languages": ["de", "en"],
        "data": {
            "data_dir": str(FIXTURES / "tatoeba"),
            "train": [{"src_file": "train.de", "tgt_file": "train.en", "src": "de", "tgt": "en",
                       "both_directions": True}],
            "dev": [{"src_file": "dev.de", "tgt_file": "dev.en", "src": "de", "tgt": "en"}],
        },
        "tokenizer": {"vocab_size": 600},
        "model": {"d_model": 64, "n_heads": 4, "encoder_layers": 2, "decoder_layers": 2, "ffn_dim": 128,
                  "dropout": 0.1, "activation_dropout": 0.1, "max_positions": 128},
        "optim": {"max_tokens": 1024, "warmup_steps": 30, "lr": 3e-3, "epochs": 4, "average_last": 2,
                  "keep_best": 1, "num_threads": 1, "log_every_steps": 1000, **optim},
    }


def train_tiny(output_dir: Path, **optim):
    from mtkit.train.config import RunConfig
    from mtkit.train.trainer import Trainer

    run = RunConfig.from_dict(tiny_run_dict(output_dir, **optim))
    trainer = Trainer(run)
    trainer.prepare(resume=False)
    trainer.train()
    return trainer


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> Path:
    """final.pt of a tiny de<->en model trained on the Tatoeba sample (a few seconds on CPU)."""
    out = tmp_path_factory.mktemp("tiny_run")
    train_tiny(out)
    return out / "final.pt"


@pytest.fixture(scope="session")
def tiny_bundle(tiny_checkpoint, tmp_path_factory) -> Path:
    """The tiny checkpoint exported by mt-export (fp32 + int8 graphs, parity checked): a bundle directory."""
    from mtkit.export import export_bundle

    out = tmp_path_factory.mktemp("tiny_bundle") / "bundle"
    return export_bundle(tiny_checkpoint, out, quantize="int8").path


@pytest.fixture(scope="session")
def tiny_translator(tiny_bundle):
    """The tiny bundle's fp32 graphs on the CPU provider, one thread."""
    from mtkit.runtime import Translator
    return Translator(tiny_bundle, variant="fp32", threads=1)
