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


def _cpuinfo() -> tuple[str, int]:
    """CPU model name and number of physical cores, from /proc/cpuinfo."""
    model, cores = platform.processor() or platform.machine(), set()
    physical = core = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = (part.strip() for part in line.partition(":"))
            if key == "model name":
                model = value
            elif key == "physical id":
                physical = value
            elif key == "core id":
                core = value
                cores.add((physical, core))
    except OSError:
        pass
    return model, len(cores) or (os.cpu_count() or 1)


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
    model, physical = _cpuinfo()
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return {
        "cpu": model,
        "physical_cores": physical,
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
    """A directory name for the machine: its CPU model and CPU count, e.g. intel-xeon-processor-2cpu."""
    name = re.sub(r"\((r|tm)\)|\bcpu\b|@.*$", " ", info["cpu"].lower())
    name = re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "unknown-cpu"
    return f"{name}-{info['logical_cpus']}cpu"
