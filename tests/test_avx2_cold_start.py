"""devtools/avx2_cold_start.py's arithmetic: the estimate is native + (AVX2 kernels - trace-only),
and its interval comes from resampling whole rounds."""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[1] / "devtools" / "avx2_cold_start.py"
spec = importlib.util.spec_from_file_location("avx2_cold_start", TOOL)
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)


def series(ours: tuple[float, float, float], theirs: tuple[float, float, float], rounds: int, noise: float = 0.0,
           seed: int = 0) -> dict[str, list[float]]:
    """runs_s as the tool writes them: (native, trace-only, avx2) seconds per engine, plus noise."""
    rng = random.Random(seed)
    runs = {}
    for engine, times in zip(tool.ENGINES, (ours, theirs)):
        for launcher, t in zip(tool.LAUNCHERS, times):
            runs[f"{engine} | {launcher}"] = [t + rng.uniform(-noise, noise) for _ in range(rounds)]
    return runs


def test_the_estimate_adds_what_the_avx2_kernels_change_to_the_native_time():
    runs = series((0.150, 0.500, 0.490), (0.160, 0.800, 0.760), rounds=5)
    medians, ratios = tool.summarise(runs)
    assert medians["ours int8"]["avx2 estimate"] == pytest.approx(0.140)
    assert medians["ct2 int8"]["avx2 estimate"] == pytest.approx(0.120)
    assert ratios == pytest.approx({"native": 0.150 / 0.160, "avx2 estimate": 0.140 / 0.120})
    assert tool.interval(runs)["native"] == pytest.approx([0.150 / 0.160] * 2)     # no noise, no width


def test_the_interval_holds_the_estimate_and_narrows_with_more_rounds():
    few = series((0.150, 0.500, 0.490), (0.160, 0.800, 0.760), rounds=20, noise=0.03)
    many = series((0.150, 0.500, 0.490), (0.160, 0.800, 0.760), rounds=320, noise=0.03, seed=1)
    ratio = tool.summarise(few)[1]["avx2 estimate"]
    low, high = tool.interval(few, resamples=400)["avx2 estimate"]
    assert low <= ratio <= high
    wide, narrow = (high - low), (lambda b: b[1] - b[0])(tool.interval(many, resamples=400)["avx2 estimate"])
    assert narrow < wide / 2


def test_pool_joins_the_rounds_of_earlier_series(tmp_path):
    files = []
    for i, rounds in enumerate((3, 4)):
        path = tmp_path / f"s{i}.json"
        path.write_text(json.dumps({"runs_s": series((0.15, 0.5, 0.49), (0.16, 0.8, 0.76), rounds, 0.01, seed=i)}))
        files.append(str(path))
    out = tmp_path / "pooled.json"
    done = subprocess.run([sys.executable, str(TOOL), "--pool", *files, "-o", str(out)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    pooled = json.loads(out.read_text())
    assert pooled["rounds"] == 7 and all(len(v) == 7 for v in pooled["runs_s"].values())
    assert "avx2 estimate" in done.stdout and "95%" in done.stdout
