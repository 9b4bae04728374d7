"""ONNX Runtime as a decoder backend for `search.py`: the encoder runs once per batch, the decoder
once per step with the KV cache fed back in.

Two backends share one interface:
- `OnnxBackend` keeps the cache in numpy arrays (the CPU path: ORT's CPU tensors are host memory anyway);
- `IOBindingBackend` keeps it in OrtValues on the session's device (CUDA), binding each step's
  `present_*` outputs as the next step's `past_*` inputs, so only what the search reads (the search
  head's top-k, or the logits) comes back to the host.
  It runs with device "cpu" too, which is how the tests check it against `OnnxBackend`.

Besides the search's one token a step, `teacher_force` feeds known tokens [N,T] in one call and
returns every position's logits: the export's parity check compares those with PyTorch.

Cross-attention keys/values depend only on the source sentence, so both backends track which
sentence each state row belongs to and re-gather them only when that changes (a sentence
finishing, or the first beam expansion), not on every beam reorder. A decoder exported with
"cross_per_sentence" (bundle_format.py) takes them once per sentence, shared by its beams: 4x less
cache memory at beam 4, and no re-gather at the first expansion.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import threading
import time
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import onnxruntime as ort

from . import bundle_format as bf
from .bundle_format import BundleConfig
from .durable import flush_to_disk
from .errors import ModelLoadError, OutOfMemory, ProviderError, is_out_of_memory
from .gather_graph import FLOAT, FLOAT16, gather_model

PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}
OPTIMIZATION_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


@dataclass
class SessionSettings:
    threads: int | None = None            # intra-op threads; None = ORT's default (one per physical core), or `limited_cpus`
    graph_optimization: str = "all"       # "disable" | "basic" | "extended" | "all"
    # ORT's CPU arena: faster repeated allocations, but memory is kept (off: news beam-32 peak RSS
    # 262 -> 206 MB, Tatoeba beam 0.93x the speed; benchmarks/PERF_NOTES.md). CPU sessions share one
    # arena per process (`shared_cpu_arena`).
    memory_arena: bool = True
    log_level: int = 3                    # 3 = errors only (ORT warns about unused initializers etc.)
    # Idle intra-op threads busy-wait for the next op by default. On a CPU shared with other work
    # (the usual case on an edge device) that spinning steals the cores the other threads need:
    # measured 1.4x (beam) to 1.9x (greedy) slower with 2 threads on 2 busy cores (benchmarks/PERF_NOTES.md).
    spinning: bool = False
    # Keep ORT's optimized copy of each CPU graph, with its weights packed for this CPU's kernels, in the
    # cache (bundle.cache_root() / "ort"), so later loads skip graph optimization and weight packing
    # (`create_session`). Off with MT_ORT_CACHE=0. The copy is specific to this CPU and onnxruntime
    # version, hence a cache.
    cache_optimized: bool = True
    parallel_batches: int = 1             # batches decoded at once, each calling these sessions
    # One request at a time (`Translator(low_latency=True)`); see `for_graph`.
    low_latency: bool = False
    worker_cpu: int | None = None         # the CPU (0-based) the one extra intra-op thread is pinned to

    def for_graph(self, variant: str, graph: str) -> "SessionSettings":
        """The settings of one graph's session ("encoder" or "decoder"). With low_latency, the int8
        decoder takes a second thread that busy-waits between kernels, pinned to a CPU of its own: at batch 1
        its largest matrix, the 16000 x 256 output projection, is a read of 4 MB a step, and split over
        two cores half of it stays in that core's cache. The int8 encoder stays on one thread, which is
        faster at batch 1, and so does the decoder given one CPU or threads=1 (PERF_NOTES.md, sessions 12
        and 39)."""
        settings = self.for_variant(variant)
        if not (self.low_latency and variant == "int8"):
            return settings
        cpus = affinity()
        if graph == "encoder" or len(cpus) < 2 or available_cpus() < 2 or self.threads == 1:
            return replace(settings, threads=1)
        return replace(settings, threads=2, spinning=True, worker_cpu=cpus[-1])

    def for_variant(self, variant: str) -> "SessionSettings":
        """The settings for one variant's sessions. Parallel batches on the int8 graphs share the
        threads, threads // parallel_batches each: on a 2-core AMD EPYC one thread gave 0.92-0.94x the
        greedy latency of two (waking a pool thread costs more than a second core gives kernels this
        small), beam unchanged. fp32 kept both (one: 1.26-1.29x the latency); PERF_NOTES.md, session 12."""
        if variant != "int8" or self.parallel_batches <= 1:
            return self
        return replace(self, threads=max(1, (self.threads or available_cpus()) // self.parallel_batches))


def affinity() -> list[int]:
    """The CPUs (0-based) this process may run on: its affinity mask, e.g. under taskset or a container's
    cpuset; [] where the OS does not say (not on Linux)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:
        return []


