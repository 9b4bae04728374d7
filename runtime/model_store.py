"""The user's models directory, where `mt-models install` puts models, and model names.

`$MT_MODELS_DIR`, else the platform's user data directory (platformdirs, which textual already
brings): `~/.local/share/mtkit/models` on Linux (`$XDG_DATA_HOME/mtkit/models` when set),
`~/Library/Application Support/mtkit/models` on macOS, `%LOCALAPPDATA%\\mtkit\\models` on Windows.
Each installed model is one bundle directory there, named by its model name. Hidden entries are
installs or removals in progress and are never models.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from . import bundle_format as bf

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def models_dir() -> Path:
    env = os.environ.get("MT_MODELS_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_data_path("mtkit", appauthor=False) / "models"


def is_model_name(text: str) -> bool:
    """A name, not a path: letters, digits, '.', '_' and '-', starting with a letter or digit."""
    return NAME.fullmatch(text) is not None


def installed_models() -> dict[str, Path]:
    """name -> bundle directory, by name."""
    root = models_dir()
    if not root.is_dir():
        return {}
    return {p.name: p for p in sorted(root.iterdir())
            if is_model_name(p.name) and p.is_dir() and (p / bf.CONFIG_FILE).is_file()}
