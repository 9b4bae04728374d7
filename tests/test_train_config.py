"""mt-train's config checks: types from the dataclass annotations, bounds, missing and unknown keys,
--set, and the missing-corpus hint. No training: each case stops where the config is refused."""

from pathlib import Path

import pytest

from conftest import REPO, invoke, tiny_run_dict
from mtkit.train.config import RunConfig, apply_override
from mtkit.train.data import DataError

BASE = 'languages = ["de", "en"]\n[[data.train]]\nprefix = "x"\nsrc = "de"\ntgt = "en"\n'


def load(tmp_path: Path, text: str, overrides=()) -> RunConfig:
    path = tmp_path / "x.toml"
    path.write_text(text)
    return RunConfig.load(path, overrides)


@pytest.mark.parametrize("text, message", [
    (BASE + '[optim]\nlr = "fast"\n', r"optim.lr must be a number, not str \('fast'\)"),
    (BASE + '[optim]\nepochs = "4"\n', r"optim.epochs must be an integer, not str \('4'\)"),
    (BASE + '[optim]\nepochs = 4.0\n', r"optim.epochs must be an integer, not float"),
    (BASE + '[optim]\nepochs = true\n', r"optim.epochs must be an integer, not bool"),
    (BASE + '[model]\npre_norm = 1\n', r"model.pre_norm must be true or false, not int"),
    (BASE + '[optim]\nbetas = [0.9]\n', r"optim.betas must be a list of 2 numbers"),
    (BASE.replace('["de", "en"]', '["de", 3]'), r"languages\[1\] must be a string, not int"),
    ('optim = 3\n' + BASE, r"optim must be a table, not int"),
    (BASE.replace("[[data.train]]", "[data.train]"), r"data.train must be a list of tables, not dict"),
    (BASE.replace('languages = ["de", "en"]\n', ""), r"missing key languages$"),
    (BASE.replace('src = "de"\n', ""), r"missing key data.train\[0\].src$"),
    ('languages = ["de"]\n', r"missing key data.train$"),
    (BASE + '[optim]\nmax_tokens = -5\n', r"optim.max_tokens must be > 0, not -5"),
    (BASE + '[optim]\nlr = -1e-3\n', r"optim.lr must be > 0, not -0.001"),
    (BASE + '[optim]\nmax_steps = -1\n', r"optim.max_steps must be >= 0, not -1"),
    (BASE + '[model]\nn_heads = 0\n', r"model.n_heads must be > 0, not 0"),
    (BASE.replace('tgt = "en"', 'tgt = "en"\nrepeat = 0'), r"data.train\[0\].repeat must be > 0, not 0"),
    (BASE + '[optimizer]\nlr = 1e-3\n', r"unknown top-level key\(s\) or section\(s\): optimizer \(did you mean optim\?\)"),
    ('nmae = "x"\n' + BASE, r"unknown top-level key\(s\) or section\(s\): nmae \(did you mean name\?\)"),
    (BASE + '[optim]\nwarmup = 10\n', r"unknown key\(s\) in \[optim\]: warmup \(did you mean warmup_steps\?\)"),
    (BASE + '[optim]\nprecision = "fp8"\n', r"\[optim\] precision must be"),
])
def test_a_bad_value_is_refused_naming_its_key(tmp_path, text, message):
    with pytest.raises(DataError, match=rf"^{tmp_path / 'x.toml'}: {message}"):
        load(tmp_path, text)


def test_good_values_are_taken_as_annotated(tmp_path):
    run = load(tmp_path, BASE + '[optim]\nlr = 1\nbetas = [0.9, 1]\nmax_steps = 0\n')
    assert run.optim.lr == 1.0 and type(run.optim.lr) is float       # an int is a number
    assert run.optim.betas == (0.9, 1.0) and run.optim.max_steps == 0  # 0 = no limit
    # A checkpoint's run config (RunConfig.to_dict) and every shipped config load as they are.
    run = RunConfig.from_dict(tiny_run_dict(tmp_path))
    assert RunConfig.from_dict(run.to_dict()) == run
    for config in (REPO / "configs").glob("*.toml"):
        RunConfig.load(config)


def test_set_checks_sections_and_takes_top_level_keys(tmp_path):
    run = load(tmp_path, BASE, ['languages=["de"]', "name=foo", "optim.lr=2e-3"])
    assert (run.languages, run.name, run.output_dir, run.optim.lr) == (["de"], "foo", "runs/foo", 2e-3)
    with pytest.raises(DataError, match=r"unknown section optimizer \(did you mean optim\?\)"):
        apply_override({}, "optimizer.lr=1e-3")
    with pytest.raises(DataError, match=r"expected SECTION.KEY=VALUE .* \(did you mean optim.max_tokens=1\?\)"):
        apply_override({}, "max_tokens=1")
    with pytest.raises(DataError, match="optim.lr must be a number, not str"):
        load(tmp_path, BASE, ["optim.lr=fast"])


def test_cli_refuses_a_bad_config_in_one_line_before_reading_data(tmp_path, capsys):
    """The corpus 'x' does not exist: the config error comes first, before any data is looked at."""
    from mtkit.train.cli import main

    (tmp_path / "x.toml").write_text(f'output_dir = "{tmp_path / "run"}"\n' + BASE)
    code, _, err = invoke(main, [str(tmp_path / "x.toml"), "--set", "optim.lr=fast"], capsys)
    assert code == 1 and err.strip().count("\n") == 0 and "Traceback" not in err
    assert err.startswith("mt-train: error: ") and "optim.lr must be a number, not str ('fast')" in err
    assert not (tmp_path / "run").exists()


def test_a_missing_corpus_says_how_to_point_at_the_data(tmp_path, monkeypatch, capsys):
    from mtkit.train.cli import main

    monkeypatch.delenv("MT_DATA_DIR")
    text = BASE.replace("[[data.train]]", '[data]\ndata_dir = "nowhere"\n[[data.train]]')
    (tmp_path / "x.toml").write_text(f'output_dir = "{tmp_path / "run"}"\n' + text)
    code, _, err = invoke(main, [str(tmp_path / "x.toml")], capsys)
    assert code == 1 and "Traceback" not in err
    assert f"{tmp_path}/nowhere/x.de.gz: no such file; set MT_DATA_DIR, or data_dir in the config's [data] section" in err
