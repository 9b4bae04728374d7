"""The oldest versions pyproject.toml allows are ones mtkit runs with. A distribution's packages, a
constraints file or `uv pip install --resolution lowest-direct` take a floor at its word, so a floor
set too low installs cleanly and breaks at run time."""

from __future__ import annotations

import sys

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from conftest import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

# The oldest release of each that works, and why no older one does (each checked in a fresh venv).
OLDEST_THAT_WORKS = {
    # mt-tui uses Select.NULL (textual 8; 7 calls it Select.BLANK), TextArea(placeholder=) (6) and
    # Select(compact=) (3.2); textual 0.80 fails on the stylesheet's $text-error.
    "textual": "8",
    # 1.18.0 is built against numpy 1 yet allows numpy 2, which a resolver picks: `import onnxruntime`
    # then fails ("_ARRAY_API not found"). 1.18.1 asks for numpy < 2; 1.19 works with numpy 2.
    "onnxruntime": "1.18.1",
    "onnxruntime-gpu": "1.18.1",
}


def floors() -> dict[str, Version]:
    """The lowest version each requirement of pyproject.toml (base and extras) allows."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    listed = project["dependencies"] + [spec for extra in project["optional-dependencies"].values() for spec in extra]
    found = {}
    for requirement in map(Requirement, listed):
        lows = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==", "~=")]
        if lows:
            found[requirement.name] = max(lows)
    return found


@pytest.mark.parametrize("name", sorted(OLDEST_THAT_WORKS))
def test_the_floor_is_a_version_that_works(name):
    assert floors()[name] >= Version(OLDEST_THAT_WORKS[name])
