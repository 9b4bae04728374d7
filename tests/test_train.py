"""The trainer: exact resume, interruption, NaN detection, checkpoint files and outputs."""

import io
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from rich.console import Console

from conftest import REPO, invoke, tiny_run_dict, train_tiny
from mtkit.train.checkpoint import CheckpointError, load_checkpoint
from mtkit.train.config import RunConfig
from mtkit.train.loop import TrainingDiverged
from mtkit.train.trainer import NothingToTrain, Trainer


def _trainer(out: Path, resume=False, **optim) -> Trainer:
    trainer = Trainer(RunConfig.from_dict(tiny_run_dict(out, **optim)))
    trainer.prepare(resume=resume)
    return trainer


def test_resume_gives_identical_weights(tmp_path):
    """Stopping at step 30 and resuming to step 70 (across an epoch end) equals 70 steps in one go,
    the moving average of the weights included."""
    straight = _trainer(tmp_path / "a", max_steps=70, epochs=3, ema_decay=0.99)
    straight.train()
    first = _trainer(tmp_path / "b", max_steps=30, epochs=3, ema_decay=0.99)
    first.train()
    last = load_checkpoint(tmp_path / "b/checkpoints/last.pt")
    assert last.progress.step == 30
    # Refused starts come before anything is loaded or written: the run's tokenizer stays its own.
    tokenizer = tmp_path / "b/tokenizer.model"
    with pytest.raises(FileExistsError, match="pass --resume"):
        Trainer(RunConfig.from_dict(tiny_run_dict(tmp_path / "b") | {"tokenizer": {"vocab_size": 500}})).prepare(False)
    assert tokenizer.read_bytes() == last.tokenizer_model
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        _trainer(tmp_path / "none", resume=True)
    assert not (tmp_path / "none").exists()
    with pytest.raises(CheckpointError, match=r"these differ: optim.max_tokens \(1024 there, 2048 here\); optim.lr"):
        _trainer(tmp_path / "b", resume=True, max_tokens=2048, lr=1e-3)
    with pytest.raises(NothingToTrain, match="already at step 30 and max_steps is 30"):
        _trainer(tmp_path / "b", resume=True, max_steps=30, epochs=3)
    # A tokenizer file that is not the checkpoint's (as a refused start used to leave) is put back.
    tokenizer.write_bytes(load_checkpoint(REPO / "tests/fixtures/model/checkpoint.pt").tokenizer_model)
    resumed = _trainer(tmp_path / "b", resume=True, max_steps=70, epochs=3, ema_decay=0.99)
    assert resumed.state.step == 30 and tokenizer.read_bytes() == last.tokenizer_model
    assert resumed.ema.updates == 30
    resumed.train()
    assert resumed.state.step == straight.state.step == 70
    for (name, a), (_, b) in zip(straight.model.state_dict().items(), resumed.model.state_dict().items()):
        assert torch.equal(a, b), name
    assert resumed.ema.updates == straight.ema.updates == 70
    for name, a in straight.ema.weights.items():
        assert torch.equal(a, resumed.ema.weights[name]), name
    a_opt = straight.optimizer.state_dict()["state"]
    b_opt = resumed.optimizer.state_dict()["state"]
    assert all(torch.equal(a_opt[k]["exp_avg"], b_opt[k]["exp_avg"]) for k in a_opt)


