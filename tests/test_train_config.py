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
    (BASE + '[optim]\nwarmup = 10\n', r"unknown key\(s\) in \[optim\]: warmup \(did you mean warmup_steps\?\)$"),
    # No close match: the section's keys are listed, as a researcher would otherwise look them up in the code
    (BASE + '[optim]\nlrate = 10\n', r"unknown key\(s\) in \[optim\]: lrate; \[optim\] takes: max_tokens, .*\blr\b.*, seed$"),
    ('frobnicate = 1\n' + BASE, r"unknown top-level key\(s\) or section\(s\): frobnicate; the top level takes: name, .*, languages"),
    (BASE + '[optim]\nprecision = "fp8"\n', r"\[optim\] precision must be"),
    # Values that used to pass and fail later, in torch, SentencePiece or the data encoding:
    (BASE + '[optim]\nlr = nan\n', r"optim.lr must be a finite number, not nan"),
    (BASE + '[optim]\nlr = inf\n', r"optim.lr must be a finite number, not inf"),
    (BASE + '[optim]\nlr = 1' + '0' * 400 + '\n', r"optim.lr must be a finite number, not 10000"),
    (BASE + '[optim]\nbetas = [0.9, nan]\n', r"optim.betas\[1\] must be a finite number, not nan"),
    (BASE.replace("[[data.train]]", "[data]\nmax_ratio = inf\n[[data.train]]"), r"data.max_ratio must be a finite number"),
    (BASE + '[optim]\nbetas = [1.5, 0.9]\n', r"\[optim\] betas must each be from 0 to below 1, not \[1.5, 0.9\]"),
    (BASE + '[optim]\nlabel_smoothing = 1.0\n', r"\[optim\] label_smoothing must be from 0 to below 1"),
    (BASE + '[optim]\nema_decay = 1.0\n', r"\[optim\] ema_decay must be from 0 \(off\) to below 1, not 1.0"),
    (BASE + '[optim]\neval_beam = 1000\n', r"\[optim\] eval_beam must be at most 256, not 1000"),
    (BASE + '[model]\ndropout = 1.5\n', r"\[model\] dropout must be from 0 to below 1, not 1.5"),
    (BASE + '[model]\nattention_dropout = 1.0\n', r"\[model\] attention_dropout must be from 0 to below 1"),
    (BASE + '[model]\nd_model = 2\nn_heads = 1\n', r"\[model\] d_model must be even and at least 4 for sinusoidal"),
    (BASE + '[model]\nd_model = 9\nn_heads = 3\n', r"\[model\] d_model must be even and at least 4 for sinusoidal"),
    (BASE + '[model]\nd_model = 8\nn_heads = 3\n', r"\[model\] d_model \(8\) must be divisible by n_heads \(3\)"),
    (BASE + '[tokenizer]\nvocab_size = 3\n', r"tokenizer.vocab_size must be more than 262 \(.*256 byte pieces"),
    (BASE + '[tokenizer]\nvocab_size = 6\nbyte_fallback = false\n', r"tokenizer.vocab_size must be more than 6 "),
    (BASE + '[tokenizer]\ncharacter_coverage = 7.0\n', r"\[tokenizer\] character_coverage must be from 0.98 to 1"),
    (BASE + '[tokenizer]\nmodel_type = "foo"\n', r"\[tokenizer\] model_type must be \"unigram\", .* not 'foo'"),
    (BASE.replace('["de", "en"]', '["de"]'), r"data.train\[0\] is de-en, but en is not in languages \(de\)"),
    (BASE.replace('["de", "en"]', '["de", "en", "de"]'), r"languages names de more than once"),
    (BASE + '[[data.dev]]\nprefix = "d"\nsrc = "de"\ntgt = "fr"\n', r"data.dev\[0\] is de-fr, but fr is not in"),
    # A corpus names its files one way, whole: none read ".de.gz", and of two ways one was silently ignored.
    (BASE.replace('prefix = "x"\n', ""), r"\[data.train\[0\]\] names no files: give prefix, src_file and tgt_file, or tsv$"),
    (BASE.replace('prefix = "x"', 'src_file = "a.de"'), r"\[data.train\[0\]\] gives src_file without tgt_file"),
    (BASE.replace('prefix = "x"', 'tsv = "a.tsv"\nsrc_file = "a.de"\ntgt_file = "a.en"'),
     r"\[data.train\[0\]\] names its files more than one way \(src_file and tgt_file, tsv\): give one"),
])
def test_a_bad_value_is_refused_naming_its_key(tmp_path, text, message):
    with pytest.raises(DataError, match=rf"^{tmp_path / 'x.toml'}: {message}"):
        load(tmp_path, text)


