"""The machine a benchmark ran on: CPU model and cores, memory, platform, library versions and
mtkit's git commit. No hostname: results are committed publicly."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path

# The source checkout this code runs from (beside pyproject.toml), None when installed as a package.
CHECKOUT = Path(__file__).resolve().parents[1]
CHECKOUT = CHECKOUT if (CHECKOUT / "pyproject.toml").is_file() else None


def _cpuinfo() -> dict:
    """CPU model name, family and model numbers, physical cores and feature flags, from /proc/cpuinfo.
    Virtual machines often hide the model name ("AMD EPYC"); family and model still tell the generation."""
    info = {"model name": platform.processor() or platform.machine(), "vendor_id": None, "cpu family": None,
            "model": None, "stepping": None, "flags": ""}
    cores = set()
    physical = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = (part.strip() for part in line.partition(":"))
            if key in info:
                info[key] = value
            elif key == "physical id":
                physical = value
            elif key == "core id":
                cores.add((physical, value))
    except OSError:
        pass
    info["cores"] = len(cores) or (os.cpu_count() or 1)
    return info


def vector_isa(flags: set[str]) -> str | None:
    """The widest x86 vector extension the int8 kernels can use: the ratios against CTranslate2 depend on it."""
    if "amx_int8" in flags:
        return "amx"
    if "avx512f" in flags:
        return "avx512-vnni" if "avx512_vnni" in flags else "avx512"
    return "avx2" if "avx2" in flags else None


# x86 core generations by CPUID family and model, for names that do not tell them ("AMD EPYC").
# Only server parts we can tell apart for sure; anything else stays unnamed.
AMD_GENERATIONS = {23: [(range(0x00, 0x30), "zen"), (range(0x30, 0x100), "zen2")],
                   25: [(range(0x10, 0x20), "zen4"), (range(0x60, 0x80), "zen4"), (range(0xA0, 0xB0), "zen4"),
                        (range(0x00, 0x100), "zen3")],
                   26: [(range(0x00, 0x50), "zen5")]}
INTEL_FAMILY_6 = {0x6A: "ice-lake", 0x6C: "ice-lake", 0x8F: "sapphire-rapids", 0xCF: "emerald-rapids",
                  0xAD: "granite-rapids"}
INTEL_MODEL_0x55 = [(range(0, 5), "skylake"), (range(5, 8), "cascade-lake"), (range(10, 12), "cooper-lake")]


def microarchitecture(vendor: str | None, family: int | None, model: int | None,
                      stepping: int | None = None) -> str | None:
    """The core generation, e.g. "zen3" or "sapphire-rapids", or None where unknown. Kernels and the
    ratios against CTranslate2 change with it even at the same vector extension (Zen 4 and Zen 5)."""
    if family is None or model is None:
        return None
    if vendor == "AuthenticAMD":
        ranges = AMD_GENERATIONS.get(family, [])
    elif vendor == "GenuineIntel" and family == 6:
        if model != 0x55:
            return INTEL_FAMILY_6.get(model)
        ranges, model = INTEL_MODEL_0x55, stepping    # one model number for three generations
    else:
        return None
    return next((name for numbers, name in ranges if model is not None and model in numbers), None)


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def git_commit() -> str | None:
    """The checkout's commit, with "-dirty" when tracked files differ from it; None outside a git checkout."""
    if CHECKOUT is None or not (CHECKOUT / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(CHECKOUT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(CHECKOUT), "diff", "--quiet", "HEAD"]).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty else "")


def machine_info() -> dict:
    cpu = _cpuinfo()
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    family, model, stepping = (int(cpu[key]) if (cpu[key] or "").isdigit() else None
                               for key in ("cpu family", "model", "stepping"))
    return {
        "cpu": cpu["model name"],
        "cpu_family": cpu["cpu family"],
        "cpu_model": cpu["model"],
        "microarchitecture": microarchitecture(cpu["vendor_id"], family, model, stepping),
        "vector_isa": vector_isa(set(cpu["flags"].split())),
        "physical_cores": cpu["cores"],
        "logical_cpus": os.cpu_count(),
        "available_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "memory_gib": mem_gib,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {p: _version(p) for p in ("onnxruntime", "onnxruntime-gpu", "ctranslate2", "torch", "numpy",
                                              "sentencepiece", "sacrebleu", "mtkit")},
        "mtkit_commit": git_commit(),
    }


def machine_slug(info: dict) -> str:
    """A directory name for the machine: its CPU model, core generation, vector extension and CPU
    count, e.g. amd-epyc-zen3-avx2-2cpu (the model name alone does not tell one EPYC generation from
    another)."""
    name = re.sub(r"\((r|tm)\)|\bcpu\b|@.*$", " ", info["cpu"].lower())
    name = re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "unknown-cpu"
    generation = info.get("microarchitecture")
    if generation and generation not in name:
        name = f"{name}-{generation}"
    isa = f"-{info['vector_isa']}" if info.get("vector_isa") else ""
    return f"{name}{isa}-{info['logical_cpus']}cpu"
