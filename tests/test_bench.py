"""`mt-bench` end to end on the fixture model: it must write a well-formed result. No timing assertions."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("ctranslate2")
pytest.importorskip("torch")

from conftest import PAIRS  # noqa: E402
from mtkit.runtime.checksums import file_sha256  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "models" / "de-en"        # a bundle and the checkpoint it was exported from
# The fixture pairs as `bench.load_dataset` returns a test set.
TEST_SETS = [{"name": "tatoeba-dev", "src_lang": "de", "tgt_lang": "en", "sources": [de for de, _ in PAIRS],
              "refs": [en for _, en in PAIRS]}]
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
    """All CPU engines; the shared fixture bundle is reused (--bundle), the CT2 models are converted.
    The GPU engines are asked for where there is no CUDA, to see them skipped."""
    from mtkit.benchmarks.bench import gpu_reasons

    gpu_engines = GPU_ENGINES if gpu_reasons()["torch-cuda"] else []
    out, work = tmp_path / "results", tmp_path / "work"
    proc = mt_bench(str(fixture_checkpoint), "--bundle", str(fixture_bundle), "--data-dir", str(data_dir),
                    "--datasets", "tatoeba-dev", "--limit", "3", "--reps", "2", "--warmup", "1", "--cold-reps", "1",
                    "--threads", "1", "--engines", ",".join(CPU_ENGINES + gpu_engines),
                    "-o", str(out), "--work-dir", str(work), "--machine-name", "test-box")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == f"results: {out}/results.md (.json, .png); outputs: {work}/outputs/\n"

    results = json.loads((out / "results.json").read_text())
    assert {"schema_version", "created", "checkpoint", "machine", "settings", "datasets", "gpu", "engines"} <= set(results)
    assert results["machine"]["cpu"] and results["machine"]["versions"]["ctranslate2"]
    assert {"cpu_family", "cpu_model", "vector_isa"} <= set(results["machine"])
    # What was measured: the checkpoint as given and its hash, the bundle and CT2 models used, the machine's
    # name (-o given or not) and mtkit's version and commit; no hostname (results are committed publicly).
    assert results["checkpoint"] == str(fixture_checkpoint)
    assert results["checkpoint_sha256"] == file_sha256(fixture_checkpoint)
    assert results["artifacts"] == {"bundle": str(fixture_bundle), "ct2_fp32": str(work / "ct2" / "float32"),
                                    "ct2_int8": str(work / "ct2" / "int8")}
    machine = results["machine"]
    assert machine["name"] == "test-box" and "hostname" not in machine and machine["versions"]["mtkit"]
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert machine["mtkit_commit"] is None if not head else machine["mtkit_commit"].startswith(head.strip())
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
        assert 0 < e["imported_rss_mb"] <= e["loaded_rss_mb"] <= e["peak_rss_mb"]
        assert e["end_anon_rss_mb"] > 0 and e["end_file_rss_mb"] > 0
        assert e["end_anon_rss_mb"] + e["end_file_rss_mb"] <= e["peak_rss_mb"]      # the same round's
        assert e["ratios"]["reference"] == ("ct2-int8" if name.endswith("int8") else "ct2-fp32")
        assert (work / "outputs" / f"{name}.tatoeba-dev.greedy.txt").is_file()
        if e["kind"] != "torch":
            assert e["cold_start"]["seconds"] > 0 and len(e["cold_start"]["runs"]) == 1, e["cold_start"]
    assert (work / "ct2" / "int8" / "model.bin").is_file() and not (work / "bundle").exists()
    assert results["best"]["datasets"]["tatoeba-dev"]["beam_tokens_per_s"]["ours"] in ("ort-fp32", "ort-int8")
    assert "## Our best against CTranslate2's best" in (out / "results.md").read_text()
    assert engines["ct2-fp32"]["ratios"]["tatoeba-dev"]["latency_p50"] == pytest.approx(1.0)
    # The harness feeds every engine the same encoder input: PyTorch and CT2 fp32 agree exactly.
    assert engines["torch"]["ratios"]["tatoeba-dev"]["same_greedy_output"] == 1.0
    # Our runtime's worker never loaded torch; the PyTorch one did.
    assert engines["ort-int8"]["imported_torch"] is False and engines["torch"]["imported_torch"] is True

    # Our engines' beam time splits into graph time and search-loop time; the others have no graphs to time.
    assert 0 < engines["ort-int8"]["datasets"]["tatoeba-dev"]["graph_time_share"] < 1
    assert engines["ct2-int8"]["datasets"]["tatoeba-dev"]["graph_time_share"] is None
    ours, theirs = engines["ort-int8"]["datasets"]["tatoeba-dev"], engines["ct2-int8"]["datasets"]["tatoeba-dev"]
    assert 0 < ours["latency_graph_ms_p50"] <= ours["latency_ms"]["p50"]    # each sentence: graphs <= wall
    assert theirs["latency_graph_ms_p50"] is None

    assert list(engines) == CPU_ENGINES + gpu_engines
    assert all(engines[n]["status"] == "skipped" and engines[n]["note"] for n in gpu_engines)
    assert ("GPU section skipped" if gpu_engines else "no GPU engine asked for") in results["gpu"]["note"]

    md = (out / "results.md").read_text()
    assert "| engine | latency p50 ms |" in md and "## GPU" in md and "## Where our time goes" in md
    assert "`test-box`" in md and f"mtkit {machine['versions']['mtkit']}" in md and f"`{work / 'outputs'}/`" in md
    assert "medians of 2 rounds," in md and "1 warm-up translation each" in md and "median of 1 fresh process " in md
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


def test_a_launcher_that_is_no_command_is_a_clear_error(fixture_checkpoint, tmp_path):
    result = run_cli(str(fixture_checkpoint), "--launcher", "no-such-launcher -x", "-o", str(tmp_path / "out"))
    one_line_error(result, "--launcher: no such command: no-such-launcher")
    result = run_cli(str(fixture_checkpoint), "--launcher", "taskset '0", "-o", str(tmp_path / "out"))
    assert result.exit_code == 2 and "Invalid value for --launcher" in result.output and not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "0", "0.5"])
def test_the_timeout_is_a_whole_number_of_seconds(fixture_checkpoint, tmp_path, value):
    """NaN passed click's FloatRange (no comparison holds for it), and the run started without a limit."""
    result = run_cli(str(fixture_checkpoint), "--timeout", value, "-o", str(tmp_path / "out"))
    assert result.exit_code == 2 and "Invalid value for '--timeout'" in result.output
    assert not (tmp_path / "out").exists()


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


