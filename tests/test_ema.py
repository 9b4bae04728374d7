"""The moving average of the weights (`optim.ema_decay`, train/ema.py)."""

import io

import pytest
import torch
from rich.console import Console

from conftest import tiny_run_dict
from mtkit.train.checkpoint import CheckpointError, load_checkpoint
from mtkit.train.config import RunConfig
from mtkit.train.ema import WeightAverage
from mtkit.train.model import ModelConfig, Transformer
from mtkit.train.trainer import Trainer


def test_the_average_follows_the_weights_at_its_rate():
    model = torch.nn.Linear(3, 2)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    ema = WeightAverage(model.state_dict(), decay=0.9)
    seen = [start["weight"]]
    for _ in range(3):                  # the first steps: the plain mean of every weight seen
        with torch.no_grad():
            model.weight.add_(1.0)
        seen.append(model.weight.detach().clone())
        ema.update(model)
        assert torch.allclose(ema.weights["weight"], torch.stack(seen).mean(0))
    for _ in range(18):                 # from step 9 on, n / (n + 1) > 0.9: the decay holds
        before = ema.weights["weight"].clone()
        ema.update(model)
    assert torch.allclose(ema.weights["weight"], 0.9 * before + 0.1 * model.weight)
    assert ema.updates == 21
    assert ema.weights["weight"] is not model.weight and not torch.equal(ema.weights["weight"], model.weight)


def test_tied_weights_stay_one_tensor_in_the_average():
    model = Transformer(ModelConfig(vocab_size=50, d_model=16, n_heads=2, encoder_layers=1, decoder_layers=1,
                                    ffn_dim=16, max_positions=16, tie_embeddings=True))
    ema = WeightAverage(model.state_dict(), decay=0.9)
    assert ema.weights["embed.weight"] is ema.weights["lm_head.weight"] is ema.weights["target_embed.weight"]
    with torch.no_grad():
        model.embed.weight.add_(1.0)
    before = ema.weights["embed.weight"].clone()
    ema.update(model)                   # averaged once (the mean of two), not once per name
    assert torch.allclose(ema.weights["embed.weight"], (before + model.embed.weight) / 2)


def test_a_damaged_ema_file_stops_resume_with_what_to_do(tmp_path):
    run = RunConfig.from_dict(tiny_run_dict(tmp_path, max_steps=3, ema_decay=0.9))
    trainer = Trainer(run)
    trainer.prepare(resume=False)
    trainer.train()
    ema_file = tmp_path / "checkpoints/ema.pt"
    other = load_checkpoint(ema_file)
    other.model["decoder_norm.weight"] = torch.zeros(3)
    other.save(ema_file)
    for damage in ("another model's weights", "not a checkpoint"):
        resumed = Trainer(RunConfig.from_dict(tiny_run_dict(tmp_path, max_steps=6, ema_decay=0.9)))
        with pytest.raises(CheckpointError, match=r"ema.pt: .*; delete it to start the moving average afresh"):
            resumed.prepare(resume=True)
        ema_file.write_bytes(b"not a checkpoint")
    (tmp_path / "checkpoints/ema.pt").unlink()          # as told: a new average, from last.pt's weights
    log = io.StringIO()
    resumed = Trainer(RunConfig.from_dict(tiny_run_dict(tmp_path, max_steps=6, ema_decay=0.9)),
                      Console(file=log, width=200))
    resumed.prepare(resume=True)
    assert resumed.ema.updates == 0 and "moving average of the weights (decay 0.9): a new one" in log.getvalue()
    for name, value in resumed.model.state_dict().items():
        assert torch.equal(resumed.ema.weights[name], value), name
    resumed.train()                                     # steps 4 to 6, then a resume that goes on from them
    log = io.StringIO()
    Trainer(RunConfig.from_dict(tiny_run_dict(tmp_path, max_steps=9, ema_decay=0.9)),
            Console(file=log, width=200)).prepare(resume=True)
    assert "goes on from" in log.getvalue() and "ema.pt, 3 updates so far" in log.getvalue()
