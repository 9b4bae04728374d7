"""mt-grow (train/grow.py): a bigger model that computes what the trained one computes, and trains on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import invoke, tiny_run_dict
from mtkit.train.checkpoint import CheckpointError, load_checkpoint, load_model
from mtkit.train.config import RunConfig
from mtkit.train.grow import BRANCH_OUTPUTS, main, spread
from mtkit.train.trainer import Trainer


def test_spread_keeps_the_old_layers_in_order():
    assert spread(6, 10) == [0, None, 1, 2, None, 3, None, 4, 5, None]
    assert spread(2, 3) == [0, 1, None] and spread(2, 2) == [0, 1]
    for old, new in [(1, 4), (6, 8), (3, 12)]:
        slots = spread(old, new)
        assert len(slots) == new and [s for s in slots if s is not None] == list(range(old))


def test_grown_model_computes_the_same_and_trains(tmp_path, capsys, fixture_checkpoint):
    code, out, err = invoke(main, [str(fixture_checkpoint), str(tmp_path / "grown.pt"), "--encoder-layers", "3",
                                   "--decoder-layers", "3", "--ffn-dim", "512"], capsys)
    assert code == 0 and err == "" and "--set model.ffn_dim=512" in out
    ckpt, small = load_model(fixture_checkpoint)
    grown_ckpt, grown = load_model(tmp_path / "grown.pt")
    cfg = grown_ckpt.model_config
    assert (cfg.encoder_layers, cfg.decoder_layers, cfg.ffn_dim) == (3, 3, 512)
    assert grown_ckpt.tokenizer_model == ckpt.tokenizer_model and grown_ckpt.progress == ckpt.progress
    assert grown.num_parameters() > small.num_parameters()

    torch.manual_seed(0)
    src = torch.randint(4, cfg.vocab_size, (3, 9))
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[1, 6:] = False
    tgt = torch.randint(4, cfg.vocab_size, (3, 5))
    with torch.no_grad():
        # Same sums in another order (zero terms, other GEMM blocking): equal up to rounding.
        torch.testing.assert_close(grown(src, mask, tgt), small(src, mask, tgt), rtol=1e-4, atol=1e-4)

    # mt-train --init-from takes it at the grown shape, and the added branches leave zero.
    raw = tiny_run_dict(tmp_path / "run", epochs=ckpt.progress.epoch + 1, max_steps=ckpt.progress.step + 3)
    raw["model"] = dict(ckpt.run_config["model"]) | {"encoder_layers": 3, "decoder_layers": 3, "ffn_dim": 512}
    trainer = Trainer(RunConfig.from_dict(raw))
    trainer.prepare(resume=False, init_from=tmp_path / "grown.pt")
    trainer.train()
    state = trainer.model.state_dict()
    added = [i for i, s in enumerate(spread(2, 3)) if s is None]
    for stack in BRANCH_OUTPUTS:
        for name in BRANCH_OUTPUTS[stack]:
            assert state[f"{stack}.{added[0]}.{name}.weight"].abs().sum() > 0, (stack, name)
    assert state["encoder_layers.0.ffn.fc2.weight"][:, 256:].abs().sum() > 0     # the new FFN units too


def test_the_wrong_growth_is_refused_in_one_line(tmp_path, capsys, fixture_checkpoint):
    out = str(tmp_path / "grown.pt")
    for args, message in [([], "nothing to grow"), (["--encoder-layers", "1"], "encoder_layers 1 is smaller than"),
                          (["--ffn-dim", "64"], "ffn_dim 64 is smaller than")]:
        code, _, err = invoke(main, [str(fixture_checkpoint), out, *args], capsys)
        assert code == 1 and message in err and "Traceback" not in err and err.count("\n") == 1, err
    code, _, err = invoke(main, [str(tmp_path / "missing.pt"), out, "--ffn-dim", "512"], capsys)
    assert code == 1 and "missing.pt" in err and err.count("\n") == 1
    (tmp_path / "grown.pt").write_text("mine")
    code, _, err = invoke(main, [str(fixture_checkpoint), out, "--ffn-dim", "512"], capsys)
    assert code == 1 and "exists (use --force" in err and (tmp_path / "grown.pt").read_text() == "mine"


def test_init_from_a_smaller_model_points_to_growing(tmp_path, fixture_checkpoint):
    ckpt = load_checkpoint(fixture_checkpoint)
    raw = tiny_run_dict(tmp_path / "run", epochs=ckpt.progress.epoch + 1)
    raw["model"] = dict(ckpt.run_config["model"]) | {"ffn_dim": 512}
    with pytest.raises(CheckpointError, match=r"ffn_dim: 256 there, 512 here.*grow it first"):
        Trainer(RunConfig.from_dict(raw)).prepare(resume=False, init_from=fixture_checkpoint)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="RLIMIT_FSIZE is POSIX")
def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, fixture_checkpoint):
    """The disk fills as a file size limit makes it (EFBIG past it), in mt-grow's process only."""
    import resource

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (500_000, 500_000))    # the grown checkpoint is bigger

    out = tmp_path / "grown.pt"
    done = subprocess.run([str(Path(sys.executable).with_name("mt-grow")), str(fixture_checkpoint), str(out),
                           "--ffn-dim", "512"], capture_output=True, text=True, timeout=120, preexec_fn=small_disk)
    assert (done.returncode, done.stderr) == (1, f"mt-grow: error: {out}: cannot write (File too large)\n")
    assert list(tmp_path.iterdir()) == []


def test_force_never_replaces_what_is_not_a_regular_file(tmp_path, capsys, fixture_checkpoint):
    """A FIFO here, as a device such as /dev/null would be."""
    fifo = tmp_path / "pipe.pt"
    os.mkfifo(fifo)
    code, _, err = invoke(main, ["--force", str(fixture_checkpoint), str(fifo), "--ffn-dim", "512"], capsys)
    assert (code, err) == (1, f"mt-grow: error: {fifo}: is not a regular file; a checkpoint replaces only a file, "
                              "so choose another output\n")
    assert fifo.is_fifo() and [p.name for p in tmp_path.iterdir()] == ["pipe.pt"]
