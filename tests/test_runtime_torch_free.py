"""The runtime never imports torch (and mt-translate's hot path skips sacrebleu and rich): checked
in fresh interpreters, after real translations."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from conftest import ORT_THREADS

RUNTIME = Path(__file__).parent.parent / "runtime"
HEAVY = ("torch", "sacrebleu", "rich", "onnx", "mtkit.train", "mtkit.export")


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


def test_mt_translate_does_not_import_torch_sacrebleu_or_rich(fixture_bundle):
    loaded = loaded_after(
        f"sys.argv = ['mt-translate', '-m', {str(fixture_bundle)!r}, '--threads', '1', 'Guten Morgen']\n"
        "from mtkit.runtime.cli import main\n"
        "main()")
    assert not loaded, f"mt-translate imported {loaded}"


def test_no_module_of_the_runtime_imports_torch_at_top_level():
    """A static check too, so that an import hidden in a rarely used module is caught. Only mt-eval's
    checkpoint branch may import torch or mtkit.train (inside a function)."""
    for path in RUNTIME.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:                         # module level only
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not any(n.split(".")[0] == "torch" or n.startswith("mtkit.train") for n in names), path
