"""config.json's schema check (`bundle_format.BundleConfig.from_json`): a config of the wrong types,
out-of-range values or an impossible shape is one line of error naming the file and the field,
through every way a model is opened (Translator, mt-translate, mt-models info / verify / install),
never a traceback; and one broken installed model does not break `mt-models list` for the others.

Each broken config is the shipped model's (models/de-en) with one field damaged."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import REPO
from mtkit.runtime import ModelLoadError, Translator, checksums
from mtkit.runtime.bundle_format import BundleConfig, BundleError
from mtkit.runtime.models_cli import cli

SHIPPED = REPO / "models" / "de-en"
SHIPPED_CONFIG = json.loads((SHIPPED / "config.json").read_text(encoding="utf-8"))
BIN = Path(sys.executable).parent

# Numbers json.loads accepts but json.dumps cannot write as such: an edit sets one of these strings,
# and `write_config` puts the bare token in its place.
RAW = ("1e999", "Infinity", "NaN")


def setter(*path, value):
    """An edit that sets config[path[0]][path[1]]... to `value`."""
    def edit(config):
        for key in path[:-1]:
            config = config[key]
        config[path[-1]] = value
    return edit


def no_languages(config):
    config["directions"], config["language_tags"] = [], {}


# id -> (edit of the shipped config, what the error must say after "config.json: ")
BROKEN = {
    "vocab_size 1e999": (setter("model", "vocab_size", value="1e999"), r"model\.vocab_size must be an integer"),
    "vocab_size NaN": (setter("model", "vocab_size", value="NaN"), r"model\.vocab_size must be an integer"),
    "vocab_size 400 digits": (setter("model", "vocab_size", value=10**400), r"model\.vocab_size must be an integer"),
    "bytes Infinity": (setter("files", "tokenizer.model", "bytes", value="Infinity"),
                       r'files\["tokenizer\.model"\]\.bytes must be an integer from 0'),
    "variant a string": (setter("variants", "int8", value="x"), r"variants\.int8 must be an object"),
    "data a number": (setter("variants", "int8", "data", value=5), r"variants\.int8\.data must be a list"),
    "no languages": (no_languages, "language_tags is empty"),
    "n_heads 0": (setter("model", "n_heads", value=0), r"model\.n_heads must be an integer from 1"),
    "n_heads x head_dim not d_model": (setter("model", "n_heads", value=3),
                                       "model: n_heads 3 x head_dim 64 is not d_model 256"),
    "layers true": (setter("model", "encoder_layers", value=True), r"model\.encoder_layers must be an integer"),
    "direction of one language": (setter("directions", value=[["de"]]),
                                  r"directions\[0\] must be a \[source, target\] pair"),
    "special id a string": (setter("special_ids", "eos", value="3"), r"special_ids\.eos must be an integer"),
    "tag beyond the vocabulary": (setter("language_tags", "en", value=16000),
                                  r"language_tags\.en must be an integer from 0 to 15999"),
    "tensor names a string": (setter("tensors", "encoder", "inputs", value="src_ids"),
                              r"tensors\.encoder\.inputs must be a list"),
    "tokenizer outside the bundle": (setter("tokenizer", value="../tokenizer.model"),
                                     "tokenizer: '../tokenizer.model' is not a file inside"),
    "lexicon a number": (setter("lexicon", value=5), "lexicon must be a non-empty string"),
    "files entry a number": (setter("files", "parity.json", value=5), r'files\["parity\.json"\] must be an object'),
    "model a list": (setter("model", value=[]), "model must be an object"),
}


def write_config(directory: Path, edit) -> Path:
    config = json.loads(json.dumps(SHIPPED_CONFIG))
    edit(config)
    text = json.dumps(config, indent=1)
    for token in RAW:
        text = text.replace(f'"{token}"', token)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(text, encoding="utf-8")
    return directory


# Every test here gets an empty models directory and cache (conftest.models_dir).
pytestmark = pytest.mark.usefixtures("models_dir")


@pytest.fixture(scope="module")
def runtime_copy(tmp_path_factory) -> Path:
    """The shipped model's files that a Translator opens (what install verifies), copied once, so that
    a broken variant fails on its config.json only."""
    directory = tmp_path_factory.mktemp("shipped")
    for name in ["config.json", *checksums.runtime_files(BundleConfig.load(SHIPPED))]:
        shutil.copy2(SHIPPED / name, directory / name)
    return directory


def full_bundle(runtime_copy: Path, dest: Path, edit) -> Path:
    """A whole bundle (files linked from `runtime_copy`) whose config.json has `edit` applied."""
    shutil.copytree(runtime_copy, dest, copy_function=os.link, ignore=shutil.ignore_patterns("config.json"))
    return write_config(dest, edit)


def mt_models(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def one_line_error(result, expected: str) -> None:
    """A CliRunner result: exit 1 with `mt-models: error: ...` on one line, not an exception."""
    assert isinstance(result.exception, SystemExit), result.exception     # any other: a traceback
    assert result.exit_code == 1 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("mt-models: error: "), result.stderr
    assert "config.json: " in result.stderr
    assert re.search(expected, result.stderr), result.stderr


def test_the_shipped_config_passes_the_check():
    config = BundleConfig.from_json(json.loads(json.dumps(SHIPPED_CONFIG)))
    assert config.vocab_size == 16000 and config.directions == [["de", "en"], ["en", "de"]]


@pytest.mark.parametrize("case", BROKEN)
def test_a_broken_config_is_one_line_naming_the_file_and_field(case, tmp_path):
    edit, expected = BROKEN[case]
    directory = write_config(tmp_path / "bad", edit)
    with pytest.raises(BundleError, match=f"^{re.escape(str(directory / 'config.json'))}: {expected}") as info:
        BundleConfig.load(directory)
    assert "\n" not in str(info.value)
    with pytest.raises(ModelLoadError, match=f"config.json: {expected}"):    # what the API raises
        Translator(directory)
    one_line_error(mt_models("info", directory), expected)
    one_line_error(mt_models("verify", directory), expected)


@pytest.mark.parametrize("case", ["vocab_size 1e999", "bytes Infinity", "n_heads 0", "direction of one language"])
def test_install_refuses_a_broken_config_and_leaves_nothing(case, runtime_copy, tmp_path, models_dir):
    edit, expected = BROKEN[case]
    source = full_bundle(runtime_copy, tmp_path / "badcfg", edit)
    with tarfile.open(tmp_path / "badcfg.tar.gz", "w:gz") as tar:
        tar.add(source, arcname="badcfg")
    for given in (source, tmp_path / "badcfg.tar.gz"):
        result = mt_models("install", given)
        one_line_error(result, expected)
        # named as the user gave it, not as the staging copy that is gone
        assert result.stderr.startswith(f"mt-models: error: {given}: config.json: ")
        assert not models_dir.exists() or list(models_dir.iterdir()) == []


def test_list_shows_a_broken_installed_model_and_still_lists_the_others(runtime_copy, models_dir):
    full_bundle(runtime_copy, models_dir / "good", lambda config: None)
    full_bundle(runtime_copy, models_dir / "broken", setter("directions", value=[["de"]]))
    result = mt_models("list")
    assert result.exception is None and result.exit_code == 0, result.output
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.split()}
    assert "de->en, en->de" in rows["good"] and "installed" in rows["good"]
    assert "unreadable" in rows["broken"]
    assert rows["broken:"] == (f"broken: {models_dir / 'broken' / 'config.json'}: "
                               'directions[0] must be a [source, target] pair, not ["de"]')
    assert "de-en*" in rows                                                   # the shipped one too
    assert mt_models("info", "good").exit_code == 0                          # the others still open


@pytest.mark.parametrize("case", ["vocab_size 1e999", "n_heads 0"])
def test_the_commands_print_one_line_and_exit_1(case, tmp_path):
    """Through the installed entry points, as a user runs them."""
    edit, expected = BROKEN[case]
    directory = write_config(tmp_path / "bad", edit)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for command in (["mt-translate", "-m", str(directory), "Hallo"], ["mt-models", "info", str(directory)]):
        proc = subprocess.run([str(BIN / command[0]), *command[1:]], capture_output=True, text=True,
                              timeout=120, env=env, check=False)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith(f"{command[0]}: error: "), proc.stderr
        assert f"{directory / 'config.json'}: " in proc.stderr
        assert re.search(expected, proc.stderr)


@pytest.mark.parametrize("version, fix", [
    (3, r"written by a newer mtkit; upgrade mtkit \(pip install -U mtkit\) to read it"),
    (0, "re-export the model with this mt-export"),
    ("2", "re-export the model with this mt-export"),
])
def test_a_schema_version_this_runtime_cannot_read_says_what_to_do(version, fix, tmp_path):
    """A bundle from a newer mtkit (the fleet has upgraded one machine) was told to be re-exported
    'with this mt-export', which cannot help; it is this mtkit that must be upgraded."""
    directory = write_config(tmp_path / "v", setter("schema_version", value=version))
    with pytest.raises(BundleError, match=f"schema_version {re.escape(json.dumps(version))} is not supported .*; {fix}$"):
        BundleConfig.load(directory)
