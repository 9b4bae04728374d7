"""The speed-ups keep results: beam candidates chosen per row equal a full sort, the cached
ORT-optimized graphs give the same logits, and a damaged cache entry is rebuilt."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from conftest import ORT_THREADS
from mtkit.runtime import Translator
from mtkit.runtime.batching import pad_batch
from mtkit.runtime.search import best_candidates, log_softmax, top_tokens


def full_sort(beam_scores, logp, width):
    """The obvious way: every beam score + log p of a sentence, sorted by score then index."""
    n, k = beam_scores.shape
    cand = (beam_scores[:, :, None] + logp.reshape(n, k, -1)).reshape(n, -1)
    order = np.lexsort((np.broadcast_to(np.arange(cand.shape[1]), cand.shape), -cand), axis=1)[:, :width]
    return order, np.take_along_axis(cand, order, axis=1)


@pytest.mark.parametrize("seed", range(20))
def test_best_candidates_equal_a_full_sort(seed):
    rng = np.random.default_rng(seed)
    k, n, vocab = int(rng.integers(1, 6)), int(rng.integers(1, 7)), int(rng.integers(12, 200))
    logp = log_softmax((rng.normal(size=(n * k, vocab)) * 3).astype(np.float32))
    beam_scores = rng.normal(size=(n, k)) * 4
    if seed % 2:
        beam_scores[:, 1:] = -np.inf                   # the first step: one live beam per sentence
        logp[:, rng.integers(0, vocab, 3)] = -np.inf   # banned tokens
    beams, tokens, scores = best_candidates(beam_scores, *top_tokens(logp, 2 * k), 2 * k)
    ref_index, ref_scores = full_sort(beam_scores, logp, 2 * k)
    assert np.array_equal(scores, ref_scores)
    finite = np.isfinite(ref_scores)                   # the search stops at the first -inf
    assert np.array_equal((beams * vocab + tokens)[finite], ref_index[finite])


def first_logits(translator):
    ids, mask = pad_batch([[5, 40, 41, 42, 3], [5, 43, 3]])
    state = translator.backend.start(ids, mask)
    return translator.backend.step(state, np.array([2, 2]))[0]


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_optimized_graph_cache(fixture_bundle, tmp_path, monkeypatch, variant):
    """Each graph's entry holds ORT's optimized graph, its weights packed for this CPU and its key, and gives
    the same logits as the bundle; a damaged entry or another graph's is rebuilt, and single-file entries of
    earlier versions go."""
    monkeypatch.setenv("MT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MT_ORT_CACHE", "0")
    load = lambda: first_logits(Translator(fixture_bundle, variant=variant, threads=ORT_THREADS))  # noqa: E731
    plain = load()
    cache = tmp_path / "cache" / "ort"
    assert not cache.exists()
    monkeypatch.delenv("MT_ORT_CACHE")
    written = load()
    entries = sorted(cache.iterdir())
    assert [e.name.split("-")[0] for e in entries] == [f"decoder{'.int8' * (variant == 'int8')}",
                                                      f"encoder{'.int8' * (variant == 'int8')}"]
    assert all(sorted(p.name for p in e.iterdir()) == ["graph.onnx", "graph.onnx.data", "key"] for e in entries)
    read = load()
    assert np.array_equal(plain, written) and np.array_equal(plain, read)
    (entries[0] / "graph.onnx").write_bytes(b"not a graph")      # damaged: optimized again and rewritten
    (cache / "encoder-0123456789abcdef.onnx").write_bytes(b"an entry of an earlier version")
    again = load()
    assert np.array_equal(plain, again) and (entries[0] / "graph.onnx").stat().st_size > 100
    assert sorted(cache.iterdir()) == entries
    (entries[1] / "key").write_text("another graph's key")   # a clash of names: not used, rebuilt
    assert np.array_equal(plain, load()) and (entries[1] / "key").read_text() != "another graph's key"


def test_threads_loading_one_graph_at_once_write_its_cache_entry_apart(tmp_path):
    """Translators of one model loaded in several threads at once each write ORT's copy into a directory
    of their own: named by the pid alone, they removed each other's and the graphs were never cached."""
    import onnxruntime as ort

    from mtkit.runtime.onnx_backend import start_entry
    from mtkit.runtime.threads import Background

    entry = tmp_path / "encoder.int8-0123456789abcdef"
    with Background(start_entry, entry, "key", ort.SessionOptions()) as other:
        mine = start_entry(entry, "key", ort.SessionOptions())
    theirs = other.result()
    assert mine != theirs and mine.is_dir() and theirs.is_dir()


