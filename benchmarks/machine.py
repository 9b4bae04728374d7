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
    info = {"model name": platform.processor() or platform.machine(), "cpu family": None, "model": None, "flags": ""}
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
    return {
        "cpu": cpu["model name"],
        "cpu_family": cpu["cpu family"],
        "cpu_model": cpu["model"],
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
    """A directory name for the machine: its CPU model, vector extension and CPU count, e.g.
    amd-epyc-avx2-2cpu (the model name alone does not tell one EPYC generation from another)."""
    name = re.sub(r"\((r|tm)\)|\bcpu\b|@.*$", " ", info["cpu"].lower())
    name = re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "unknown-cpu"
    isa = f"-{info['vector_isa']}" if info.get("vector_isa") else ""
    return f"{name}{isa}-{info['logical_cpus']}cpu"