def test_cached_bundle_is_reused_only_from_the_same_export_code(fixture_checkpoint, tmp_path, monkeypatch):
    """The work dir's bundle is newer than the checkpoint either way; exported by other code (an older
    mtkit, an edited graph) it would measure other graphs, so it is exported again. The export checks
    parity on the test sets' sentences: it needs no dev set of the training run (none here), which
    mt-export would ask for with --parity-data, an option mt-bench does not have."""
    monkeypatch.setenv("MT_DATA_DIR", str(tmp_path / "no-data"))
    from mtkit.benchmarks.artifacts import _bundle, exporter_fingerprint

    cfg = SimpleNamespace(bundle=None, rebuild=False, checkpoint=Path(fixture_checkpoint), tgt_lang="en")
    path, logged = tmp_path / "bundle", []
    _bundle(cfg, path, False, TEST_SETS, logged.append)
    marker = tmp_path / "bundle.exporter"
    assert marker.read_text() == exporter_fingerprint() and len(logged) == 1
    _bundle(cfg, path, False, TEST_SETS, logged.append)
    assert len(logged) == 1                                  # reused
    marker.write_text("other code")
    _bundle(cfg, path, False, TEST_SETS, logged.append)
    assert len(logged) == 2 and marker.read_text() == exporter_fingerprint()


def test_bench_export_failure_fails_the_ort_engines(fixture_checkpoint, tmp_path):
    """An export that fails is a failed engine (exit status 1), not a skipped one (exit status 0)."""
    from mtkit.benchmarks.artifacts import prepare
    from mtkit.benchmarks.engines import ENGINES

    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "notes.txt").write_text("not a bundle: the export never replaces it")
    cfg = SimpleNamespace(bundle=None, ct2_dir=None, rebuild=False, checkpoint=Path(fixture_checkpoint), tgt_lang="en")
    artifacts, skip, failed = prepare(cfg, [ENGINES["ort-int8"]], TEST_SETS, tmp_path, print)
    assert not skip and list(failed) == ["ort-int8"] and "ExportError" in failed["ort-int8"]["error"]


