"""`mt-bench` end to end on the fixture model: it must write a well-formed result. No timing assertions."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ctranslate2")
pytest.importorskip("torch")

from conftest import PAIRS  # noqa: E402
# Every CPU engine but torch-nocache (the `torch` engine with its cache off: the same code, and the
# slowest), plus two GPU engines that must be skipped cleanly where there is no CUDA.
CPU_ENGINES = ["torch", "ort-fp32", "ort-int8", "ct2-fp32", "ct2-int8"]
GPU_ENGINES = ["torch-cuda", "ct2-cuda-fp16"]


def mt_bench(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "mt-bench"
    cmd = [str(exe)] if exe.is_file() else [sys.executable, "-m", "mtkit.benchmarks.cli"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """Pairs the fixture model reproduces, laid out like shared/data: tatoeba/dev.{de,en}.gz."""
    root = tmp_path_factory.mktemp("data")
    (root / "tatoeba").mkdir()
    for side, lang in enumerate(("de", "en")):
        text = "".join(pair[side] + "\n" for pair in PAIRS)
        (root / "tatoeba" / f"dev.{lang}.gz").write_bytes(gzip.compress(text.encode("utf-8")))
    return root


def test_mt_bench_writes_results(fixture_checkpoint, fixture_bundle, data_dir, tmp_path):
    """All CPU engines; the shared fixture bundle is reused (--bundle), the CT2 models are converted."""
    out, work = tmp_path / "results", tmp_path / "work"
    proc = mt_bench(str(fixture_checkpoint), "--bundle", str(fixture_bundle), "--data-dir", str(data_dir),
                    "--datasets", "tatoeba-dev", "--limit", "3", "--reps", "2", "--warmup", "1", "--cold-reps", "1",
                    "--threads", "1", "--engines", ",".join(CPU_ENGINES + GPU_ENGINES),
                    "-o", str(out), "--work-dir", str(work))
    assert proc.returncode == 0, proc.stderr[-2000:]

    results = json.loads((out / "results.json").read_text())
    assert {"schema_version", "created", "checkpoint", "machine", "settings", "datasets", "gpu", "engines"} <= set(results)
    assert results["machine"]["cpu"] and results["machine"]["versions"]["ctranslate2"]
    assert results["datasets"] == {"tatoeba-dev": {"path": str(data_dir / "tatoeba" / "dev"), "sentences": 3}}
    engines = results["engines"]
    for name in CPU_ENGINES:
        e = engines[name]
        assert e["status"] == "ok", (name, e.get("note"))
        d = e["datasets"]["tatoeba-dev"]
        # two rounds, each with its own worker process: 2 x 3 sentences, 2 throughput runs
        assert d["latency_ms"]["samples"] == 6 and 0 < d["latency_ms"]["p50"] <= d["latency_ms"]["p95"]
        assert d["throughput_tokens_per_s"] > 0 and len(d["throughput_runs"]) == 2
        if name != "ct2-int8":   # the fixture's margins are checked for our fp32 and int8, not CT2's int8
            assert d["bleu_greedy"] == d["bleu_beam"] == pytest.approx(100.0), name   # sacreBLEU: 100.00000000000004
        assert e["peak_rss_mb"] > 0 and e["model_size_mb"] > 0
        assert 0 < e["loaded_rss_mb"] <= e["peak_rss_mb"]
        assert e["ratios"]["reference"] == ("ct2-int8" if name.endswith("int8") else "ct2-fp32")
        assert (work / "outputs" / f"{name}.tatoeba-dev.greedy.txt").is_file()
        if e["kind"] != "torch":
            assert e["cold_start"]["seconds"] > 0 and len(e["cold_start"]["runs"]) == 1, e["cold_start"]
    assert (work / "ct2" / "int8" / "model.bin").is_file() and not (work / "bundle").exists()
    assert engines["ct2-fp32"]["ratios"]["tatoeba-dev"]["latency_p50"] == pytest.approx(1.0)
    # The harness feeds every engine the same encoder input: PyTorch and CT2 fp32 agree exactly.
    assert engines["torch"]["ratios"]["tatoeba-dev"]["same_greedy_output"] == 1.0
    # Our runtime's worker never loaded torch; the PyTorch one did.
    assert engines["ort-int8"]["imported_torch"] is False and engines["torch"]["imported_torch"] is True

    # Our engines' beam time splits into graph time and search-loop time; the others have no graphs to time.
    assert 0 < engines["ort-int8"]["datasets"]["tatoeba-dev"]["graph_time_share"] < 1
    assert engines["ct2-int8"]["datasets"]["tatoeba-dev"]["graph_time_share"] is None

    assert list(engines) == CPU_ENGINES + GPU_ENGINES
    if not results["gpu"]["available"]:
        assert "skipped" in results["gpu"]["note"]
        assert all(engines[n]["status"] == "skipped" and engines[n]["note"] for n in GPU_ENGINES)

    md = (out / "results.md").read_text()
    assert "| engine | latency p50 ms |" in md and "## GPU" in md and "## Where our beam time goes" in md
    for name in CPU_ENGINES:
        assert f"(`{name}`) | " in md
    png = (out / "results.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000


def run_cli(*args: str):
    """mt-bench in this process (fast: torch is already imported) for the early argument errors."""
    from click.testing import CliRunner

    from mtkit.benchmarks.cli import main

    return CliRunner().invoke(main, list(args))


def test_missing_test_set_is_a_clear_error(fixture_checkpoint, tmp_path):
    result = run_cli(str(fixture_checkpoint), "--data-dir", str(tmp_path), "--datasets", "tatoeba-dev",
                     "-o", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work"))
    assert result.exit_code == 1 and not isinstance(result.exception, (AssertionError, TypeError, KeyError))
    assert str(tmp_path / "tatoeba" / "dev.de.gz") in result.output and "--data-dir" in result.output
    assert not (tmp_path / "out").exists()


def test_languages_are_from_and_to(fixture_checkpoint, tmp_path):
    result = run_cli(str(fixture_checkpoint), "--from", "en", "--to", "fr", "-o", str(tmp_path / "out"))
    assert result.exit_code == 1 and "cannot translate into 'fr'" in result.output
    result = run_cli(str(fixture_checkpoint), "--tgt", "en")              # the old name is gone
    assert result.exit_code == 2 and "No such option '--tgt'" in result.output


def test_unknown_engine_is_a_clear_error(fixture_checkpoint, tmp_path):
    result = run_cli(str(fixture_checkpoint), "--engines", "ct2-fp32,warp-drive", "-o", str(tmp_path / "out"))
    assert result.exit_code == 1 and "warp-drive" in result.output and "ct2-int8" in result.output


def test_bad_checkpoint_is_a_clear_error(tmp_path):
    bad = tmp_path / "model.pt"
    bad.write_text("not a checkpoint")
    result = run_cli(str(bad), "-o", str(tmp_path / "out"))
    assert result.exit_code == 1 and str(bad) in result.output


def test_the_default_work_dir_is_never_beside_the_checkpoint(tmp_path, monkeypatch):
    """A checkpoint may live inside a model bundle (models/de-en): files mt-bench left there would fail
    `mt-models verify`. The work dir goes to mtkit's cache instead, one per checkpoint path."""
    from mtkit.benchmarks.bench import default_work_dir

    monkeypatch.setenv("MT_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "models" / "de-en"
    work = default_work_dir(model / "checkpoint.fp16.pt")
    assert work.is_relative_to(tmp_path / "cache") and not work.is_relative_to(model)
    assert work == default_work_dir(model / "checkpoint.fp16.pt")
    assert work != default_work_dir(tmp_path / "other" / "checkpoint.fp16.pt")


def test_cached_bundle_is_reused_only_from_the_same_export_code(fixture_checkpoint, tmp_path):
    """The work dir's bundle is newer than the checkpoint either way; exported by other code (an older
    mtkit, an edited graph) it would measure other graphs, so it is exported again."""
    from types import SimpleNamespace

    from mtkit.benchmarks.artifacts import _bundle, exporter_fingerprint

    cfg = SimpleNamespace(bundle=None, rebuild=False, checkpoint=Path(fixture_checkpoint))
    path, logged = tmp_path / "bundle", []
    _bundle(cfg, path, False, logged.append)
    marker = tmp_path / "bundle.exporter"
    assert marker.read_text() == exporter_fingerprint() and len(logged) == 1
    _bundle(cfg, path, False, logged.append)
    assert len(logged) == 1                                  # reused
    marker.write_text("other code")
    _bundle(cfg, path, False, logged.append)
    assert len(logged) == 2 and marker.read_text() == exporter_fingerprint()