def test_good_values_are_taken_as_annotated(tmp_path):
    run = load(tmp_path, BASE + '[optim]\nlr = 1\nbetas = [0, 0.98]\nmax_steps = 0\n')
    assert run.optim.lr == 1.0 and type(run.optim.lr) is float       # an int is a number
    assert run.optim.betas == (0.0, 0.98) and run.optim.max_steps == 0  # 0 = no limit
    # A checkpoint's run config (RunConfig.to_dict) and every shipped config load as they are.
    run = RunConfig.from_dict(tiny_run_dict(tmp_path))
    assert RunConfig.from_dict(run.to_dict()) == run
    for config in (REPO / "configs").glob("*.toml"):
        RunConfig.load(config)


def test_a_config_without_name_is_named_and_placed_by_its_file(tmp_path):
    run = load(tmp_path, BASE)                  # x.toml: two such configs no longer share runs/run
    assert (run.name, run.output_dir) == ("x", "runs/x")


def test_a_relative_data_dir_is_found_again_from_another_directory(tmp_path, monkeypatch):
    """The checkpoint's run config, read by mt-export from another directory, finds the run's data: the
    config's path is kept whole, not as the command line gave it ("my.toml")."""
    monkeypatch.delenv("MT_DATA_DIR")
    (tmp_path / "data").mkdir()
    (tmp_path / "x.toml").write_text(BASE.replace("[[data.train]]", '[data]\ndata_dir = "data"\n[[data.train]]'))
    monkeypatch.chdir(tmp_path)
    run = RunConfig.load("x.toml")
    monkeypatch.chdir(tmp_path / "data")
    assert RunConfig.from_dict(run.to_dict(), Path(run.path)).data_dir() == tmp_path / "data"


def test_set_checks_sections_and_takes_top_level_keys(tmp_path):
    run = load(tmp_path, BASE, ['languages=["en", "de"]', "name=foo", "optim.lr=2e-3"])
    assert (run.languages, run.name, run.output_dir, run.optim.lr) == (["en", "de"], "foo", "runs/foo", 2e-3)
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


def test_plain_files_under_a_prefix_are_named_with_the_suffix_to_give(tmp_path, monkeypatch):
    """prefix = "x" reads x.de.gz and x.en.gz (suffix = ".gz"); beside plain x.de and x.en, the error sent
    the user to MT_DATA_DIR, the right directory already."""
    monkeypatch.delenv("MT_DATA_DIR")
    for name in ("x.de", "x.en"):
        (tmp_path / name).write_text("Hallo\n")
    (tmp_path / "x.toml").write_text(BASE.replace("[[data.train]]", '[data]\ndata_dir = "."\n[[data.train]]'))
    with pytest.raises(DataError, match=rf"^{tmp_path}/x.de.gz: no such file, but x.de is: give its corpus "
                                        r'suffix = "" to read plain files$'):
        RunConfig.load(tmp_path / "x.toml").load_split("train")
    assert RunConfig.load(tmp_path / "x.toml", ['data.train=[{prefix="x", src="de", tgt="en", suffix=""}]',
                                                   "data.holdout=0"]
                          ).load_split("train")


# What a probe of mt-train found ending in a traceback (torch, SentencePiece, a KeyError in the data
# encoding): each is now one line before any data is read; the corpus 'x' does not even exist.
@pytest.mark.parametrize("overrides, message", [
    (["optim.lr=nan"], "optim.lr must be a finite number, not nan"),
    (["optim.lr=inf"], "optim.lr must be a finite number, not inf"),
    (["model.dropout=1.5"], "[model] dropout must be from 0 to below 1, not 1.5"),
    (["optim.betas=[1.5,0.9]"], "[optim] betas must each be from 0 to below 1, not [1.5, 0.9]"),
    (["model.d_model=2", "model.n_heads=1"], "[model] d_model must be even and at least 4 for sinusoidal positions"),
    (['languages=["de"]'], "data.train[0] is de-en, but en is not in languages (de)"),
    (["tokenizer.vocab_size=3"], "tokenizer.vocab_size must be more than 262"),
    (["tokenizer.character_coverage=7.0"], "[tokenizer] character_coverage must be from 0.98 to 1, not 7.0"),
    (['tokenizer.model_type="foo"'], "[tokenizer] model_type must be"),
])
def test_cli_refuses_what_failed_later_in_one_line(tmp_path, capsys, overrides, message):
    from mtkit.train.cli import main

    (tmp_path / "x.toml").write_text(f'output_dir = "{tmp_path / "run"}"\n' + BASE)
    args = [str(tmp_path / "x.toml")] + [a for o in overrides for a in ("--set", o)]
    code, _, err = invoke(main, args, capsys)
    assert code == 1 and err.startswith(f"mt-train: error: {tmp_path / 'x.toml'}: ") and message in err, err
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_a_config_that_is_not_utf8_is_named_with_its_line(tmp_path, capsys):
    from mtkit.train.cli import main

    (tmp_path / "x.toml").write_bytes(BASE.encode() + b'name = "caf\xe9"\n')    # Latin-1
    code, _, err = invoke(main, [str(tmp_path / "x.toml")], capsys)
    assert code == 1 and "Traceback" not in err and err.strip().count("\n") == 0
    assert err.strip() == (f"mt-train: error: {tmp_path / 'x.toml'}, line 6: invalid UTF-8 (byte 0xe9 at column 12); "
                           "save the config as UTF-8")


