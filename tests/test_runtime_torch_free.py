"""The runtime never imports torch (and mt-translate's hot path skips sacrebleu, rich, numpy.ma, a
tenth of numpy's import time, concurrent.futures with logging, 3 ms, and hashlib, whose OpenSSL
bindings took 3-5 ms): checked in fresh interpreters, after real translations."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from conftest import ORT_THREADS

RUNTIME = Path(__file__).parent.parent / "runtime"
HEAVY = ("torch", "sacrebleu", "rich", "numpy.ma", "concurrent.futures", "hashlib", "onnx", "mtkit.train",
         "mtkit.export")


def loaded_after(code: str) -> list[str]:
    """Run `code` in a new interpreter and return which HEAVY modules it imported."""
    probe = f"import sys\n{code}\nprint('LOADED', [m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    return ast.literal_eval(out.stdout.split("LOADED", 1)[1].strip())


def test_importing_and_using_the_runtime_does_not_import_torch(fixture_bundle):
    loaded = loaded_after(
        "import mtkit.runtime\n"
        "from mtkit.runtime import Translator, Translation, TranslationError\n"
        f"t = Translator({str(fixture_bundle)!r}, threads={ORT_THREADS})\n"
        "assert len(t.translate(['Hallo', 'Wie geht es?'], beam_size=2, return_alignment=True)) == 2\n"
        "import mtkit.runtime.search, mtkit.runtime.batching, mtkit.runtime.onnx_backend, mtkit.runtime.sentences")
    assert "torch" not in loaded
    assert not loaded, f"the runtime imported {loaded}"


def test_mt_translate_imports_none_of_the_heavy_modules(fixture_bundle):
    loaded = loaded_after(
        f"sys.argv = ['mt-translate', '-m', {str(fixture_bundle)!r}, '--threads', '1', 'Guten Morgen']\n"
        "from mtkit.runtime.cli import main\n"
        "main()")
    assert not loaded, f"mt-translate imported {loaded}"


def imported_modules(path: Path) -> list[str]:
    """Every module a file imports, at any depth (inside functions too), with relative imports
    resolved against `mtkit.<its folder>`."""
    package = f"mtkit.{path.parent.name}"
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module) if p)
            names += [module] + [f"{module}.{a.name}" for a in node.names]
    return names


def test_no_module_of_the_runtime_or_tui_imports_training_code():
    """A static check too, so that an import hidden in a function or a rarely used module is caught:
    nothing under runtime/ or tui/ imports torch, mtkit.train or mtkit.export, even lazily."""
    files = [*RUNTIME.glob("*.py"), *(RUNTIME.parent / "tui").glob("*.py")]
    assert len(files) > 20
    for path in files:
        for name in imported_modules(path):
            assert not (name.split(".")[0] == "torch" or name.startswith(("mtkit.train", "mtkit.export"))), \
                f"{path.name} imports {name}"


def test_nothing_is_written_for_onnx_runtimes_telemetry(fixture_bundle, tmp_path):
    """ONNX Runtime's Linux wheels start Microsoft's telemetry at import (a device id and an event store
    under ~/.cache/Microsoft, to upload): mtkit turns it off before it imports onnxruntime, in the API
    and in every command."""
    env = {"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MT_MODEL": str(fixture_bundle),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    api = (f"from mtkit.runtime import Translator\n"
           f"assert Translator({str(fixture_bundle)!r}, threads={ORT_THREADS}).translate('Hallo')[0].text")
    for command in ([sys.executable, "-c", api],
                    [str(Path(sys.executable).parent / "mt-translate"), "--threads", str(ORT_THREADS), "Hallo"]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
    written = [p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()]
    assert not any("Microsoft" in p.parts for p in written), written
    # The probe can fail: onnxruntime imported first does write there.
    subprocess.run([sys.executable, "-c", "import onnxruntime"], env=env, check=True, timeout=120)
    assert (tmp_path / "cache" / "Microsoft").is_dir()