def test_interrupted_run_saves_and_resumes(tmp_path, monkeypatch, capsys):
    """SIGTERM saves last.pt and exits 143 with the command that continues this very run; that
    command resumes it; a stop at --max-steps says where and how to go on; at its --max-steps
    already, nothing is trained."""
    import shlex

    import tomli_w

    from mtkit.train import loop
    from mtkit.train.cli import main

    (tmp_path / "tiny.toml").write_text(tomli_w.dumps(tiny_run_dict(tmp_path / "ignored")))
    batches = []

    def collate(*args):                         # SIGTERM during the 5th batch
        batches.append(1)
        if len(batches) == 5:
            os.kill(os.getpid(), signal.SIGTERM)
        return real_collate(*args)

    real_collate = loop.collate
    monkeypatch.setattr(loop, "collate", collate)
    out = tmp_path / "run"
    code, _, err = invoke(main, [str(tmp_path / "tiny.toml"), "--output-dir", str(out), "--set",
                                 "optim.max_tokens=1000", "--epochs", "100"], capsys)
    assert code == 143 and "terminated: stopped by signal 15 at step 5" in err
    command = shlex.split(err.split("continue with: ")[1].strip())
    assert command == ["mt-train", str(tmp_path / "tiny.toml"), "--output-dir", str(out), "--set",
                       "optim.max_tokens=1000", "--epochs", "100", "--resume"]
    code, _, err = invoke(main, command[1:] + ["--max-steps", "8"], capsys)
    assert code == 0 and load_checkpoint(out / "checkpoints/last.pt").progress.step == 8
    assert f"stopped at --max-steps 8 (step 8): {out / 'checkpoints/last.pt'}; continue with: " in err
    assert shlex.split(err.split("continue with: ")[1].strip()) == command
    code, _, err = invoke(main, command[1:] + ["--max-steps", "8"], capsys)
    assert code == 1 and "mt-train: error: nothing to train:" in err and "Traceback" not in err


def test_nan_loss_is_caught(tmp_path):
    trainer = _trainer(tmp_path)
    with torch.no_grad():
        trainer.model.decoder_layers[0].ffn.fc1.weight[0, 0] = float("nan")
    with pytest.raises(TrainingDiverged, match="loss is nan at step 1 .*; no checkpoint was saved yet"):
        trainer.train()
    trainer.save_last()
    with pytest.raises(TrainingDiverged, match=r"last good checkpoint is .*last.pt \(step 0\).*--init-from"):
        trainer.train()


def test_outputs_of_a_finished_run(tmp_path):
    log = io.StringIO()                                       # a log file: not a terminal, 80 columns
    train_tiny(tmp_path, Console(file=log, width=80), ema_decay=0.99)   # 4 short epochs
    out = tmp_path
    # One unwrapped, timestamped line per message, however long (paths, the model config).
    lines = log.getvalue().splitlines()
    assert any(len(line) > 80 for line in lines) and any("loss" in line and "tok/s" in line for line in lines)
    assert all(re.match(r"\[\d\d:\d\d:\d\d\] \S", line) for line in lines), lines
    ckpt = load_checkpoint(out / "final.pt")
    # A checkpoint records its config, tokenizer path and vocabulary.
    assert ckpt.run_config["model"]["d_model"] == 64
    assert Path(ckpt.tokenizer_path).name == "tokenizer.model"
    assert ckpt.vocab_size == 600 and len(ckpt.tokenizer_model) > 1000
    assert set(ckpt.language_tags) == {"de", "en"}
    assert sorted(map(tuple, ckpt.directions)) == [("de", "en"), ("en", "de")]
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    dev = [r for r in records if r["type"] == "dev"]
    assert [r["epoch"] for r in dev] == [1, 2, 3, 4]
    assert dev[-1]["dev_loss"] < dev[0]["dev_loss"]          # it learned something
    assert (out / "learning_curve.png").stat().st_size > 10_000
    assert (out / "checkpoints/averaged.pt").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["final_checkpoint"].endswith("final.pt")
    # The moving average of the weights: scored each epoch and at the end, a candidate for final.pt,
    # and saved as a checkpoint of its own that differs from the last weights.
    assert all(0 <= r["ema_dev_bleu"] <= 100 for r in dev) and 0 <= summary["ema_dev_bleu"] <= 100
    assert summary["final"] in ("best epoch", "average of last 2", "moving average")
    ema, last = load_checkpoint(out / "checkpoints/ema.pt"), load_checkpoint(out / "checkpoints/last.pt")
    assert ema.ema_updates == last.progress.step == summary["steps"] > 0
    assert not torch.equal(ema.model["decoder_layers.0.ffn.fc1.weight"], last.model["decoder_layers.0.ffn.fc1.weight"])
    assert any("moving average of the weights" in line for line in lines)
    # best-k pruning: keep_best=1 plus the last 2 for averaging
    assert len(list((out / "checkpoints").glob("epoch*.pt"))) <= 3