def test_the_cache_keeps_the_most_recently_used_graphs_within_its_budget(tmp_path):
    """Least recently used entries go once the newer ones fill the budget in bytes; the two newest stay
    whatever their size (the graphs just loaded), and so do entries still being written."""
    import os

    from mtkit.runtime.onnx_backend import prune_cache

    def entries(*sizes):
        for age, size in enumerate(sizes):
            entry = tmp_path / f"graph{age}"
            entry.mkdir(exist_ok=True)
            (entry / "graph.onnx.data").write_bytes(b"x" * size)
            os.utime(entry, (1e9 - age, 1e9 - age))       # graph0 is the newest
        (tmp_path / ".being-written").mkdir(exist_ok=True)
        return sorted(p.name for p in tmp_path.iterdir())

    everything = entries(300, 100, 200, 50)
    prune_cache(tmp_path, budget=650)
    assert sorted(p.name for p in tmp_path.iterdir()) == everything
    prune_cache(tmp_path, budget=550)          # 300 + 100 + 200 > 550: the third and the older fourth go
    assert sorted(p.name for p in tmp_path.iterdir()) == [".being-written", "graph0", "graph1"]
    entries(900, 800)
    prune_cache(tmp_path, budget=10)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".being-written", "graph0", "graph1"]


def test_the_cache_key_names_this_cpu():
    """Packed weights are specific to the CPU's kernels, so the cache key holds the first CPU's model and
    flags, read from its own block of /proc/cpuinfo."""
    from pathlib import Path

    from mtkit.runtime.onnx_backend import cpu_signature

    if not Path("/proc/cpuinfo").is_file():
        pytest.skip("no /proc/cpuinfo")
    signature = cpu_signature()
    assert ("model name" in signature or "CPU part" in signature) and ("flags" in signature or "Features" in signature)
    assert sum(part.startswith(("flags", "Features")) for part in signature.split(" | ")) == 1   # one CPU's


@pytest.fixture
def small_disk(tmp_path):
    """An 8 MB tmpfs (root only: skipped elsewhere), unmounted after the test: room for both graphs' entries
    (2.7 MB) with more to spare than ONNX Runtime takes while it writes them at once."""
    import subprocess

    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)],
                                           capture_output=True).returncode:
        pytest.skip("mounting a tmpfs needs root")
    yield disk
    subprocess.run(["umount", str(disk)], check=True)


def test_a_full_cache_disk_is_not_written_to_again_until_it_has_room(fixture_bundle, small_disk, monkeypatch):
    """A cache on a full disk: ONNX Runtime fails to save its optimized copy and the graph is optimized
    again without saving, leaving nothing behind. Each later load did both again (on the shipped model
    25% more start-up and 45 MB more peak RSS, every run); now a load skips the cache while the disk has
    no more room than when the copy did not fit, and writes it once there is."""
    import onnxruntime as ort

    monkeypatch.setenv("MT_CACHE_DIR", str(small_disk))
    filler = small_disk / "filler"
    filler.write_bytes(b"x" * (8 * 2**20 - 200_000))  # ~200 KB left: a graph's entry is 1.2-1.6 MB
    sessions = []
    real = ort.InferenceSession
    monkeypatch.setattr(ort, "InferenceSession", lambda *a, **k: sessions.append(a[0]) or real(*a, **k))
    load = lambda: first_logits(Translator(fixture_bundle, variant="fp32", threads=ORT_THREADS))  # noqa: E731
    plain = load()
    cache = small_disk / "ort"
    assert len(sessions) == 4                         # each graph: a save that failed, then without it
    left = lambda: sorted(p.name for p in cache.iterdir() if not p.name.endswith(".full"))  # noqa: E731
    assert left() == []                               # no entry, whole or half, and no leftover
    sessions.clear()
    assert np.array_equal(load(), plain) and len(sessions) == 2 and left() == []
    filler.unlink()
    sessions.clear()
    assert np.array_equal(load(), plain) and len(sessions) == 2
    assert [name.split("-")[0] for name in left()] == ["decoder", "encoder"]     # written now, the notes gone
    assert not list(cache.glob(".*"))
    assert np.array_equal(load(), plain)


