"""devtools/avx2-only: the libraries under it see a CPU without AVX-512, while the command's own
output and exit status pass through."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ctranslate2 = pytest.importorskip("ctranslate2")
AVX2_ONLY = Path(__file__).resolve().parents[1] / "devtools" / "avx2-only"
FLAGS = next((line.split(":", 1)[1].split() for line in open("/proc/cpuinfo") if line.startswith("flags")), [])


def gdb_can_trace() -> bool:
    """gdb and objdump present, and processes may be traced (a container without CAP_SYS_PTRACE may not)."""
    if not (shutil.which("gdb") and shutil.which("objdump")):
        return False
    probe = subprocess.run(["gdb", "-q", "-nx", "-batch", "-ex", "run", "--args", "/bin/true"], capture_output=True,
                           text=True, timeout=60)
    return "exited normally" in probe.stdout + probe.stderr


pytestmark = pytest.mark.skipif(not gdb_can_trace(), reason="needs gdb and objdump, and ptrace allowed")


@pytest.mark.parametrize("shell", ["/bin/sh", "/bin/bash", None])
def test_arguments_and_environment_pass_through_whatever_the_shell(shell):
    # gdb starts the command through $SHELL; CI's is dash, where bash-only quoting broke the command line.
    arguments = ["it's", "two  spaces", "$HOME", "`date`", "line\nbreak", '"q"', "(x)", "*"]
    env = {key: value for key, value in os.environ.items() if key != "SHELL"} | ({"SHELL": shell} if shell else {})
    script = "import os, sys; print(repr((sys.argv[1:], os.environ.get('SHELL'))))"
    done = subprocess.run([str(AVX2_ONLY), sys.executable, "-c", script, *arguments], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.stdout == repr((arguments, shell)) + "\n", done.stderr[-2000:]


@pytest.mark.skipif("avx512f" not in FLAGS, reason="the CPU has no AVX-512 to hide")
def test_ctranslate2_sees_no_avx512_under_avx2_only():
    # CT2 logs the CPU's features at its first model load, before it finds the model missing.
    script = ("import ctranslate2, sys\n"
              "try:\n    ctranslate2.Translator('/nonexistent')\nexcept Exception:\n    pass\n"
              "print('out'); sys.exit(3)")
    env = {**os.environ, "CT2_VERBOSE": "1"}
    plain = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    masked = subprocess.run([str(AVX2_ONLY), sys.executable, "-c", script], capture_output=True, text=True, env=env,
                            timeout=300)
    traced = subprocess.run([str(AVX2_ONLY), "--trace-only", sys.executable, "-c", script], capture_output=True,
                            text=True, env=env, timeout=300)
    assert "AVX512=true" in plain.stderr
    assert "AVX512=false" in masked.stderr and "AVX2=true" in masked.stderr, masked.stderr[-2000:]
    assert "AVX512=true" in traced.stderr, traced.stderr[-2000:]      # the control hides nothing
    assert (masked.stdout, masked.returncode) == ("out\n", 3)