def one_line_error(result, message: str) -> None:
    """Exit status 1, `message` in mt-bench's one error line, no traceback."""
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert message in result.output and "Traceback" not in result.output, result.output


@pytest.mark.parametrize("option", ["-o", "--work-dir"])
@pytest.mark.parametrize("under", [False, True])
def test_output_paths_are_checked_before_any_work(fixture_checkpoint, tmp_path, option, under):
    """A file where a directory must go is refused up front (the results were lost at the very end)."""
    blocker = tmp_path / "file"
    blocker.write_text("mine")
    path = blocker / "sub" if under else blocker
    # An empty data dir: an argument checked after the test sets are read would not be reached.
    other = {"-o": "--work-dir", "--work-dir": "-o"}[option]
    result = run_cli(str(fixture_checkpoint), "--data-dir", str(tmp_path), option, str(path),
                     other, str(tmp_path / "other"))
    one_line_error(result, f"{option} {path}: {blocker} is not a directory" if under else
                   f"{option} {path}: not a directory")
    assert blocker.read_text() == "mine" and not (tmp_path / "other").exists()


@pytest.mark.parametrize("option, value, message", [
    ("--datasets", ",", "no test set given (known: tatoeba-dev, newstest2013)"),
    ("--engines", ",,", "no engine given (known: torch-nocache, "),
    ("--from", "de", "the model does not translate de -> de (its directions: de -> en, en -> de)"),
])
def test_empty_lists_and_unknown_directions_are_errors(fixture_checkpoint, tmp_path, option, value, message):
    args = ["--to", "de"] if option == "--from" else []
    result = run_cli(str(fixture_checkpoint), "--data-dir", str(tmp_path), option, value, *args,
                     "-o", str(tmp_path / "out"))
    one_line_error(result, message)


def test_given_bundle_must_be_a_bundle_of_this_checkpoint(fixture_checkpoint, fixture_bundle, tmp_path):
    """An unusable or foreign --bundle is refused up front: it was skipped (exit 0) or, from another
    model, compared two models as one."""
    def run(checkpoint, *args):
        return run_cli(str(checkpoint), "--data-dir", str(tmp_path), "-o", str(tmp_path / "out"),
                       "--work-dir", str(tmp_path / "work"), *args)

    one_line_error(run(fixture_checkpoint, "--bundle", str(tmp_path)), "--bundle: ")
    one_line_error(run(fixture_checkpoint, "--bundle", str(SHIPPED)),
                   f"--bundle {SHIPPED}: not exported from {fixture_checkpoint}")
    # The shipped model's bundle was exported from its own checkpoint: accepted (the next error is
    # the missing test set), but it has no fp32 graphs for an ort-fp32 asked for by name.
    shipped = SHIPPED / "checkpoint.fp16.pt"
    one_line_error(run(shipped, "--bundle", str(SHIPPED)), "test set 'tatoeba-dev'")
    one_line_error(run(shipped, "--bundle", str(SHIPPED), "--engines", "ort-fp32,ort-int8"),
                   "no variant for ort-fp32 (fp32); it has int8")
    one_line_error(run(fixture_checkpoint, "--ct2-dir", str(tmp_path)), "no CTranslate2 model")
    # CT2 conversions record their checkpoint's sha256 as well: another checkpoint's are refused.
    from mtkit.benchmarks.artifacts import CT2_QUANTIZATIONS
    from mtkit.benchmarks.ct2_convert import convert_checkpoint

    for quantization in CT2_QUANTIZATIONS.values():
        convert_checkpoint(fixture_checkpoint, tmp_path / "ct2" / quantization, quantization)
    one_line_error(run(shipped, "--ct2-dir", str(tmp_path / "ct2")),
                   f"--ct2-dir {tmp_path / 'ct2' / 'float32'}: not converted from {shipped}")
    one_line_error(run(fixture_checkpoint, "--ct2-dir", str(tmp_path / "ct2")), "test set 'tatoeba-dev'")
    result = run(fixture_checkpoint, "--bundle", str(fixture_bundle), "--rebuild")
    one_line_error(result, "test set 'tatoeba-dev'")
    assert "note: --rebuild does not rebuild what --bundle gives" in result.output