@pytest.fixture
def read_only():
    """make(directory): read-only until the test ends; a read-only bind mount for root, whom file modes do
    not stop (skipped where it cannot mount), else the modes of its directories."""
    import subprocess

    mounted, changed = [], []

    def make(directory):
        if os.geteuid() == 0:
            if subprocess.run(["mount", "--bind", str(directory), str(directory)], capture_output=True).returncode:
                pytest.skip("a read-only bind mount needs mount")
            mounted.append(directory)
            subprocess.run(["mount", "-o", "remount,bind,ro", str(directory)], check=True)
            return
        for path in [directory, *directory.rglob("*")]:
            if path.is_dir():
                path.chmod(0o555)
                changed.append(path)

    yield make
    for directory in mounted:
        subprocess.run(["umount", str(directory)], check=True)
    for path in changed:
        path.chmod(0o755)


def test_a_read_only_cache_is_read(fixture_bundle, tmp_path, monkeypatch, read_only):
    """A cache built beforehand and read-only since (baked into a read-only image, another user's): its
    entries are loaded as they are. It had been passed over for want of write access, and each run
    optimized the graphs again (the shipped model: 134 MB peak RSS instead of 120)."""
    import onnxruntime as ort

    cache = tmp_path / "cache"
    monkeypatch.setenv("MT_CACHE_DIR", str(cache))
    load = lambda: first_logits(Translator(fixture_bundle, variant="int8", threads=ORT_THREADS))  # noqa: E731
    plain = load()
    read_only(cache)
    sessions = []
    real = ort.InferenceSession
    monkeypatch.setattr(ort, "InferenceSession", lambda *a, **k: sessions.append(Path(a[0])) or real(*a, **k))
    assert np.array_equal(load(), plain)
    assert len(sessions) == 2 and all(cache in path.parents for path in sessions), sessions


def test_a_disk_too_full_for_an_entrys_key_keeps_nothing(fixture_bundle, small_disk, monkeypatch):
    """A disk with no byte free: the entry's directory was made, but its key could not be written, and
    the directory stayed, two more at each load."""
    monkeypatch.setenv("MT_CACHE_DIR", str(small_disk))
    (small_disk / "ort").mkdir()
    with open(small_disk / "filler", "wb", buffering=0) as filler:
        try:
            while True:
                filler.write(b"x" * 4096)
        except OSError:                 # full
            pass
    for _ in range(2):
        Translator(fixture_bundle, variant="int8", threads=ORT_THREADS)
    assert list((small_disk / "ort").iterdir()) == []


def test_a_cache_entry_is_on_disk_before_it_is_put_in_place(fixture_bundle, tmp_path, monkeypatch):
    """The entry was renamed into place with its files perhaps still in the page cache: after a power cut
    it could come back whole in name and size but zero-filled, and zeroed packed weights load and
    mistranslate. Each file is flushed to disk (fsync) before the rename."""
    cache = tmp_path / "cache" / "ort"
    in_place_when_synced = {}       # by inode, which the rename keeps: the entries in place by then
    real_fsync = os.fsync

    def fsync(fd):
        in_place_when_synced[os.fstat(fd).st_ino] = {p.name for p in cache.iterdir()}
        real_fsync(fd)

    monkeypatch.setenv("MT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(os, "fsync", fsync)
    Translator(fixture_bundle, variant="int8", threads=ORT_THREADS)
    for entry in cache.iterdir():
        for name in ("graph.onnx", "graph.onnx.data", "key"):
            in_place = in_place_when_synced.get((entry / name).stat().st_ino)
            assert in_place is not None and entry.name not in in_place, (entry, name)