def test_the_start_says_the_dev_pairs_are_held_out_of_the_training_data(tmp_path):
    """Without a dev corpus, the count of pairs an epoch is the cleaned pairs less the holdout: the log says
    so, where it named only max_pairs and repeat (1,998 of 2,998 kept pairs, and neither was set)."""
    raw = tiny_run_dict(tmp_path) | {"tokenizer": {"vocab_size": 300, "byte_fallback": False}}
    del raw["data"]["dev"]
    raw["data"] |= {"holdout": 100, "train": [raw["data"]["train"][0] | {"both_directions": False}]}
    log = io.StringIO()
    Trainer(RunConfig.from_dict(raw), Console(file=log, width=80)).prepare(resume=False)
    start = log.getvalue().splitlines()[0]
    held = int(re.search(r"dev: (\d+) pairs held out of the training data \(\[data\] holdout\)$", start)[1])
    kept, epoch = (int(re.search(pattern, start)[1]) for pattern in (r"kept (\d+) pairs", r"(\d+) pairs an epoch"))
    assert held >= 100 and epoch == kept - held


def test_the_progress_bar_shows_the_loss_and_lr_from_the_first_step(tmp_path):
    """A terminal's bar showed 'loss 0.000 ppl 0.0 lr 0.00e+00 0 tok/s' until the first log_every_steps
    step (50 by default: minutes on a CPU, and again at each epoch's start), as if nothing trained."""
    from rich.progress import Progress

    from mtkit.train.loop import progress_bar, run_epoch

    class Shown(Progress):                  # the real bar, its fields noted at each update
        def update(self, task_id, **changes):
            super().update(task_id, **changes)
            self.shown.append(dict(self._tasks[task_id].fields))

    trainer = _trainer(tmp_path, max_steps=4, log_every_steps=1000)
    bar = progress_bar(Console(file=io.StringIO(), force_terminal=True), True)
    progress = Shown(*bar.columns, console=bar.console)
    progress.shown = []
    with progress:
        assert run_epoch(trainer, progress)                     # stopped at max_steps
    assert len(progress.shown) == 4
    assert all(f["loss"] > 0 and f["ppl"] > 1 and f["lr"] > 0 and f["tok_s"] > 0 for f in progress.shown)


@pytest.mark.parametrize("path", ["tests/fixtures/model/checkpoint.pt", "models/de-en/checkpoint.fp16.pt"])
def test_a_checkpoint_reads_and_writes_back_the_same_file_layout(tmp_path, path):
    """The typed Checkpoint keeps the version-1 layout: the committed checkpoints (the trainer's
    final.pt, and the shipped fp16 one with its `shipped_from`) load and save back key for key."""
    original = torch.load(REPO / path, weights_only=True)
    ckpt = load_checkpoint(REPO / path)
    assert ckpt.progress.step == original["progress"]["step"]
    assert [list(b) for b in ckpt.progress.best] == original["progress"]["best"]   # typed, and back
    ckpt.save(tmp_path / "again.pt")
    again = torch.load(tmp_path / "again.pt", weights_only=True)
    assert set(again) == set(original)
    for key, value in original.items():
        if key == "model":
            assert all(torch.equal(value[k], again["model"][k]) for k in value)
        else:
            assert again[key] == value, key


def test_corrupt_and_foreign_checkpoints(tmp_path, fixture_checkpoint):
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(fixture_checkpoint.read_bytes()[:5000])
    with pytest.raises(CheckpointError, match="truncated.pt: not a readable checkpoint"):
        load_checkpoint(truncated)
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(2)}, foreign)
    with pytest.raises(CheckpointError, match="not an mtkit checkpoint"):
        load_checkpoint(foreign)
    future = tmp_path / "future.pt"
    torch.save({"format": "mtkit-checkpoint", "version": 99}, future)
    with pytest.raises(CheckpointError, match="version 99 is not supported"):
        load_checkpoint(future)