def test_machine_names_tell_cpu_generations_apart():
    """Guests often show "AMD EPYC" for every EPYC: the vector extension goes into the results folder's
    name, since the ratios against CTranslate2 change with it."""
    from mtkit.benchmarks.machine import machine_slug, vector_isa

    assert vector_isa({"fma", "avx2"}) == "avx2"
    assert vector_isa({"avx2", "avx512f"}) == "avx512"
    assert vector_isa({"avx2", "avx512f", "avx512_vnni"}) == "avx512-vnni"
    assert vector_isa({"avx512f", "avx512_vnni", "amx_int8"}) == "amx"
    assert vector_isa({"sse4_2"}) is None
    assert machine_slug({"cpu": "AMD EPYC", "logical_cpus": 2, "vector_isa": "avx2"}) == "amd-epyc-avx2-2cpu"
    assert machine_slug({"cpu": "Intel(R) Xeon(R) Processor", "logical_cpus": 16, "vector_isa": "amx"}) == \
        "intel-xeon-processor-amx-16cpu"
    assert machine_slug({"cpu": "AMD EPYC", "logical_cpus": 2}) == "amd-epyc-2cpu"   # results written before
    assert machine_slug({"cpu": "AMD EPYC", "logical_cpus": 2, "vector_isa": "avx512-vnni",
                         "microarchitecture": "zen5"}) == "amd-epyc-zen5-avx512-vnni-2cpu"
    assert machine_slug({"cpu": "AMD EPYC 7763 (Zen3)", "logical_cpus": 2, "vector_isa": "avx2",
                         "microarchitecture": "zen3"}) == "amd-epyc-7763-zen3-avx2-2cpu"


def test_core_generations_by_family_and_model():
    from mtkit.benchmarks.machine import microarchitecture

    amd, intel = "AuthenticAMD", "GenuineIntel"
    assert microarchitecture(amd, 25, 0x01) == "zen3"      # Milan
    assert microarchitecture(amd, 25, 0x11) == "zen4"      # Genoa
    assert microarchitecture(amd, 25, 0xA0) == "zen4"      # Bergamo
    assert microarchitecture(amd, 26, 0x02) == "zen5"      # Turin
    assert microarchitecture(amd, 23, 0x31) == "zen2"      # Rome
    assert microarchitecture(intel, 6, 0x8F) == "sapphire-rapids"
    assert microarchitecture(intel, 6, 0xCF) == "emerald-rapids"
    assert microarchitecture(intel, 6, 0x55, 7) == "cascade-lake"
    assert microarchitecture(intel, 6, 0x55, 4) == "skylake"
    assert microarchitecture(intel, 6, 0x55) is None       # stepping unknown
    assert microarchitecture(intel, 6, 0x3F) is None       # not in the table: unnamed, not guessed
    assert microarchitecture("HygonGenuine", 24, 0) is None
    assert microarchitecture(amd, None, None) is None


def test_a_run_that_measures_nothing_writes_nothing(fixture_checkpoint, data_dir, tmp_path):
    """GPU engines alone on a machine without CUDA: an error before any work, and earlier results
    at -o stay as they are (empty tables used to replace them, with exit status 0)."""
    from mtkit.benchmarks.bench import gpu_reasons

    if gpu_reasons()["torch-cuda"] is None:
        pytest.skip("torch sees a CUDA device")
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.md").write_text("earlier results")
    result = run_cli(str(fixture_checkpoint), "--data-dir", str(data_dir), "--datasets", "tatoeba-dev",
                     "--engines", "torch-cuda", "-o", str(out), "--work-dir", str(tmp_path / "work"))
    one_line_error(result, "nothing to measure: torch-cuda: torch sees no CUDA device")
    assert [p.name for p in out.iterdir()] == ["results.md"] and (out / "results.md").read_text() == "earlier results"
    assert not (tmp_path / "work").exists()


def test_small_run_reports_what_ran(fixture_checkpoint, data_dir, tmp_path):
    """An engine named twice runs once per round; the report counts one round and the warm-up
    sentences the test set has (2, not --warmup 3)."""
    out, work = tmp_path / "out", tmp_path / "work"
    proc = mt_bench(str(fixture_checkpoint), "--data-dir", str(data_dir), "--datasets", "tatoeba-dev",
                    "--limit", "2", "--reps", "1", "--warmup", "3", "--cold-reps", "1", "--threads", "1",
                    "--engines", "ct2-int8,ct2-int8", "-o", str(out), "--work-dir", str(work))
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    assert list(results["engines"]) == ["ct2-int8"]
    assert results["engines"]["ct2-int8"]["datasets"]["tatoeba-dev"]["latency_ms"]["samples"] == 2
    md = (out / "results.md").read_text()
    assert "medians of 1 round," in md and "2 warm-up translations each" in md


