"""`python -m mtkit.benchmarks.start_floor` on the fixture model: a well-formed result with every stage,
and clear errors for inputs it cannot use. No timing assertions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mtkit.benchmarks.ct2_convert import convert_checkpoint

OURS_STAGES = ["import numpy", "import onnxruntime", "import sentencepiece", "both sessions and the tokenizer, at once",
               "the encoder once, one decoder step"]
CT2_STAGES = ["import ctranslate2", "import sentencepiece", "load model", "load tokenizer", "translate one sentence"]


def start_floor(*args: str, cache) -> subprocess.CompletedProcess:
    env = {**os.environ, "MT_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "mtkit.benchmarks.start_floor", *args],
                          capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def ct2_int8(fixture_checkpoint, tmp_path_factory):
    directory = tmp_path_factory.mktemp("ct2") / "int8"
    convert_checkpoint(fixture_checkpoint, directory, "int8")
    return directory


def test_start_floor_reports_every_stage_of_both_engines(fixture_bundle, ct2_int8, tmp_path):
    proc = start_floor(str(fixture_bundle), str(ct2_int8), "--rounds", "2", "--out", str(tmp_path / "out"),
                       cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "out" / "start_floor.json").read_text(encoding="utf-8"))
    summary = result["summary"]
    assert [s["stage"] for s in summary["ours, floor"]["stages"]] == OURS_STAGES
    assert [s["stage"] for s in summary["CT2, stages"]["stages"]] == CT2_STAGES
    assert set(summary) == {"ours, floor", "CT2, stages", "ours, mt-translate", "CT2, ct2_run",
                            "CT2, ct2_run, a replica per thread", "python -c pass", "floor_over_ct2"}
    assert summary["floor_over_ct2"]["rounds"] == 2 and summary["floor_over_ct2"]["median"] > 0
    assert all(len(runs) == 2 and all(r["wall_s"] > 0 for r in runs) for runs in result["runs"].values())
    for label in ("ours, floor", "CT2, stages"):
        rss = [s["rss_mb"] for s in summary[label]["stages"]]
        assert all(s["ms"] >= 0 for s in summary[label]["stages"]) and 0 < rss[0] <= summary[label]["peak_rss_mb"]
    # The floor imports no mtkit code, and nothing of numpy's before the stage that times it.
    assert all(r["imported_before"] == [] for r in result["runs"]["ours, floor"])
    assert (tmp_path / "out" / "start_floor.md").read_text(encoding="utf-8").startswith("# Start-up floor: ")


def test_inputs_it_cannot_use_are_clear_errors(fixture_bundle, ct2_int8, tmp_path):
    for args, message in (([str(tmp_path), str(ct2_int8)], "config.json"),
                          ([str(fixture_bundle), str(tmp_path)], "mtkit.json"),
                          ([str(fixture_bundle), str(ct2_int8), "--rounds", "0"], "--rounds")):
        proc = start_floor(*args, cache=tmp_path / "cache")
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