@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_checkpoint_with_nan_weights_is_refused(tmp_path, fixture_checkpoint, value):
    """A diverged run's weights: mt-export's parity passed them (NaN against NaN) and wrote a bundle that
    translates into nothing."""
    raw = torch.load(fixture_checkpoint, map_location="cpu", weights_only=True)
    name = next(k for k, v in raw["model"].items() if v.is_floating_point() and v.ndim == 2)
    raw["model"][name] = torch.full_like(raw["model"][name], value)
    torch.save(raw, tmp_path / "diverged.pt")
    with pytest.raises(CheckpointError, match=f"1 weight tensor.s. hold NaN or infinity .{name}.: the run diverged"):
        load_checkpoint(tmp_path / "diverged.pt")


def test_cli_refuses_to_overwrite_a_run_and_reports_bad_config(tmp_path):
    (tmp_path / "bad.toml").write_text("languages = [\n")
    result = subprocess.run([sys.executable, "-m", "mtkit.train.cli", str(tmp_path / "bad.toml")],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 1 and "invalid TOML" in result.stderr and "Traceback" not in result.stderr
    (tmp_path / "unknown.toml").write_text('languages = ["de", "en"]\n[[data.train]]\nprefix="x"\nsrc="de"\ntgt="en"\n'
                                           '[model]\nlayers = 3\n')
    result = subprocess.run([sys.executable, "-m", "mtkit.train.cli", str(tmp_path / "unknown.toml")],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 1 and "unknown key(s) in [model]: layers" in result.stderr
    (tmp_path / "precision.toml").write_text('languages = ["de", "en"]\n[[data.train]]\nprefix="x"\nsrc="de"\ntgt="en"\n'
                                             '[optim]\nprecision = "fp8"\n')
    result = subprocess.run([sys.executable, "-m", "mtkit.train.cli", str(tmp_path / "precision.toml")],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 1 and "precision must be" in result.stderr
    result = subprocess.run([sys.executable, "-m", "mtkit.train.cli", str(tmp_path / "precision.toml"), "--resume",
                             "--init-from", "x.pt"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 2 and "--resume and --init-from exclude each other" in result.stderr
    (tmp_path / "afile").write_text("")
    (tmp_path / "good.toml").write_text('languages = ["de", "en"]\n[[data.train]]\nprefix="x"\nsrc="de"\ntgt="en"\n')
    result = subprocess.run([sys.executable, "-m", "mtkit.train.cli", str(tmp_path / "good.toml"),
                             "--output-dir", str(tmp_path / "afile" / "run")], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 1 and f"{tmp_path / 'afile'}: not a directory" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_start_refused_for_its_data_or_output_dir_is_one_line_and_leaves_nothing(tmp_path, capsys, fixture_checkpoint):
    """Empty dev or training data (also with --init-from, which needs no tokenizer training) and a missing
    corpus are refused before the tokenizer or model is built, and the output_dir the start made is gone."""
    import tomli_w

    from mtkit.train.cli import main

    ckpt = load_checkpoint(fixture_checkpoint)
    for name in ("empty.de", "empty.en"):
        (tmp_path / name).write_text("")
    empty = {"src_file": str(tmp_path / "empty.de"), "tgt_file": str(tmp_path / "empty.en")}
    out = tmp_path / "new" / "run"

    def refused(split: str, corpus: dict, *args) -> str:
        raw = tiny_run_dict(out, epochs=ckpt.progress.epoch + 1) | {"model": dict(ckpt.run_config["model"])}
        raw["data"][split][0] |= corpus
        (tmp_path / "run.toml").write_text(tomli_w.dumps(raw))
        code, _, err = invoke(main, [str(tmp_path / "run.toml"), *args], capsys)
        assert code == 1 and err.count("\n") == 1 and "Traceback" not in err, err
        assert not (tmp_path / "new").is_dir()
        return err.strip()

    files = f"{tmp_path}/empty.de, {tmp_path}/empty.en (cleaning kept 0 pairs; dropped: none)"
    assert refused("dev", empty) == f"mt-train: error: no dev pairs in {files}"
    assert refused("train", empty) == f"mt-train: error: no training pairs in {files}"
    assert refused("train", empty, "--init-from", str(fixture_checkpoint)) == \
        f"mt-train: error: no training pairs in {files}"
    assert refused("train", {"src_file": "missing.de"}).endswith("missing.de: no such file; set MT_DATA_DIR, or "
                                                                 "data_dir in the config's [data] section")
    # An output_dir that is a file; a warm start whose d_model differs, which mt-grow cannot change.
    (tmp_path / "new").write_text("mine")
    assert refused("dev", {}, "--output-dir", str(tmp_path / "new")) == \
        f"mt-train: error: {tmp_path / 'new'}: is a file, not a directory; choose another output_dir"
    assert (tmp_path / "new").read_text() == "mine"
    (tmp_path / "new").unlink()
    raw = tiny_run_dict(out) | {"model": dict(ckpt.run_config["model"], d_model=128)}
    with pytest.raises(CheckpointError, match=r"d_model: 64 there, 128 here\)$"):
        Trainer(RunConfig.from_dict(raw)).prepare(resume=False, init_from=fixture_checkpoint)


def test_ctrl_c_stops_tokenizer_training_at_once_and_writes_nothing(tmp_path):
    """SentencePiece trains in C++ for as long as the data takes (seconds here, ~9 s in this process);
    a Ctrl-C half a second in stops it within a moment, and leaves no tokenizer file."""
    import random
    import threading
    import time

    from mtkit.train.config import TokenizerConfig
    from mtkit.train.tokenizer import train_tokenizer

    rng = random.Random(0)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyzäöü", k=rng.randint(3, 10))) for _ in range(30000)]
    sentences = [" ".join(rng.choices(words, k=12)) for _ in range(20000)]
    sent = []
    timer = threading.Timer(0.5, lambda: (sent.append(time.monotonic()), os.kill(os.getpid(), signal.SIGINT)))
    # Ctrl-C as a terminal gives it, whatever this process inherited (a shell's background job ignores it).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            train_tokenizer(sentences, ["de", "en"], TokenizerConfig(vocab_size=8000), tmp_path / "tokenizer.model")
        assert sent and time.monotonic() - sent[0] < 2
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert list(tmp_path.iterdir()) == []


def test_dev_bleu_decoding_is_capped_by_the_models_positions(fixture_checkpoint, monkeypatch):
    """The dev BLEU's search (the checkpoint translator, train/reference.py) gets the model's positions (64)
    as its cap, as the runtime's does; a larger max_length is cut to it (DecodeOptions' own default is
    None: the model decides)."""
    from mtkit.runtime import translator
    from mtkit.runtime.decode_options import DecodeOptions
    from mtkit.train.reference import checkpoint_translator

    searched = []

    def decode_all(backend, sources, opts, *args, **kwargs):
        searched.append(opts)
        return real_decode_all(backend, sources, opts, *args, **kwargs)

    real_decode_all = translator.decode_all
    monkeypatch.setattr(translator, "decode_all", decode_all)
    pytorch = checkpoint_translator(fixture_checkpoint)
    model = pytorch.backend.model
    for given in (None, 512):
        pytorch.translate(["Tom nickt."], "en", DecodeOptions(beam_size=1, max_length=given), split_sentences=False)
    assert model.cfg.max_positions == 64 and [o.max_length for o in searched] == [64, 64]


def test_warm_start_from_a_half_precision_checkpoint(tmp_path, fixture_checkpoint):
    """--init-from: the weights and tokenizer of another run (here stored in fp16, as models/ ships them),
    a fresh optimizer, the LR schedule continued from its step with a short ramp; a mismatch is refused."""
    from mtkit.train.state import REWARM_STEPS

    ckpt = load_checkpoint(fixture_checkpoint)
    ckpt.model = {k: v.half() if v.is_floating_point() else v for k, v in ckpt.model.items()}
    ckpt.save(tmp_path / "fp16.pt")

    def same_shape(out: Path, **optim) -> dict:
        """The tiny run, with the checkpoint's model shape and room for one more epoch after its last."""
        raw = tiny_run_dict(out, epochs=ckpt.progress.epoch + 1, **optim)
        return raw | {"model": dict(ckpt.run_config["model"])}

    trainer = Trainer(RunConfig.from_dict(same_shape(tmp_path / "warm", max_steps=ckpt.progress.step + 5)))
    trainer.prepare(resume=False, init_from=tmp_path / "fp16.pt")
    assert (tmp_path / "warm" / "tokenizer.model").read_bytes() == ckpt.tokenizer_model
    for name, value in trainer.model.state_dict().items():
        assert value.dtype == torch.float32 and torch.equal(value.cpu(), ckpt.model[name].float()), name
    start = trainer.state.step
    assert start == ckpt.progress.step > 0 and not trainer.optimizer.state
    peak = trainer.optimizer.param_groups[0]["initial_lr"]
    assert trainer.optimizer.param_groups[0]["lr"] < peak / REWARM_STEPS * 1.01  # ramping up again
    trained_loss = trainer.dev_loss()
    trainer.train()
    assert trainer.state.step == start + 5
    assert trainer.dev_loss() < trained_loss + 0.2  # continues from the trained model, not from scratch
    resumed = Trainer(RunConfig.from_dict(same_shape(tmp_path / "warm")))
    resumed.prepare(resume=True)
    assert resumed.state.rewarm_from == start

    # The checkpoint's epochs count: a run that would end at its epoch has nothing to do, and says so.
    done = RunConfig.from_dict(same_shape(tmp_path / "done"))
    done.optim.epochs = ckpt.progress.epoch
    with pytest.raises(NothingToTrain, match=f"already at epoch {ckpt.progress.epoch} and epochs is"):
        Trainer(done).prepare(resume=False, init_from=tmp_path / "fp16.pt")
    assert not (tmp_path / "done").exists()

    bigger = same_shape(tmp_path / "other")
    bigger["model"]["encoder_layers"] = 3
    with pytest.raises(CheckpointError, match="encoder_layers: 2 there, 3 here"):
        Trainer(RunConfig.from_dict(bigger)).prepare(resume=False, init_from=tmp_path / "fp16.pt")


def test_weighted_average_of_two_checkpoints(tmp_path, fixture_checkpoint):
    """mt-average: the weighted mean of the same model's weights, normalised; other shapes refused."""
    ckpt = load_checkpoint(fixture_checkpoint)
    ckpt.model = {k: v * 3 if v.is_floating_point() else v for k, v in ckpt.model.items()}
    ckpt.save(tmp_path / "tripled.pt")
    run = [sys.executable, "-m", "mtkit.train.average"]
    result = subprocess.run(run + [str(tmp_path / "mix.pt"), f"{fixture_checkpoint}:3", f"{tmp_path / 'tripled.pt'}:1"],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    mix, original = load_checkpoint(tmp_path / "mix.pt"), load_checkpoint(fixture_checkpoint)
    for name, value in original.model.items():
        if value.is_floating_point():               # 0.75 x w + 0.25 x 3w = 1.5 w
            torch.testing.assert_close(mix.model[name], value.float() * 1.5)
    assert mix.resume is None and mix.averaged_from == [f"{fixture_checkpoint} x 0.75", f"{tmp_path / 'tripled.pt'} x 0.25"]
    assert mix.tokenizer_model == original.tokenizer_model

    ckpt.model_config.n_heads = 1
    ckpt.save(tmp_path / "other.pt")
    result = subprocess.run(run + [str(tmp_path / "bad.pt"), str(fixture_checkpoint), str(tmp_path / "other.pt")],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 1 and "another model shape" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "bad.pt").exists()
    result = subprocess.run(run + [str(tmp_path / "mix.pt"), str(fixture_checkpoint), str(fixture_checkpoint)],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 1 and "exists" in result.stderr


def test_bf16_training_on_cpu_learns(tmp_path):
    """bf16 autocast on CPU (attention kept in fp32) trains: the dev loss falls like fp32's."""
    losses = {}
    for precision in ("fp32", "bf16"):
        trainer = _trainer(tmp_path / precision, precision=precision, max_steps=40, epochs=2)
        before = trainer.dev_loss()
        trainer.train()
        losses[precision] = (before, trainer.dev_loss())
    for before, after in losses.values():
        assert after < before - 1.0
    assert abs(losses["bf16"][1] - losses["fp32"][1]) < 0.3


def test_each_training_process_gets_its_own_gpu_or_a_clear_error():
    """torchrun's local ranks map to GPUs one to one; more processes than GPUs is refused in words
    (it used to end in a CUDA traceback on the rank without one). No GPU: the CPU, whatever the rank."""
    from mtkit.train.trainer import DeviceError, training_device

    assert training_device(0, 0) == training_device(3, 0) == torch.device("cpu")
    assert training_device(1, 2) == torch.device("cuda", 1)
    with pytest.raises(DeviceError, match=r"torch sees 1 CUDA device\(s\); start at most 1 "):
        training_device(1, 1)


def test_torchrun_ddp_two_processes(tmp_path):
    """`torchrun --nproc_per_node 2 -m mtkit.train.cli` trains with DDP (gloo on CPU) and finishes; GPUs
    are hidden, so a machine with one runs the same test."""
    import tomli_w
    config = tiny_run_dict(tmp_path / "run", epochs=1, average_last=0)
    (tmp_path / "ddp.toml").write_text(tomli_w.dumps(config))
    torchrun = Path(sys.executable).with_name("torchrun")
    result = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node", "2", "-m", "mtkit.train.cli",
                             str(tmp_path / "ddp.toml")], capture_output=True, text=True, cwd=REPO, timeout=300,
                            env={**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == 0, result.stderr[-2000:]
    ckpt = load_checkpoint(tmp_path / "run/final.pt")
    single_epoch_batches = ckpt.progress.step
    assert ckpt.progress.epoch == 1 and single_epoch_batches > 0


def test_log_lines_on_a_terminal_are_shown_as_written(tmp_path):
    """On a terminal the log went through rich's markup: '[data] holdout' showed as '( holdout)', a path
    with '[/x]' in it ended the run with a MarkupError, and each line carried 'trainer.py:97'."""
    shown = io.StringIO()
    trainer = Trainer(RunConfig.from_dict(tiny_run_dict(tmp_path)), Console(file=shown, force_terminal=True,
                                                                              width=200, color_system=None))
    trainer.log("dev: 10 pairs held out of the training data ([data] holdout); /runs/a[/x]/last.pt")
    assert "([data] holdout); /runs/a[/x]/last.pt" in shown.getvalue()
    assert "trainer.py" not in shown.getvalue()


def test_cli_names_the_final_checkpoint_as_written(tmp_path, capsys):
    """'done: <final.pt>' went through rich's markup: after a whole run into a directory holding '[/x]' the
    command ended with exit 1 and a MarkupError traceback, and '[b]' vanished from the path shown."""
    import tomli_w

    from mtkit.train.cli import main

    (tmp_path / "tiny.toml").write_text(tomli_w.dumps(tiny_run_dict(tmp_path / "ignored", epochs=1)))
    out = tmp_path / "run[b]" / "[/x]"
    code, _, err = invoke(main, [str(tmp_path / "tiny.toml"), "--output-dir", str(out)], capsys)
    assert code == 0, err
    assert f"done: {out / 'final.pt'} (dev BLEU " in err
