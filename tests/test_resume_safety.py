"""--resume and the run directory: checkpoints named inside the run (a copied or moved run touches no
other run's files), damaged checkpoints refused, one mt-train per output_dir, a run's end redone after
a stop, and a resume refused when the data or the training settings changed. One tiny run is trained
once; each test resumes a copy of it."""

import hashlib
import json
import os
import shutil
import signal
import zipfile
from pathlib import Path

import pytest
import torch

from conftest import FIXTURES, invoke, tiny_run_dict, train_tiny
from mtkit.train.checkpoint import CheckpointError, damaged_member, load_checkpoint
from mtkit.train.config import RunConfig
from mtkit.train.data import DataError
from mtkit.train.loop import Interrupted
from mtkit.train.resume import load_warm_start
from mtkit.train.trainer import LOCK_FILE, NothingToTrain, RunLocked, Trainer

EPOCHS = 3


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished 3-epoch run (keep_best 1, average_last 2): read-only, tests copy it."""
    out = tmp_path_factory.mktemp("finished") / "run"
    train_tiny(out, epochs=EPOCHS)
    return out


def copy_of(finished: Path, tmp_path: Path, name: str = "copy") -> Path:
    return Path(shutil.copytree(finished, tmp_path / name))


def trainer(out: Path, resume=True, **optim) -> Trainer:
    t = Trainer(RunConfig.from_dict(tiny_run_dict(out, **{"epochs": EPOCHS, **optim})))
    t.prepare(resume=resume)
    return t


def listing(directory: Path) -> dict:
    """{file name: hash of its bytes}: what the directory holds."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in sorted(directory.iterdir())}


def damage(path: Path, member: str) -> None:
    """Flip up to 3000 bytes of the data of the zip member whose name ends with `member`."""
    with zipfile.ZipFile(path) as archive:
        info = next(i for i in archive.infolist() if i.filename.endswith(member))
    raw = bytearray(path.read_bytes())
    header = info.header_offset
    start = header + 30 + int.from_bytes(raw[header + 26:header + 28], "little") + \
        int.from_bytes(raw[header + 28:header + 30], "little")
    for i in range(start, start + min(3000, info.file_size)):
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))


def test_a_copied_run_resumes_from_elsewhere_without_touching_the_original(finished, tmp_path, monkeypatch):
    """Its last.pt (here as older versions wrote it: paths to the original run's files) names epoch
    checkpoints by file name in its own checkpoints/: pruning deletes none of the original's, and the
    best epoch and the average are the copy's."""
    copy = copy_of(finished, tmp_path)
    last = load_checkpoint(copy / "checkpoints/last.pt")
    assert all("/" not in p for p in last.progress.epoch_checkpoints + [b.path for b in last.progress.best])
    old = [str(finished / "checkpoints" / Path(p).name) for p in last.progress.epoch_checkpoints]
    last.progress.epoch_checkpoints = old
    last.progress.best = [b._replace(path=str(finished / "checkpoints" / b.path)) for b in last.progress.best]
    last.save(copy / "checkpoints/last.pt")
    original = listing(finished / "checkpoints")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    run = trainer(copy, epochs=EPOCHS + 2)
    run.train()
    assert listing(finished / "checkpoints") == original
    kept = sorted(p.name for p in (copy / "checkpoints").glob("epoch*.pt"))
    progress = load_checkpoint(copy / "checkpoints/last.pt").progress
    assert progress.epoch_checkpoints == [f"epoch{e:03d}.pt" for e in range(1, EPOCHS + 3)]
    assert {b.path for b in progress.best} <= set(kept) and kept[-2:] == ["epoch004.pt", "epoch005.pt"]
    assert load_checkpoint(copy / "checkpoints/averaged.pt").averaged_from == ["epoch004.pt", "epoch005.pt"]
    assert json.loads((copy / "summary.json").read_text())["steps"] == progress.step
    assert (copy / "final.pt").is_file()


