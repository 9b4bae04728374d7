"""Where the corpora live: one rule for mt-train, mt-eval and mt-bench.

$MT_DATA_DIR if set; else the directory a run config names; else, in a source checkout, `shared/data`
beside the repository (where this project keeps its corpora). An installed wheel has no such place,
so there a command that needs corpora asks for --data-dir or MT_DATA_DIR.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "MT_DATA_DIR"
HINT = f"pass --data-dir DIR or set {ENV}"


def default_data_dir(configured: Path | None = None) -> Path | None:
    """$MT_DATA_DIR, else `configured`, else shared/data beside a source checkout; None if none applies."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    if configured is not None:
        return configured
    checkout = Path(__file__).resolve().parent.parent     # the repository root, in a source checkout
    if (checkout / "pyproject.toml").is_file():
        return checkout.parent / "shared" / "data"
    return None


def corpus_file(data_dir: Path | None, prefix: str, lang: str) -> Path:
    """`{prefix}.{lang}.gz`, or the plain file, under `data_dir`; a FileNotFoundError whose message
    names the path and says how to point at the right directory."""
    if data_dir is None:
        raise FileNotFoundError(f"no data directory for {prefix}.{lang}: {HINT}")
    gz = Path(data_dir) / f"{prefix}.{lang}.gz"
    plain = gz.with_suffix("")
    for path in (gz, plain):
        if path.is_file():
            return path
    raise FileNotFoundError(f"{gz}: no such file (nor {plain.name}); {HINT}")
