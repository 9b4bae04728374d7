"""Odd files given as a checkpoint (mt-export, mt-average, --resume, --init-from share the loader) and
mt-average's own checks: one line naming the file, never a traceback or torch's advice."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import invoke, tiny_run_dict
from mtkit.train.average import main as average_main
from mtkit.train.checkpoint import CheckpointError, load_checkpoint


def test_empty_file(tmp_path):
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(CheckpointError, match="empty.pt: empty file, not a checkpoint"):
        load_checkpoint(tmp_path / "empty.pt")


@pytest.mark.parametrize("text", ['name = "tiny"\n', "hello world\n"])    # the second gave "KeyError: 101"
def test_foreign_file_is_named_without_torchs_advice(tmp_path, text):
    toml = tmp_path / "tiny.toml"
    toml.write_text(text)
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(toml)
    assert str(e.value) == f"{toml}: not a checkpoint written by mt-train (torch could not read it)"
    assert "weights_only" not in str(e.value)


def test_truncated_checkpoint_says_so_in_one_line(fixture_checkpoint, tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(fixture_checkpoint.read_bytes()[:2000])
    with pytest.raises(CheckpointError, match="bad.pt: not a readable checkpoint") as e:
        load_checkpoint(bad)
    assert "\n" not in str(e.value) and "likelihood" not in str(e.value)   # torch's advice is cut off


def test_directory_names_its_checkpoints(fixture_checkpoint, tmp_path):
    run = tmp_path / "runs" / "tiny"
    run.mkdir(parents=True)
    with pytest.raises(CheckpointError, match=r"runs: is a directory; give a checkpoint file such as .*NAME/final.pt"):
        load_checkpoint(tmp_path / "runs")
    (run / "final.pt").write_bytes(b"")
    with pytest.raises(CheckpointError, match=r"runs: is a directory; give one of its checkpoints: .*tiny/final.pt"):
        load_checkpoint(tmp_path / "runs")


def test_damaged_contents_are_an_error_not_a_traceback(fixture_checkpoint, tmp_path):
    raw = torch.load(fixture_checkpoint, weights_only=True)
    raw["language_tags"] = ["de", "en"]        # a list where a dict belongs
    torch.save(raw, tmp_path / "odd.pt")
    with pytest.raises(CheckpointError, match="odd.pt: unreadable config"):
        load_checkpoint(tmp_path / "odd.pt")


# ----- mt-average ---------------------------------------------------------------------------------

def test_init_from_allows_another_dropout_but_not_another_shape(fixture_checkpoint):
    from dataclasses import replace

    from mtkit.train.resume import load_warm_start

    config = load_checkpoint(fixture_checkpoint).model_config
    load_warm_start(fixture_checkpoint, replace(config, dropout=config.dropout + 0.2))      # fine-tune with more dropout
    with pytest.raises(CheckpointError, match="its model differs from this config .*ffn_dim"):
        load_warm_start(fixture_checkpoint, replace(config, ffn_dim=config.ffn_dim * 2))


def test_average_allows_another_dropout(fixture_checkpoint, tmp_path, capsys):
    """Dropout is training-only: a fine-tuned model with other dropout still interpolates."""
    ckpt = load_checkpoint(fixture_checkpoint)
    ckpt.model_config.dropout, ckpt.model_config.activation_dropout = 0.3, 0.2
    ckpt.save(tmp_path / "tuned.pt")
    code, _, err = invoke(average_main, [str(tmp_path / "mix.pt"), str(fixture_checkpoint), str(tmp_path / "tuned.pt")],
                          capsys)
    assert code == 0, err
    assert load_checkpoint(tmp_path / "mix.pt").model_config == load_checkpoint(fixture_checkpoint).model_config
    ckpt.model_config.max_positions += 1     # a real shape difference is still refused, and named
    ckpt.save(tmp_path / "other.pt")
    code, _, err = invoke(average_main, [str(tmp_path / "bad.pt"), str(fixture_checkpoint), str(tmp_path / "other.pt")],
                          capsys)
    assert code == 1 and "another model shape" in err and "max_positions" in err and "dropout" not in err


@pytest.mark.parametrize("weight", ["nan", "inf", "-1", "0"])
def test_average_refuses_weights_that_are_not_finite_and_positive(fixture_checkpoint, tmp_path, capsys, weight):
    code, _, err = invoke(average_main, [str(tmp_path / "mix.pt"), f"{fixture_checkpoint}:{weight}",
                                         str(fixture_checkpoint)], capsys)
    assert code == 1 and "a weight must be a finite number > 0" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "mix.pt").exists()


def test_average_errors_name_the_file(fixture_checkpoint, tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "empty.pt").write_bytes(b"")
    cases = [([tmp_path / "afile" / "x.pt", fixture_checkpoint, fixture_checkpoint], "afile: not a directory"),
             ([tmp_path / "mix.pt", fixture_checkpoint, tmp_path / "empty.pt"],
              "empty.pt: empty file, not a checkpoint")]
    for args, message in cases:
        code, _, err = invoke(average_main, [str(a) for a in args], capsys)
        assert code == 1 and message in err and len(err.splitlines()) == 1, err


# ----- writing ------------------------------------------------------------------------------------

def test_save_never_replaces_what_is_not_a_regular_file(fixture_checkpoint, tmp_path):
    """A FIFO here, as a device such as /dev/null would be; and a directory."""
    ckpt = load_checkpoint(fixture_checkpoint)
    os.mkfifo(tmp_path / "pipe.pt")
    (tmp_path / "dir.pt").mkdir()
    with pytest.raises(CheckpointError, match=f"{tmp_path / 'pipe.pt'}: is not a regular file; a checkpoint replaces"):
        ckpt.save(tmp_path / "pipe.pt")
    with pytest.raises(CheckpointError, match=f"{tmp_path / 'dir.pt'}: is a directory; a checkpoint replaces"):
        ckpt.save(tmp_path / "dir.pt")
    assert (tmp_path / "pipe.pt").is_fifo() and sorted(p.name for p in tmp_path.iterdir()) == ["dir.pt", "pipe.pt"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="RLIMIT_FSIZE is POSIX")
def test_a_full_disk_while_training_is_one_line_and_leaves_no_temporary_file(tmp_path):
    """The disk fills as a file size limit makes it (a write past it fails with EFBIG), in mt-train's
    process only: last.pt (2 MB with the optimizer's state) cannot be written. torch's error for the
    short write becomes the command's one line, and no temporary file is left."""
    import resource

    import tomli_w

    out = tmp_path / "run"
    (tmp_path / "tiny.toml").write_text(tomli_w.dumps(tiny_run_dict(out)))

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1_000_000, 1_000_000))

    done = subprocess.run([str(Path(sys.executable).with_name("mt-train")), str(tmp_path / "tiny.toml"),
                           "--max-steps", "2"], capture_output=True, text=True, timeout=300, preexec_fn=small_disk,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == f"mt-train: error: {out / 'checkpoints' / 'last.pt'}: cannot write (File too large)"
    assert list((out / "checkpoints").iterdir()) == []
