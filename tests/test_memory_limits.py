"""mt-translate under an address-space limit (ulimit -v, prlimit --as): below what it needs, one line
that says it ran out of memory, never a traceback nor a model called unusable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ORT_THREADS

BIN = Path(sys.executable).parent
MB = 1 << 20


def started_python_bytes() -> int:
    """The address space of a Python that has imported click: about where mt-translate's own code starts."""
    probe = "import click; print(open('/proc/self/status').read())"
    status = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmPeak:"))) * 1024


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads VmPeak from Linux's /proc")
def test_too_little_memory_is_one_line_saying_so(fixture_bundle, tmp_path):
    import resource

    env = {**os.environ, "MT_CACHE_DIR": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    command = [str(BIN / "mt-translate"), "-m", str(fixture_bundle), "--threads", str(ORT_THREADS), "--from", "de",
               "--beam-size", "1", "Das ist ein Test."]
    failures = []
    limit = started_python_bytes() + 8 * MB
    while limit < 2048 * MB:
        def limited(limit=limit):
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, preexec_fn=limited)
        if done.returncode == 0:
            break
        failures.append((limit // MB, done.returncode, done.stderr))
        limit += 16 * MB
    assert done.returncode == 0, "it never ran"
    for megabytes, returncode, stderr in failures:
        assert "Traceback" not in stderr, (megabytes, stderr)
        ours = [line for line in stderr.splitlines() if line.startswith("mt-translate:")]
        # A native library may end the process itself before mtkit can say anything (OpenBLAS does), or
        # print its own line first (ONNX Runtime's "Schema error: std::bad_alloc", under env -i): not ours
        assert ours == [] or (len(ours), returncode) == (1, 1), (megabytes, stderr)
        assert all("out of memory" in line and "not a usable" not in line for line in ours), (megabytes, stderr)