def test_every_engine_process_runs_under_the_launcher(fixture_checkpoint, data_dir, tmp_path):
    """--launcher prefixes the priming, worker and cold-start processes alike, and the report says so."""
    log, launcher = tmp_path / "launched.txt", tmp_path / "launcher.py"
    launcher.write_text("import os, sys\n"
                        "with open(sys.argv[1], 'a') as f:\n    f.write(' '.join(sys.argv[2:]) + '\\n')\n"
                        "os.execv(sys.argv[2], sys.argv[2:])\n")
    out = tmp_path / "out"
    proc = mt_bench(str(fixture_checkpoint), "--data-dir", str(data_dir), "--datasets", "tatoeba-dev",
                    "--limit", "2", "--reps", "1", "--warmup", "1", "--cold-reps", "1", "--threads", "1",
                    "--engines", "ct2-int8", "-o", str(out), "--work-dir", str(tmp_path / "work"),
                    "--launcher", f"{sys.executable} {launcher} {log}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    launched = log.read_text().splitlines()
    assert len(launched) == 3 and all(line.startswith(sys.executable) for line in launched)
    assert ["mtkit.benchmarks.worker" in line for line in launched] == [False, True, False]   # prime, round, cold
    assert json.loads((out / "results.json").read_text())["settings"]["launcher"] == [sys.executable, str(launcher),
                                                                                      str(log)]
    assert f"every engine process ran under `{sys.executable} {launcher} {log}`" in (out / "results.md").read_text()


def test_best_against_best_takes_each_sides_best_engine():
    """Issue 16's comparison: per measure, our best default engine against CTranslate2's best, whichever
    engine that is; a non-default decode budget does not count as ours."""
    from mtkit.benchmarks.report import best_against_best

    def engine(kind, beam, p50, cold, peak=100.0, size=10.0):
        return {"status": "ok", "device": "cpu", "kind": kind, "peak_rss_mb": peak, "model_size_mb": size,
                "cold_start": {"seconds": cold},
                "datasets": {"news": {"throughput_tokens_per_s": beam, "latency_ms": {"p50": p50}}}}

    engines = {"ort-fp32": engine("ort", 900, 9.0, 0.30), "ort-int8": engine("ort", 1000, 5.0, 0.20, peak=110),
               "ort-int8-64": engine("ort", 5000, 1.0, 0.01), "ct2-fp32": engine("ct2", 1250, 8.0, 0.25),
               "ct2-int8": engine("ct2", 1100, 4.0, 0.19, peak=100, size=11.0)}
    best = best_against_best(engines)
    beam, greedy = best["datasets"]["news"]["beam_tokens_per_s"], best["datasets"]["news"]["greedy_p50_ms"]
    summary = lambda c: (c["ours"], c["ct2"], c["ratio"], c["ours_better_or_equal"])   # noqa: E731
    assert summary(beam) == ("ort-int8", "ct2-fp32", 0.8, False)
    assert summary(greedy) == ("ort-int8", "ct2-int8", 1.25, False)
    assert summary(best["cold_start_s"]) == ("ort-int8", "ct2-int8", pytest.approx(0.2 / 0.19), False)
    assert summary(best["int8_peak_rss_mb"]) == ("ort-int8", "ct2-int8", pytest.approx(1.1), False)
    assert best["int8_model_size_mb"]["ours_better_or_equal"]
    # CTranslate2's replica layout counts as CTranslate2, and its lower int8 peak is the one compared.
    engines["ct2-int8-replicas4"] = engine("ct2", 2000, 3.5, 0.21, peak=88, size=11.0)
    best = best_against_best(engines)
    assert summary(best["datasets"]["news"]["beam_tokens_per_s"]) == ("ort-int8", "ct2-int8-replicas4", 0.5, False)
    assert summary(best["int8_peak_rss_mb"]) == ("ort-int8", "ct2-int8-replicas4", pytest.approx(110 / 88), False)
    del engines["ct2-int8-replicas4"]
    assert best_against_best(engines, cold_starts=False)["cold_start_s"] is None
    engines["ct2-int8"]["status"] = engines["ct2-fp32"]["status"] = "failed"
    assert best_against_best(engines) is None


def test_ct2_int16_runs_where_ctranslate2_offers_it():
    """CTranslate2 has int16 only with Intel MKL: elsewhere the engine is skipped with why, so that its
    best compute type is always among those measured."""
    import ctranslate2

    from mtkit.benchmarks.bench import ct2_cpu_problem
    from mtkit.benchmarks.engines import ENGINES

    reason = ct2_cpu_problem(ENGINES["ct2-int16"])
    assert (reason is None) == ("int16" in ctranslate2.get_supported_compute_types("cpu"))
    assert reason is None or reason.startswith("CTranslate2 offers no int16 on this CPU")
    assert ct2_cpu_problem(ENGINES["ct2-int8"]) is None


def test_cold_starts_run_in_the_callers_environment(monkeypatch):
    """The workers' thread caps are not forced on the CLIs, which take --threads and keep their own
    defaults (mt-translate's one OpenBLAS thread)."""
    from mtkit.benchmarks.runner import cold_starts

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    cfg = SimpleNamespace(cold_reps=1, threads=2, timeout=60)
    result = cold_starts({"env": [sys.executable, "-c", "import os; print(os.environ.get('OPENBLAS_NUM_THREADS'))"]},
                         cfg)
    assert result["env"]["output"] == "None"


def test_bytecode_is_compiled_before_the_cold_starts():
    """As a wheel install has it: each runtime module's .pyc is valid for its source (Python checks
    the source's mtime stored in the header), so no cold start compiles it."""
    import importlib.util

    from mtkit.benchmarks.runner import compile_bytecode

    compile_bytecode()
    for source in sorted(Path(importlib.util.find_spec("mtkit.runtime").origin).parent.glob("*.py")):
        cached = Path(importlib.util.cache_from_source(str(source)))
        header = cached.read_bytes()[:16]
        assert int.from_bytes(header[8:12], "little") == int(source.stat().st_mtime) & 0xFFFFFFFF, source.name


def test_engines_translate_from_the_given_source_language(fixture_bundle, fixture_checkpoint):
    """Our runtime and PyTorch are told the test set's source language (they used to pick the
    model's first other language, whatever --from said)."""
    from mtkit.benchmarks.engines import load
    from mtkit.runtime.errors import TranslationError

    (de, en), = PAIRS[:1]
    artifacts = {"bundle": str(fixture_bundle), "checkpoint": str(fixture_checkpoint)}
    for name in ("ort-fp32", "torch"):
        engine = load(name, artifacts, 1)
        assert engine.translate([de], "de", "en", 1)[0][0] == en, name
        with pytest.raises(TranslationError, match="does not translate en -> en"):
            engine.translate([de], "en", "en", 1)


def test_cold_start_timeout_is_timeout(tmp_path):
    from mtkit.benchmarks.runner import cold_starts

    cfg = SimpleNamespace(cold_reps=1, threads=1, timeout=1)
    result = cold_starts({"slow": [sys.executable, "-c", "import time; time.sleep(5)"]}, cfg)
    assert result == {"slow": {"error": "took over 1 s (--timeout)"}}


def test_gpu_note_says_when_ctranslate2_is_not_installed(monkeypatch):
    from mtkit.benchmarks.bench import gpu_reasons

    monkeypatch.setitem(sys.modules, "ctranslate2", None)        # what `import` sees without the package
    reasons = gpu_reasons()
    assert reasons["ct2-cuda-fp16"] == reasons["ct2-cuda-fp32"] == "ctranslate2 is not installed (the bench extra)"


def test_help_names_every_exit_status():
    result = run_cli("--help")
    assert result.exit_code == 0 and "143 terminated" in result.output


def test_shape_specs_of_the_shape_study():
    from mtkit.benchmarks.shapes import SHAPES, parse_shape

    assert parse_shape("6x2-384-1536") == {"encoder_layers": 6, "decoder_layers": 2, "d_model": 384, "ffn_dim": 1536,
                                           "n_heads": 6}
    assert all(parse_shape(s)["d_model"] % 64 == 0 for s in SHAPES)
    for bad in ("6x2-256", "6-2-256-1024", "6x2-300-1024"):
        with pytest.raises(SystemExit, match="shape"):
            parse_shape(bad)


def test_the_ct2_worker_imports_only_what_ctranslate2_needs():
    """CTranslate2's peak RSS must be its own: its worker path (the job's decode options, the engine,
    a translation) imports neither numpy, which CTranslate2 does not need, nor onnxruntime or torch."""
    probe = ("import sys\n"
             "from mtkit.benchmarks import ct2_run, engines, worker\n"
             "engines.decode_options(4, 256)\n"
             "ct2_run.translate_options(engines.decode_options(4, 256), 10)\n"
             "import ctranslate2\n"
             "print([m for m in ('numpy', 'onnxruntime', 'torch') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_ct2_cuda_engines_are_skipped_without_cuda_12s_cublas(monkeypatch):
    """CTranslate2 seeing a GPU is not enough: its CUDA build needs libcublas.so.12, and without it the
    engines are skipped with that reason instead of failing at their first sentence."""
    import ctypes

    import ctranslate2

    from mtkit.benchmarks.bench import gpu_reasons

    monkeypatch.setattr(ctranslate2, "get_cuda_device_count", lambda: 1)   # as on a GPU machine
    try:
        ctypes.CDLL("libcublas.so.12")
        present = True
    except OSError:
        present = False
    reasons = gpu_reasons()
    for name in ("ct2-cuda-fp32", "ct2-cuda-fp16"):
        assert reasons[name] is None if present else "libcublas.so.12" in reasons[name]


def test_the_old_int8_budget_can_run_beside_the_default(fixture_checkpoint, data_dir, tmp_path):
    """`ort-int8-64` (asked for by name) decodes with the budget before session 24, and the report says
    which budget each of our engines ran with, and which ran with low_latency."""
    out = tmp_path / "out"
    proc = mt_bench(str(fixture_checkpoint), "--data-dir", str(data_dir), "--datasets", "tatoeba-dev",
                    "--limit", "2", "--reps", "1", "--warmup", "1", "--cold-reps", "1", "--threads", "1",
                    "--engines", "ort-int8,ort-int8-64,ort-int8-latency", "-o", str(out), "--work-dir", str(tmp_path / "work"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    engines = json.loads((out / "results.json").read_text())["engines"]
    assert "32 rows / 1024 tokens" in engines["ort-int8"]["impl"]
    assert "64 rows / 4096 tokens" in engines["ort-int8-64"]["impl"]
    assert "low_latency" in engines["ort-int8-latency"]["impl"] and "low_latency" not in engines["ort-int8"]["impl"]


def test_ct2_replicas_translate_as_one_translator_does(fixture_checkpoint, data_dir, tmp_path):
    """CTranslate2 with a replica per thread (its layout for throughput) gives the same translations as
    one translator, and its cold start loads the same layout."""
    from mtkit.benchmarks.bench import BenchConfig
    from mtkit.benchmarks.engines import ENGINES
    from mtkit.benchmarks.runner import cold_start_command

    out = tmp_path / "out"
    proc = mt_bench(str(fixture_checkpoint), "--data-dir", str(data_dir), "--datasets", "tatoeba-dev",
                    "--limit", "6", "--reps", "1", "--warmup", "1", "--cold-reps", "1", "--threads", "2",
                    "--batch-size", "6", "--engines", "ct2-int8,ct2-int8-replicas4", "-o", str(out),
                    "--work-dir", str(tmp_path / "work"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    engines = json.loads((out / "results.json").read_text())["engines"]
    assert engines["ct2-int8-replicas4"]["status"] == "ok"
    outputs = out.parent / "work" / "outputs"
    for kind in ("greedy", "beam"):
        one, replicas = (sorted(outputs.glob(f"{name}*{kind}*")) for name in ("ct2-int8.", "ct2-int8-replicas4."))
        assert one and [p.read_text() for p in one] == [p.read_text() for p in replicas]
    cfg = BenchConfig(checkpoint=fixture_checkpoint, threads=2)
    command = cold_start_command(ENGINES["ct2-int8-replicas4"], {"ct2_int8": "CT2"}, cfg, "Hallo")
    assert command[command.index("--threads") + 1] == "1" and command[command.index("--replicas") + 1] == "2"


@pytest.mark.parametrize("out", ["", "missing/report.json"])
def test_invariance_checks_its_report_file_before_the_work(tmp_path, capsys, out):
    from mtkit.benchmarks.invariance import main as invariance

    with pytest.raises(SystemExit) as exited:
        invariance(["--out", str(tmp_path / out)])
    assert exited.value.code == 2 and "give a file in an existing folder" in capsys.readouterr().err