def test_a_config_saved_with_a_byte_order_mark_is_read(tmp_path):
    """Windows Notepad's "UTF-8" starts the file with a BOM, which every other text file mtkit reads may
    have (text_io drops it); tomllib took it for a statement: 'invalid TOML (Invalid statement (at line 1,
    column 1))'. Its Windows line ends are TOML's own."""
    (tmp_path / "x.toml").write_bytes(b"\xef\xbb\xbf" + BASE.replace("\n", "\r\n").encode())
    assert RunConfig.load(tmp_path / "x.toml").languages == ["de", "en"]


def tiny_config(tmp_path: Path, output_dir: Path) -> Path:
    import tomli_w

    path = tmp_path / "tiny.toml"
    path.write_text(tomli_w.dumps(tiny_run_dict(output_dir)))
    return path


@pytest.mark.parametrize("vocab_size, reason", [(300, "Vocabulary size is smaller than required_chars"),
                                                (50000, "Vocabulary size too high")])
def test_a_vocabulary_the_data_cannot_fill_is_one_line(tmp_path, capsys, vocab_size, reason):
    """Only SentencePiece knows, once it has seen the data (1,600 short pairs here): its error, without
    its source location, is the command's."""
    from mtkit.train.cli import main

    config = tiny_config(tmp_path, tmp_path / "run")
    code, _, err = invoke(main, [str(config), "--set", f"tokenizer.vocab_size={vocab_size}"], capsys)
    last = err.strip().splitlines()[-1]
    assert code == 1 and "Traceback" not in err and "trainer_interface.cc" not in err
    assert last.startswith(f"mt-train: error: SentencePiece could not train the tokenizer (tokenizer.vocab_size "
                           f"{vocab_size}, model_type 'unigram'): ") and reason in last
    assert not (tmp_path / "run" / "tokenizer.model").exists() and not (tmp_path / "run" / "checkpoints").exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_an_output_dir_that_cannot_be_made_is_refused_before_the_data(tmp_path, capsys):
    from mtkit.train.cli import main

    config = tiny_config(tmp_path, tmp_path / "run")
    code, _, err = invoke(main, [str(config), "--output-dir", "/proc/no-such-dir/run"], capsys)
    assert code == 1 and "Traceback" not in err and err.strip().count("\n") == 0
    assert err.startswith("mt-train: error: /proc/no-such-dir/run: cannot write in /proc (") and "output_dir" in err


def test_a_corpus_path_starting_with_a_dot_is_relative_to_the_config(tmp_path, monkeypatch, capsys):
    from mtkit.train.cli import main

    monkeypatch.delenv("MT_DATA_DIR")
    (tmp_path / "configs").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.de.gz").write_bytes(b"")   # found in data_dir, so only the tsv is missing
    (tmp_path / "data" / "x.en.gz").write_bytes(b"")
    text = BASE.replace("[[data.train]]", '[data]\ndata_dir = "../data"\n[[data.train]]')
    text += '[[data.train]]\ntsv = "../runs/pairs.tsv"\nsrc = "de"\ntgt = "en"\n'
    config = tmp_path / "configs" / "x.toml"
    config.write_text(f'output_dir = "{tmp_path / "run"}"\n' + text)
    code, _, err = invoke(main, [str(config)], capsys)
    assert code == 1 and "Traceback" not in err
    assert f"{tmp_path}/configs/../runs/pairs.tsv: no such file" in err
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "pairs.tsv").write_text("Montag\tMonday\n")
    run = RunConfig.load(config)
    assert [(p.src, p.tgt) for p in run.data.train[1].load(run.data_dir(), run.config_dir())] == [("Montag", "Monday")]
    assert run.data.train[0].files(run.data_dir(), run.config_dir())[0] == tmp_path / "configs" / "../data" / "x.de.gz"