def available_cpus() -> int:
    """How many CPUs this process may use: those it may run on (`affinity`; else all of them), and no
    more than its cgroup's CPU quota, rounded up (`cpu_quota`)."""
    cpus = len(affinity()) or os.cpu_count() or 1
    quota = cpu_quota()
    return max(1, min(cpus, math.ceil(quota))) if quota else cpus


def limited_cpus() -> int | None:
    """`available_cpus` where it is fewer than the machine's (taskset, a container's cpuset or CPU quota),
    else None: ONNX Runtime's default thread count. That default counts the machine's cores, not the
    mask: two threads on one CPU take 13% more CPU time and ~100 MB more address space (their stacks and
    malloc arenas)."""
    cpus = available_cpus()
    return cpus if cpus < (os.cpu_count() or 0) else None


def cpu_quota() -> float | None:
    """The CPUs' worth of time this process's cgroup may take (docker --cpus, a Kubernetes CPU limit):
    cgroup v2's cpu.max, or v1's cpu.cfs_quota_us over cpu.cfs_period_us, read in the cgroup's own
    directory or, in a container, at the root of its own view; None without a quota or off Linux. Two
    batches at once under a one-CPU quota took 1.2-1.7x the time of one, the quota throttling them."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            groups = [line.rstrip("\n").split(":", 2) for line in f]
    except OSError:
        return None
    for _, controllers, path in (g for g in groups if len(g) == 3):
        if controllers == "":
            root, names = "/sys/fs/cgroup", ("cpu.max",)
        elif "cpu" in controllers.split(","):
            root, names = f"/sys/fs/cgroup/{controllers}", ("cpu.cfs_quota_us", "cpu.cfs_period_us")
        else:
            continue
        for directory in (root + path, root):
            try:
                quota, period = " ".join(Path(directory, name).read_text() for name in names).split()[:2]
                return None if quota in ("max", "-1") else int(quota) / int(period)
            except (OSError, ValueError):
                continue
    return None


def cuda_available() -> bool:
    """Whether this onnxruntime build ships the CUDA provider (not whether it works: see `create_session`)."""
    return PROVIDERS["cuda"] in ort.get_available_providers()


@functools.cache
def shared_cpu_arena() -> None:
    """Register one CPU arena with ONNX Runtime's environment, once per process; sessions opt in with
    "session.use_env_allocators". The encoder's and the decoder's activations are never live at once, and
    with one arena apiece each kept its own high-water mark: sharing one lowered mt-bench's peak RSS by about
    12 MB at the same speed (PERF_NOTES.md, session 24). What the arena holds stays with the process until
    it exits, also after its Translators are gone (memory_arena=False avoids the arena)."""
    info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
    try:
        ort.create_and_register_allocator(info, ort.OrtArenaCfg(0, -1, -1, -1))   # ORT's default arena
    except Exception:   # registered already: by the embedding application, or by a session built at the same time
        pass


def session_options(settings: SessionSettings, provider: str = "cpu") -> ort.SessionOptions:
    if settings.graph_optimization not in OPTIMIZATION_LEVELS:
        raise ValueError(f"graph_optimization must be one of {', '.join(OPTIMIZATION_LEVELS)}")
    so = ort.SessionOptions()
    so.graph_optimization_level = OPTIMIZATION_LEVELS[settings.graph_optimization]
    so.enable_cpu_mem_arena = settings.memory_arena
    if settings.memory_arena and provider == "cpu":
        shared_cpu_arena()
        so.add_session_config_entry("session.use_env_allocators", "1")
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.inter_op_num_threads = 1           # the graphs are a single chain: no parallel branches to run
    threads = settings.threads or limited_cpus()
    if threads:
        so.intra_op_num_threads = threads
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if settings.spinning else "0")
    if settings.worker_cpu is not None:     # ONNX Runtime numbers the logical processors from 1
        so.add_session_config_entry("session.intra_op_thread_affinities", str(settings.worker_cpu + 1))
    # A session that fails to load raises what ORT would log at level 3 (errors), and the caller says it
    # in one line: the log would only repeat it above, in colour, a few lines long. A lower level, asked
    # for to debug, is kept.
    so.log_severity_level = 4 if settings.log_level >= 3 else settings.log_level
    return so


def create_session(model: Path | bytes, provider: str, settings: SessionSettings,
                   name: str = "") -> ort.InferenceSession:
    """An InferenceSession on exactly `provider`, or an error: ORT silently falls back to CPU when the
    CUDA libraries are missing, so the providers actually in use are checked after creation."""
    if provider not in PROVIDERS:
        raise ProviderError(f"unknown provider {provider!r} (expected one of: {', '.join(PROVIDERS)}, auto)")
    if provider == "cuda" and not cuda_available():
        raise ProviderError("CUDA was requested, but this onnxruntime build has no CUDAExecutionProvider "
                            f"(available: {', '.join(ort.get_available_providers())}); install the `gpu` extra "
                            "(onnxruntime-gpu) or use --provider cpu")
    providers = [PROVIDERS[provider]] + (["CPUExecutionProvider"] if provider == "cuda" else [])
    label = name or str(model)
    options = session_options(settings, provider)
    cached = optimized_copy(Path(model), provider, settings) if not isinstance(model, bytes) else None
    entry, key = cached or (None, "")
    if entry is not None and entry_key(entry) == key and (entry / CACHED_GRAPH).is_file():
        try:   # already optimized: load it as it is
            loaded = session_options(replace(settings, graph_optimization="disable"), provider)
            session = ort.InferenceSession(str(entry / CACHED_GRAPH), sess_options=loaded, providers=providers)
        except Exception:   # a damaged cache entry: optimize the bundle's graph again, and rewrite it
            pass
        else:
            with contextlib.suppress(OSError):      # a read-only cache is read all the same
                os.utime(entry)              # recently used: pruned last
            return session
    partial = start_entry(entry, key, options) if entry is not None else None
    source = model if isinstance(model, bytes) else str(model)
    try:
        try:
            session = ort.InferenceSession(source, sess_options=options, providers=providers)
        except Exception as saving:
            if partial is None:
                raise
            remove(partial)
            partial = None        # perhaps only the cache could not be written: once more without it
            session = ort.InferenceSession(source, sess_options=session_options(settings, provider), providers=providers)
            if not is_out_of_memory(saving):
                note_no_room(entry)   # it was (a full disk, a quota)
    except Exception as e:  # ORT raises its own exception types for unreadable or invalid graphs
        if is_out_of_memory(e):
            raise OutOfMemory(f"{label}: out of memory loading it") from None
        message = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        raise ModelLoadError(f"{label}: not a usable ONNX model ({message})") from None
    if partial is not None:
        finish_entry(partial, entry)
    if session.get_providers()[0] != PROVIDERS[provider]:
        raise ProviderError(f"CUDA was requested, but ONNX Runtime could not initialize it for {label} "
                            f"(it fell back to {session.get_providers()[0]}); check the CUDA and cuDNN "
                            "libraries that onnxruntime-gpu needs, or use --provider cpu")
    return session


CACHED_GRAPH, CACHED_WEIGHTS, CACHED_KEY = "graph.onnx", "graph.onnx.data", "key"    # a cache entry's files


def optimized_copy(model: Path, provider: str, settings: SessionSettings) -> tuple[Path, str] | None:
    """The cache entry (a directory) of ORT's optimized copy of `model` and its key (CPU only: the file's
    path, size and mtime, the onnxruntime version, the optimization level and the CPU), or None when
    not caching."""
    if (provider != "cpu" or not settings.cache_optimized or settings.graph_optimization == "disable"
            or os.environ.get("MT_ORT_CACHE") == "0"):
        return None
    from .bundle import cache_root

    try:
        model = model.resolve()
        st = model.stat()
        key = (f"{model}|{st.st_size}|{st.st_mtime_ns}|{ort.__version__}|{settings.graph_optimization}|"
               f"{cpu_signature()}")
        directory = cache_root() / "ort"
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:               # no such file (ORT will say so), or no cache and none can be made: don't cache
        return None
    # Named by zlib's checksums, not hashlib's: importing OpenSSL's bindings took 3% of mt-translate's
    # start-up. The key file inside the entry settles a clash of names.
    data = key.encode()
    entry = directory / f"{model.stem}-{zlib.crc32(data):08x}{zlib.adler32(data):08x}"
    return None if no_room(entry, st.st_size) else (entry, key)


def no_room_note(entry: Path) -> Path:
    """Where a cache entry that did not fit notes the disk's free bytes then."""
    return entry.with_name(f".{entry.name}.full")