def test_a_damaged_checkpoint_is_refused_and_the_runs_tokenizer_kept(finished, tmp_path):
    """torch does not check the zip's CRCs: flipped bytes in a tensor loaded as weights, and in the
    pickle they replaced the run's tokenizer.model with bytes SentencePiece cannot load."""
    copy = copy_of(finished, tmp_path)
    last, tokenizer = copy / "checkpoints/last.pt", copy / "tokenizer.model"
    good, tokenizer_bytes = last.read_bytes(), tokenizer.read_bytes()
    assert damaged_member(last) is None
    damage(last, "/data/0")
    with pytest.raises(CheckpointError, match=r"last.pt: damaged \(member \S+/data/0 fails its checksum\); use an"):
        load_checkpoint(last)
    with pytest.raises(CheckpointError, match="damaged"):
        trainer(copy, epochs=EPOCHS + 1)
    with pytest.raises(CheckpointError, match="damaged"):
        load_warm_start(last, RunConfig.from_dict(tiny_run_dict(copy)).model)
    last.write_bytes(good)
    damage(last, "data.pkl")
    with pytest.raises(CheckpointError, match=r"member \S+/data.pkl fails its checksum"):
        trainer(copy, epochs=EPOCHS + 1)
    assert tokenizer.read_bytes() == tokenizer_bytes
    # A sound file whose stored tokenizer does not load: refused before tokenizer.model is written.
    last.write_bytes(good)
    ckpt = load_checkpoint(last)
    ckpt.tokenizer_model = ckpt.tokenizer_model[:1000]
    ckpt.save(last)
    tokenizer.write_bytes(b"the run's own")
    with pytest.raises(DataError, match="last.pt: its tokenizer is damaged"):
        trainer(copy, epochs=EPOCHS + 1)
    assert tokenizer.read_bytes() == b"the run's own"
    # Files the check leaves to torch: the legacy format, and a zip cut short (no directory).
    torch.save({"x": torch.zeros(2)}, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    (tmp_path / "cut.pt").write_bytes(good[:5000])
    assert damaged_member(tmp_path / "legacy.pt") is None and damaged_member(tmp_path / "cut.pt") is None


def test_a_second_run_on_the_same_output_dir_is_refused(finished, tmp_path, capsys):
    """The first holds output_dir's lock from prepare to the end of train; a second, resumed or new, is
    refused in one line naming the first's pid, and writes nothing."""
    from mtkit.train.cli import main

    copy = copy_of(finished, tmp_path)
    first = trainer(copy, epochs=EPOCHS + 1)
    before = listing(copy / "checkpoints"), (copy / "metrics.jsonl").read_text()
    with pytest.raises(RunLocked, match=f"another mt-train is writing to {copy} \\(pid {os.getpid()}\\)"):
        trainer(copy, epochs=EPOCHS + 1)
    with pytest.raises(RunLocked):
        trainer(copy, resume=False)                 # not "pass --resume": that would be refused too
    config = tmp_path / "tiny.toml"
    import tomli_w
    config.write_text(tomli_w.dumps(tiny_run_dict(copy, epochs=EPOCHS + 1)))
    capsys.readouterr()
    code, _, err = invoke(main, [str(config), "--resume"], capsys)
    assert code == 1 and err.startswith("mt-train: error: another mt-train is writing to") and err.count("\n") == 1
    assert (listing(copy / "checkpoints"), (copy / "metrics.jsonl").read_text()) == before
    assert (copy / LOCK_FILE).read_text().strip() == str(os.getpid())
    first.release_lock()                            # as the end of first.train() does
    trainer(copy, epochs=EPOCHS + 1).release_lock()


def test_the_runs_end_is_redone_after_a_stop(finished, tmp_path):
    """A signal during the last epoch's dev evaluation stops the run (it used to be ignored) once that
    epoch is saved; one while averaging stops it before final.pt. --resume then does the run's end
    without training (it used to say "nothing to train"), and once done, nothing is left to do."""
    copy = copy_of(finished, tmp_path)
    run = trainer(copy, epochs=EPOCHS + 1)
    real_dev_loss = run.dev_loss

    def dev_loss():
        os.kill(os.getpid(), signal.SIGINT)
        return real_dev_loss()

    run.dev_loss = dev_loss
    with pytest.raises(Interrupted, match="stopped by signal 2 at step .*continue with: "):
        run.train()
    last = load_checkpoint(copy / "checkpoints/last.pt")
    assert last.progress.epoch == EPOCHS + 1 and (copy / "checkpoints/epoch004.pt").is_file()
    assert json.loads((copy / "summary.json").read_text())["steps"] < last.progress.step   # the old end's

    run = trainer(copy, epochs=EPOCHS + 1)
    assert run.finalise_only and run.state.step == last.progress.step
    real_dev_bleu = run.dev_bleu

    def dev_bleu(model=None):
        if model is not None:                       # the averaged model's
            os.kill(os.getpid(), signal.SIGINT)
        return real_dev_bleu(model)

    run.dev_bleu = dev_bleu
    (copy / "final.pt").unlink()
    # A safety net: where the run's end leaves SIGINT to Python, its KeyboardInterrupt would stop pytest.
    previous = signal.signal(signal.SIGINT, lambda *_: None)
    try:
        with pytest.raises(Interrupted, match="stopped by signal 2"):
            run.train()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert not (copy / "final.pt").exists()

    run = trainer(copy, epochs=EPOCHS + 1)
    assert run.finalise_only
    summary = run.train()
    assert run.state.step == last.progress.step and summary["steps"] == last.progress.step
    assert (copy / "final.pt").is_file() and json.loads((copy / "summary.json").read_text()) == summary
    with pytest.raises(NothingToTrain, match="raise --epochs"):
        trainer(copy, epochs=EPOCHS + 1)
    # A run that stopped early (no dev BLEU gain for `patience` epochs) is finished too; a greater
    # patience continues it.
    last = load_checkpoint(copy / "checkpoints/last.pt")
    last.progress.epochs_without_gain = 2
    last.save(copy / "checkpoints/last.pt")
    (copy / "summary.json").unlink()
    for patience, finishing in ((2, True), (3, False), (0, False)):
        run = trainer(copy, epochs=EPOCHS + 5, patience=patience)
        assert run.finalise_only == finishing, patience
        run.release_lock()


def test_resume_refuses_changed_data_and_training_settings(finished, tmp_path, monkeypatch):
    """The same corpus files with fewer lines would give other batches at the saved data position;
    label smoothing, clipping and precision would make another run of it. Both are refused, with
    --init-from as the way on, and leave the run as it was."""
    copy = copy_of(finished, tmp_path)
    data = tmp_path / "data/tatoeba"
    data.mkdir(parents=True)
    for name in ("dev.de", "dev.en"):
        shutil.copy(FIXTURES / "tatoeba" / name, data)
    for name in ("train.de", "train.en"):
        lines = (FIXTURES / "tatoeba" / name).read_text(encoding="utf-8").splitlines(keepends=True)
        (data / name).write_text("".join(lines[:300]), encoding="utf-8")
    before = listing(copy / "checkpoints")
    monkeypatch.setenv("MT_DATA_DIR", str(tmp_path / "data"))
    with pytest.raises(CheckpointError, match=r"training data changed since this run was saved \(\d+ pairs, sha256 "
                                              r"\w+ there, 600 pairs, .*--init-from .*last.pt"):
        trainer(copy, epochs=EPOCHS + 1)
    monkeypatch.setenv("MT_DATA_DIR", str(FIXTURES))
    with pytest.raises(CheckpointError, match=r"these differ: optim.label_smoothing \(0.1 there, 0.2 here\); "
                                              r"optim.clip_norm \(1.0 there, 5.0 here\); optim.precision"):
        trainer(copy, epochs=EPOCHS + 1, label_smoothing=0.2, clip_norm=5.0, precision="bf16")
    assert listing(copy / "checkpoints") == before
    trainer(copy, epochs=EPOCHS + 1, patience=2, keep_best=2).release_lock()   # what may change still may
