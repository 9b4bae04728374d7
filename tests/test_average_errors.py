"""mt-average's refusals found by a probe: outputs it cannot write (checked before any checkpoint is
read) and weights whose sum overflows; each is one line, exit status 1, and nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import invoke
from mtkit.train.average import main as average_main
from mtkit.train.checkpoint import load_checkpoint


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc and /sys")
@pytest.mark.parametrize("out, folder", [("/proc/no-such-dir/out.pt", "/proc"), ("/sys/out.pt", "/sys")])
def test_an_output_it_cannot_write_is_refused_before_reading(fixture_checkpoint, tmp_path, capsys, out, folder):
    # The second input does not exist: the output is refused first, before any loading.
    code, _, err = invoke(average_main, [out, str(fixture_checkpoint), str(tmp_path / "missing.pt")], capsys)
    assert code == 1 and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith(f"mt-average: error: {out}: cannot write in {folder} (")
    assert not Path(out).exists()


def test_a_missing_folder_is_made_as_before(fixture_checkpoint, tmp_path, capsys):
    out = tmp_path / "new" / "mix.pt"
    code, _, err = invoke(average_main, [str(out), str(fixture_checkpoint), str(fixture_checkpoint)], capsys)
    assert code == 0, err
    assert out.is_file() and [p.name for p in tmp_path.iterdir()] == ["new"]   # no write check left behind


@pytest.mark.parametrize("weights", [("1e308", "1e308"), ("1.7e308", "1e307")])
def test_weights_whose_sum_overflows_are_refused(fixture_checkpoint, tmp_path, capsys, weights):
    args = [str(tmp_path / "mix.pt")] + [f"{fixture_checkpoint}:{w}" for w in weights]
    code, _, err = invoke(average_main, args, capsys)
    assert code == 1 and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err == "mt-average: error: the weights must add up to a finite number; scale them down\n"
    assert not (tmp_path / "mix.pt").exists()


def test_a_huge_weight_with_a_finite_sum_averages_to_finite_weights(fixture_checkpoint, tmp_path, capsys):
    """The weights are normalised before they multiply: 1e308 times a weight above 1.8 overflowed."""
    ckpt = load_checkpoint(fixture_checkpoint)
    ckpt.model = {k: v * 4 if v.is_floating_point() else v for k, v in ckpt.model.items()}
    ckpt.save(tmp_path / "big.pt")
    code, out, err = invoke(average_main, [str(tmp_path / "mix.pt"), f"{tmp_path / 'big.pt'}:1e308",
                                           f"{fixture_checkpoint}:1"], capsys)
    assert code == 0, err
    mix, big = load_checkpoint(tmp_path / "mix.pt"), load_checkpoint(tmp_path / "big.pt")
    for name, value in big.model.items():
        if value.is_floating_point():
            assert torch.isfinite(mix.model[name]).all()
            torch.testing.assert_close(mix.model[name], value.float())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="RLIMIT_FSIZE is POSIX")
def test_a_full_disk_is_one_line_and_keeps_the_file_it_would_replace(fixture_checkpoint, tmp_path):
    """The disk fills as a file size limit makes it (a write past it fails with EFBIG), in the command's
    process only: torch's error for the short write becomes one line, the temporary file is removed and
    the OUT that --force would replace is still whole."""
    import resource

    out = tmp_path / "mix.pt"
    out.write_bytes(b"the earlier average")

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (500_000, 500_000))    # the checkpoint is 1.5 MB

    done = subprocess.run([str(Path(sys.executable).with_name("mt-average")), "--force", str(out),
                           str(fixture_checkpoint), str(fixture_checkpoint)],
                          capture_output=True, text=True, timeout=120, preexec_fn=small_disk)
    assert (done.returncode, done.stderr) == (1, f"mt-average: error: {out}: cannot write (File too large)\n")
    assert out.read_bytes() == b"the earlier average" and [p.name for p in tmp_path.iterdir()] == ["mix.pt"]


def test_force_never_replaces_what_is_not_a_regular_file(fixture_checkpoint, tmp_path, capsys):
    """A FIFO here, as a device such as /dev/null would be (as root, OUT=/dev/null replaced the system's)."""
    fifo = tmp_path / "pipe.pt"
    os.mkfifo(fifo)
    code, _, err = invoke(average_main, ["--force", str(fifo), str(fixture_checkpoint), str(fixture_checkpoint)], capsys)
    assert (code, err) == (1, f"mt-average: error: {fifo}: is not a regular file; a checkpoint replaces only a file, "
                              "so choose another output\n")
    assert fifo.is_fifo() and [p.name for p in tmp_path.iterdir()] == ["pipe.pt"]