def note_no_room(entry: Path) -> None:
    """Note that `entry` could not be written: without the note each later load optimizes the graph
    twice, a save that fails and once more without it (on a full disk, for the shipped model, 25% more
    start-up and 45 MB more peak RSS). The note is a leftover that `prune_cache` deletes after an hour."""
    import shutil

    try:
        no_room_note(entry).write_text(str(shutil.disk_usage(entry.parent).free), encoding="utf-8")
    except OSError:
        pass


def no_room(entry: Path, needed: int) -> bool:
    """Whether `entry` did not fit and the disk has no room for it yet: no more free than then (see
    `note_no_room`), or less than `needed`, its graph's size, which the entry holds at least. The two
    graphs are built at once, so the free bytes noted for one may have been the other's failed copy's,
    freed since: more free than then, and still no room."""
    try:
        then = int(no_room_note(entry).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    import shutil

    try:
        return shutil.disk_usage(entry.parent).free <= max(then, needed)
    except OSError:
        return False


def entry_key(entry: Path) -> str | None:
    try:
        return (entry / CACHED_KEY).read_text(encoding="utf-8")
    except OSError:
        return None


@functools.cache
def cpu_signature() -> str:
    """The first CPU's model and feature flags (x86: "model name", "flags"; Arm: "CPU part", "Features"):
    the packed weights follow the kernels ORT picks for them, and one cache directory may serve several
    machines (a home directory on a network share)."""
    fields = ("model name", "flags", "CPU implementer", "CPU part", "Features")
    try:
        found = []
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():      # the end of the first CPU's block
                    break
                if line.split(":", 1)[0].strip() in fields:
                    found.append(line.strip())
        return " | ".join(found)
    except OSError:               # not Linux
        import platform
        return f"{platform.machine()} {platform.processor()}"


def start_entry(entry: Path, key: str, options: ort.SessionOptions) -> Path | None:
    """A private directory for ORT to write the optimized copy into while it builds the session (None if
    it cannot be made). Weights of 1 KiB and more go to a file beside the graph, each also packed the way
    this CPU's kernels read it: a later load maps that file instead of reading and packing the weights
    again, which halves the int8 encoder's session creation and lowers peak RSS by 10-14 MB
    (PERF_NOTES.md, session 24). The bundle's shared table goes into that file too, so the entry stands
    on its own."""
    partial = entry.with_name(f".{entry.name}.{writer()}.tmp")
    try:
        remove(partial)
        partial.mkdir()
        (partial / CACHED_KEY).write_text(key, encoding="utf-8")
    except OSError:               # a read-only or full disk: not even the key fits
        remove(partial)
        return None
    options.optimized_model_filepath = str(partial / CACHED_GRAPH)
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name", CACHED_WEIGHTS)
    options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    options.add_session_config_entry("session.save_external_prepacked_constant_initializers", "1")
    return partial


def writer() -> str:
    """This process and thread, in the names of the directories it writes: Translators loading the same
    graph in several threads at once each need their own (with the pid alone, each removed the others'
    and none was cached)."""
    return f"{os.getpid()}.{threading.get_ident()}"


def finish_entry(partial: Path, entry: Path) -> None:
    """Put the written copy in place (a rename: a concurrent reader sees a whole entry or none), set a
    damaged entry aside first, and prune."""
    old = entry.with_name(f".{entry.name}.{writer()}.old")
    try:
        flush_to_disk(partial)
        if entry.exists():
            entry.rename(old)
        partial.rename(entry)
    except OSError:               # another process put its copy in place first: keep that one
        remove(partial)
    remove(old)
    remove(no_room_note(entry))
    prune_cache(entry.parent)


CACHE_BYTES = 1 << 30   # the optimized graphs kept, most recently used first: a dozen int8 bundles, or a few fp32
CACHE_NEWEST = 2        # kept whatever their size: the encoder and decoder just loaded


def prune_cache(directory: Path, budget: int = CACHE_BYTES) -> None:
    """Delete the least recently used entries beyond `budget` bytes (those of moved or re-exported
    bundles are never looked up again), leftovers of writers that stopped over an hour ago, and the
    single-file entries of earlier versions. A budget in bytes rather than entries, since an fp32
    graph's entry is four times an int8 one's: a user of several int8 models keeps them all."""
    try:
        items = list(directory.iterdir())
        entries = sorted((p for p in items if p.is_dir() and not p.name.startswith(".")),
                         key=lambda p: p.stat().st_mtime, reverse=True)
        sizes = [sum(f.stat().st_size for f in entry.iterdir()) for entry in entries]
        stale = [p for p in items if p.name.startswith(".") and p.stat().st_mtime < time.time() - 3600]
    except OSError:
        return
    total = 0
    for i, (entry, size) in enumerate(zip(entries, sizes)):
        total += size
        if i >= CACHE_NEWEST and total > budget:
            stale.append(entry)
    for path in stale + list(directory.glob("*.onnx")):
        remove(path)


def remove(path: Path) -> None:
    """Delete a cache entry or a leftover, directory or file, if it can be (it may be gone already, or
    open on a system that cannot delete open files). shutil is imported here: with its compression
    modules it would add 5 ms to every mt-translate start-up."""
    import shutil

    try:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    except OSError:
        pass


# Element types as ONNX Runtime names them. A float tensor is float32, or float16 in the fp16 variant.
FLOATS = ("tensor(float)", "tensor(float16)")
INT64, BOOL = ("tensor(int64)",), ("tensor(bool)",)


def expected_tensors(graph: str, config: BundleConfig) -> dict[str, tuple[tuple[str, ...], tuple]]:
    """What the runtime feeds `graph` ("encoder" or "decoder") and reads from it (bundle_format.py's
    layout): name -> (the element types it may have, its dims), a dim being (what config.json calls it,
    its value) where config.json fixes it, else None (batch, lengths)."""
    names = config.names
    cache = (FLOATS, (None, ("n_heads", config.n_heads), None, ("head_dim", config.head_dim)))
    expected = {names.src_mask: (BOOL, (None, None))}
    if graph == "encoder":
        expected[names.src_ids] = (INT64, (None, None))
        expected[names.encoder_outputs[0]] = (FLOATS, (None, None, ("d_model", config.d_model)))
        expected.update({name: cache for name in names.cross})
        return expected
    expected[names.tgt_ids] = (INT64, (None, None))
    expected.update({name: cache for name in (*names.past, *names.cross, *names.present)})
    expected[names.logits] = (FLOATS, (None, None, ("vocab_size", config.vocab_size)))
    expected[names.cross_attention] = (FLOATS, (None, None, None))
    if names.search_head:
        top_logprobs, top_ids, eos_logprob = names.search_head
        expected.update({top_logprobs: (FLOATS, (None, None)), top_ids: (INT64, (None, None)),
                         eos_logprob: (FLOATS, (None,))})
    return expected


def check_graph(session: ort.InferenceSession, graph: str, config: BundleConfig, path: Path) -> None:
    """The graph's inputs and outputs must be the ones config.json's "tensors" promises, of the element
    types the runtime feeds and reads, and of the sizes config.json gives wherever the graph fixes one
    (ONNX Runtime's session says so at no cost): heads and head size of every cache tensor (the runtime
    makes its first, empty cache from config.json's), the encoder's width, the decoder's vocabulary.
    A mismatch is one ModelLoadError naming the file and what differs."""
    names = config.names
    expected_inputs, expected_outputs = ((names.encoder_inputs, names.encoder_outputs) if graph == "encoder"
                                         else (names.decoder_inputs, names.decoder_outputs))
    inputs = [i.name for i in session.get_inputs()]
    outputs = [o.name for o in session.get_outputs()]
    missing = [n for n in expected_inputs if n not in inputs] + [n for n in expected_outputs if n not in outputs]
    if missing:
        raise ModelLoadError(f"{path}: graph lacks {', '.join(missing)}; it does not match "
                             f"{bf.CONFIG_FILE} ({config.decoder_layers} decoder layers)")
    expected = expected_tensors(graph, config)
    for role, tensors in (("input", session.get_inputs()), ("output", session.get_outputs())):
        for tensor in tensors:
            if tensor.name in expected:
                check_tensor(tensor, role, *expected[tensor.name], path)


def check_tensor(tensor, role: str, types: tuple[str, ...], dims: tuple, path: Path) -> None:
    """One input or output (an ORT NodeArg) against its expected element types and `dims`
    (`expected_tensors`). A dim the graph leaves open (a name, or None) passes, as does a shape
    ONNX Runtime does not know ([])."""
    where = f"{path}: {role} {tensor.name}"
    if tensor.type not in types:
        raise ModelLoadError(f"{where} is {tensor.type}, but the runtime {'feeds' if role == 'input' else 'reads'} "
                             f"{' or '.join(types)}; it does not match")
    shape = tensor.shape or []
    if not shape:
        return
    if len(shape) != len(dims):
        raise ModelLoadError(f"{where} has {len(shape)} dimensions {shape}, but the runtime expects {len(dims)}; "
                             "it does not match")
    differs = [k for k, dim in enumerate(dims) if dim and isinstance(shape[k], int) and shape[k] != dim[1]]
    if not differs:
        return
    if len(dims) == 4 and dims[1] and dims[3]:            # a cache tensor: [B, heads, length, head_dim]
        raise ModelLoadError(f"{where} has {shape[1]} heads of {shape[3]}, but {bf.CONFIG_FILE} says "
                             f"{dims[1][1]} of {dims[3][1]}; it does not match")
    field, value = dims[differs[0]]
    raise ModelLoadError(f"{where} has {field} {shape[differs[0]]}, but {bf.CONFIG_FILE} says {value}; "
                         "it does not match")


def check_pair(encoder: ort.InferenceSession, decoder: ort.InferenceSession, config: BundleConfig,
               encoder_path: Path, decoder_path: Path) -> None:
    """The encoder's cross_key/cross_value outputs are fed to the decoder as they are: both graphs must
    agree on their element type (config.json does not say it; a float32 encoder beside an fp16 decoder
    would fail at the first decoder step)."""
    takes = {i.name: i.type for i in decoder.get_inputs()}
    for output in encoder.get_outputs():
        if output.name in config.names.cross and takes.get(output.name, output.type) != output.type:
            raise ModelLoadError(f"{encoder_path}: output {output.name} is {output.type}, but {decoder_path.name} "
                                 f"takes {takes[output.name]}; the two graphs are not of one export")


# ONNX Runtime's own exception types, which a session's run raises; run_with_iobinding raises a
# RuntimeError ("Error in execution: ...") instead.
ORT_ERRORS = tuple(e for e in vars(ort.capi.onnxruntime_pybind11_state).values()
                   if isinstance(e, type) and issubclass(e, Exception))
BINDING_ERRORS = (RuntimeError, *ORT_ERRORS)


def run_error(path: Path | str, error: Exception) -> ModelLoadError:
    """ONNX Runtime's error in running the graph `path`, as one line naming the file. A graph that passed
    `check_graph` may still not fit config.json where the session does not say (e.g. a positions table
    shorter than max_positions, an embedding table smaller than vocab_size): ORT then fails at run time,
    with an InvalidArgument or a Fail naming a node. The hint is left out where the cause is another:
    memory, or a kernel the provider lacks."""
    if is_out_of_memory(error):
        return OutOfMemory(f"{path}: out of memory running it")
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    message = re.sub(r"^(\[ONNXRuntimeError\] : \d+ : \w+ : |Error in execution: )", "", message)
    message = re.sub(r"\S*onnxruntime_src/\S+:\d+ .*? was false\. ", "", message)[:300]   # ORT's source line
    state = ort.capi.onnxruntime_pybind11_state
    mismatch = (not isinstance(error, (state.NotImplemented, state.EPFail))
                and not re.search(r"memory|allocat", message, re.IGNORECASE))
    hint = f"; does the graph match {bf.CONFIG_FILE}?" if mismatch else ""
    return ModelLoadError(f"{path}: ONNX Runtime could not run it ({message}){hint}")


def token_rows(tokens: np.ndarray) -> np.ndarray:
    """The decoder's tgt_ids, int64 [N,T]: a search step's one token per row [N] becomes [N,1]."""
    tokens = np.ascontiguousarray(tokens, dtype=np.int64)
    return tokens.reshape(-1, 1) if tokens.ndim == 1 else tokens


def first_rows(rows: np.ndarray, have: np.ndarray) -> np.ndarray | None:
    """Index into `have` (the sentence of each materialized row) giving sentence `rows[i]` for each i,
    or None when `have` already equals `rows`."""
    if rows.shape == have.shape and np.array_equal(rows, have):
        return None
    lookup = np.empty(int(have.max()) + 1, dtype=np.int64)
    lookup[have[::-1]] = np.arange(len(have) - 1, -1, -1)      # first occurrence wins
    return lookup[rows]


def sentence_groups(rows: np.ndarray) -> np.ndarray | None:
    """The sentences of `rows` once each, when every sentence's rows are consecutive and equally
    many (as beam search keeps them), so a decoder that takes cross per sentence can share them;
    else None (the cross tensors then go per row)."""
    if not len(rows):
        return None
    sentences = rows[np.r_[True, rows[1:] != rows[:-1]]]          # the first row of each run
    per_sentence = len(rows) // len(sentences)   # with unequal runs, the repeat below cannot equal rows
    ordered = np.sort(sentences)          # not np.unique: its first call imports numpy.ma (10 ms of a cold start)
    if (ordered[1:] == ordered[:-1]).any() or not np.array_equal(np.repeat(sentences, per_sentence), rows):
        return None
    return sentences


@dataclass
class OnnxState:
    src_mask: np.ndarray              # for the sentences in `cross_rows`
    cross: dict                       # cross_key_i / cross_value_i, computed once per batch
    past: dict                        # past_key_i / past_value_i, one position longer each step
    rows: np.ndarray                  # sentence of each state row
    cross_rows: np.ndarray = field(default=None)   # sentence of each row of `cross` and `src_mask`:
                                                   # one a row, or one a sentence (`sentence_groups`)
    aligned_for: np.ndarray = field(default=None)  # the `rows` that `cross_rows` was last fitted to


class OnnxBackend:
    def __init__(self, encoder: ort.InferenceSession, decoder: ort.InferenceSession, config: BundleConfig,
                 paths: tuple[Path, Path] | None = None):
        self.encoder = encoder
        self.decoder = decoder
        # The graphs' files, which an error of ONNX Runtime in running them names (`run_error`).
        self.paths = dict(zip(("encoder", "decoder"), paths or ("encoder graph", "decoder graph")))
        # Those errors reach the caller as exceptions, so ORT's own log line of them (errors are logged at
        # the default log_level, 3) would only repeat one, in colour, above the one-line message; a lower
        # level, asked for to debug, is kept.
        level = decoder.get_session_options().log_severity_level
        self.run_options = ort.RunOptions()
        self.run_options.log_severity_level = 4 if level >= 3 else level
        self.names = names = config.names          # every tensor name comes from config.json
        self.heads = config.n_heads
        self.head_dim = config.head_dim
        # fp16 graphs take fp16 caches: read the dtype from the graph rather than assume it.
        past_type = {i.name: i.type for i in decoder.get_inputs()}[names.past[0]]
        self.cache_dtype = np.float16 if "float16" in past_type else np.float32
        self.cross_names, self.past_names, self.present_names = names.cross, names.past, names.present
        # How many tokens per row the graph's search head ranks; 0 for bundles exported before it
        # (the search then works from the logits).
        outputs = {o.name: o for o in decoder.get_outputs()}
        head = names.search_head
        self.search_head_k = outputs[head[1]].shape[1] if head and head[1] in outputs else 0

    # The three `DecoderBackend` methods.

    def start(self, src_ids: np.ndarray, src_mask: np.ndarray) -> OnnxState:
        src_mask = src_mask.astype(bool, copy=False)
        try:
            outputs = self.encoder.run(self.cross_names, {self.names.src_ids: src_ids.astype(np.int64, copy=False),
                                                          self.names.src_mask: src_mask}, self.run_options)
        except ORT_ERRORS as e:
            raise run_error(self.paths["encoder"], e) from None
        rows = np.arange(src_ids.shape[0])
        return OnnxState(src_mask, dict(zip(self.cross_names, outputs)), self._empty_past(len(rows)), rows, rows)

    def step(self, state: OnnxState, tokens: np.ndarray, need_attention: bool = False):
        logits, attention = self.teacher_force(state, tokens, need_attention)
        return logits[:, -1], (attention[:, -1] if need_attention else None)

    def step_top(self, state: OnnxState, tokens: np.ndarray):
        """A step through the graph's search head: each row's `search_head_k` best log-probs (best
        first), their token ids and EOS's log-prob [N]."""
        return tuple(self._run(state, tokens, self.names.search_head))   # float32 in every variant

    def select(self, state: OnnxState, rows: np.ndarray) -> None:
        identity = len(rows) == len(state.rows) and np.array_equal(rows, np.arange(len(rows)))
        state.rows = state.rows[rows]
        if not identity:
            for name in state.past:      # one tensor at a time: each old one is freed before the next copy
                state.past[name] = self._take(state.past[name], rows)

    def teacher_force(self, state: OnnxState, tokens: np.ndarray, need_attention: bool = False):
        """Feed known tokens [N,T] (or one a row, [N]) after the state's cache, in one decoder call;
        return float32 logits [N,T,V] and, if asked, the cross-attention [N,T,S] of every position.
        The cache grows by T positions, so a decode may go on from there."""
        names = [self.names.logits] + ([self.names.cross_attention] if need_attention else [])
        outputs = self._run(state, tokens, names)
        attention = outputs[1].astype(np.float32) if need_attention else None
        return outputs[0].astype(np.float32, copy=False), attention

    # Helpers the IOBinding backend overrides.

    def _run(self, state: OnnxState, tokens: np.ndarray, names: list[str]) -> list:
        """One decoder call on `tokens` ([N] or [N,T]): the new caches become the state's past;
        returns the outputs `names`."""
        self._align_cross(state)
        feeds = {self.names.tgt_ids: token_rows(tokens),
                 self.names.src_mask: state.src_mask,
                 **state.past, **state.cross}
        try:
            outputs = self.decoder.run(names + self.present_names, feeds, self.run_options)
        except ORT_ERRORS as e:
            raise run_error(self.paths["decoder"], e) from None
        state.past = dict(zip(self.past_names, outputs[len(names):]))
        return outputs[:len(names)]

    def _empty_past(self, batch: int) -> dict:
        empty = np.zeros((batch, self.heads, 0, self.head_dim), dtype=self.cache_dtype)
        return {name: empty for name in self.past_names}

    def _take(self, value, rows: np.ndarray):
        return np.take(value, rows, axis=0)

    def _align_cross(self, state: OnnxState) -> None:
        if state.aligned_for is state.rows:     # no row left or moved since (greedy, most steps)
            return
        state.aligned_for = state.rows
        wanted = sentence_groups(state.rows) if self.names.cross_per_sentence else None
        if wanted is None:
            wanted = state.rows
        index = first_rows(wanted, state.cross_rows)
        if index is not None:
            for name in state.cross:
                state.cross[name] = self._take(state.cross[name], index)
            state.src_mask = np.take(state.src_mask, index, axis=0)
            state.cross_rows = wanted


class IOBindingBackend(OnnxBackend):
    """The KV cache stays on `device` ("cuda", or "cpu" for testing) as OrtValues between steps."""

    def __init__(self, encoder: ort.InferenceSession, decoder: ort.InferenceSession, config: BundleConfig,
                 device: str = "cuda", device_id: int = 0, settings: SessionSettings | None = None,
                 paths: tuple[Path, Path] | None = None):
        super().__init__(encoder, decoder, config, paths)
        self.device, self.device_id = device, device_id
        # Row selection runs as a one-node Gather graph on the cache's own device.
        elem = FLOAT16 if self.cache_dtype == np.float16 else FLOAT
        self.gather = create_session(gather_model(elem), device, settings or SessionSettings(), name="row gather graph")

    def start(self, src_ids: np.ndarray, src_mask: np.ndarray) -> OnnxState:
        src_mask = src_mask.astype(bool, copy=False)
        binding = self.encoder.io_binding()
        binding.bind_cpu_input(self.names.src_ids, np.ascontiguousarray(src_ids, dtype=np.int64))
        binding.bind_cpu_input(self.names.src_mask, np.ascontiguousarray(src_mask))
        for name in self.cross_names:
            binding.bind_output(name, self.device, self.device_id)
        try:
            self.encoder.run_with_iobinding(binding, self.run_options)
        except BINDING_ERRORS as e:
            raise run_error(self.paths["encoder"], e) from None
        rows = np.arange(src_ids.shape[0])
        cross = dict(zip(self.cross_names, binding.get_outputs()))
        return OnnxState(src_mask, cross, self._empty_past(len(rows)), rows, rows)

    def _run(self, state: OnnxState, tokens: np.ndarray, names: list[str]) -> list:
        self._align_cross(state)
        binding = self.decoder.io_binding()
        binding.bind_cpu_input(self.names.tgt_ids, token_rows(tokens))
        binding.bind_cpu_input(self.names.src_mask, np.ascontiguousarray(state.src_mask))   # [N,S] bools: tiny
        for name, value in (*state.past.items(), *state.cross.items()):
            if isinstance(value, np.ndarray):           # the empty cache of the first step
                binding.bind_cpu_input(name, value)
            else:
                binding.bind_ortvalue_input(name, value)
        for name in names:                              # what the search needs comes to the host
            binding.bind_output(name, "cpu")
        for name in self.present_names:
            binding.bind_output(name, self.device, self.device_id)
        try:
            self.decoder.run_with_iobinding(binding, self.run_options)
        except BINDING_ERRORS as e:
            raise run_error(self.paths["decoder"], e) from None
        outputs = binding.get_outputs()                 # in the order bound above
        state.past = dict(zip(self.past_names, outputs[len(names):]))
        return [value.numpy() for value in outputs[:len(names)]]

    def _take(self, value, rows: np.ndarray):
        if isinstance(value, np.ndarray):               # the empty first-step cache stays on the host
            return np.take(value, rows, axis=0)
        binding = self.gather.io_binding()
        binding.bind_ortvalue_input("data", value)
        binding.bind_cpu_input("indices", np.ascontiguousarray(rows, dtype=np.int64))
        binding.bind_output("output", self.device, self.device_id)
        self.gather.run_with_iobinding(binding)
        return binding.get_outputs()[0]
