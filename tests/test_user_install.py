"""What a user gets: the wheel, installed with [cpu] into a fresh venv outside the checkout, translates
out of the box with the model it carries. And CI (.ci/run) runs exactly the README's test command,
so this runs in CI too. About a minute (pip's cache makes the install quick); `-m "not wheel"`
leaves it out of a local run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import mtkit

from conftest import REPO

MAX_WHEEL_MB = 25


def source_tree(dest: Path) -> Path:
    """The files a checkout holds (tracked, or new and not ignored), without build outputs: setuptools
    reuses ./build, whose stale files would end up in a wheel built in place."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    return dest


def user_env(tmp_path: Path) -> dict:
    """The environment of a user with no model settings, no checkout on the path, fresh caches."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MT_MODEL", "PYTHONPATH", "VIRTUAL_ENV", "MT_DATA_DIR")}
    return {**env, "MT_MODELS_DIR": str(tmp_path / "models"), "MT_CACHE_DIR": str(tmp_path / "cache"),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@pytest.mark.wheel
def test_the_wheel_translates_out_of_the_box(tmp_path):
    src = source_tree(tmp_path / "src")
    # Without --wheel, build makes the sdist and then the wheel from it: the sdist holds what the wheel needs.
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path / "dist"), str(src)],
                   check=True, capture_output=True)
    [sdist], [wheel] = (tmp_path / "dist").glob("mtkit-*.tar.gz"), (tmp_path / "dist").glob("mtkit-*.whl")
    assert_the_sdist_holds_what_packagers_use(sdist)
    assert wheel.stat().st_size <= MAX_WHEEL_MB * 2**20
    assert_readme_states_the_wheel_size(wheel.stat().st_size / 1e6)
    names = zipfile.ZipFile(wheel).namelist()
    for name in ("config.json", "tokenizer.model", "encoder.int8.onnx", "decoder.int8.onnx", "embedding.int8.bin",
                 "lexicon.tsv.gz", "README.md"):
        assert f"mtkit/models/de-en/{name}" in names
    assert "mtkit/py.typed" in names                           # type checkers read the annotations
    assert wheel.name.startswith(f"mtkit-{mtkit.__version__}-")   # pyproject takes the one version there is
    assert not any(n.endswith(".pt") for n in names)          # the fp16 checkpoint stays in the checkout
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)

    venv, elsewhere, env = tmp_path / "venv", tmp_path / "elsewhere", user_env(tmp_path)
    elsewhere.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"{wheel}[cpu]"], check=True, env=env)

    def run(*command: str) -> str:
        done = subprocess.run([str(venv / "bin" / command[0]), *command[1:]], cwd=elsewhere, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "morning" in run("mt-translate", "Guten Morgen").lower()
    assert run("mt-translate", "--to", "de", "Hund") == "Hund\n"          # the word counts tell it is German
    assert "7 files verified" in run("mt-models", "verify", "de-en")      # the wheel's copy, checked
    assert re.search(r"^de-en\*\s.*shipped", run("mt-models", "list"), re.M)
    page = run("mt-translate", "--html", "--from", "de", "<p>Das ist <b>sehr</b> wichtig.</p>")
    assert page.startswith("<p>") and page.count("<b>") == 1 and page.endswith("</p>\n")
    assert "--subtitles" in run("mt-translate", "--help") and run("mt-serve", "--help").startswith("Usage: mt-serve")


def assert_the_sdist_holds_what_packagers_use(sdist: Path):
    """A distribution rebuilds from the sdist and runs the tests there: setuptools alone took
    tests/test_*.py without conftest.py and the fixtures (MANIFEST.in adds them)."""
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"LICENSE", "README.md", "constraints.txt", "docs/models.md", "tests/conftest.py",
            "tests/fixtures/model/bundle/config.json", "models/de-en/encoder.int8.onnx", "mtkit/py.typed"} <= names
    assert not any("__pycache__" in name for name in names) and "models/de-en/checkpoint.fp16.pt" not in names


def assert_readme_states_the_wheel_size(megabytes: float):
    """The README gives the wheel's size three times; a new model changes it (v12 left it stale)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    stated = [float(mb) for pattern in (r"build --wheel`, (\d+\.\d) MB\)", r"a (\d+\.\d) MB wheel", r"\((\d+\.\d) MB to download\)")
              for mb in re.findall(pattern, readme)]
    assert len(stated) == 3 and all(abs(mb - megabytes) <= 0.1 for mb in stated), (stated, round(megabytes, 2))


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = re.search(r"Set up everything and run the tests.*?```bash\n(.+?)\n```", readme, re.S).group(1)
    assert command.strip() in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
