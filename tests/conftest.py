"""Shared fixtures.

Tests that translate use the committed fixture model (`fixtures/model/`, built by
`fixtures/build_model.py`): it reproduces the real pairs of `fixtures/model/pairs.tsv` in both
directions with a margin of at least 1 nat at every greedy step (checked by test_fixture_model.py),
so on those sentences its output is the same on every CPU and exact strings may be asserted.
Tests that train (`train_tiny`) run for seconds and assert properties, never what the model says.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE_MODEL = FIXTURES / "model"
REPO = Path(__file__).parent.parent

# Keep the suite light on a 2-core machine and deterministic.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# ONNX Runtime's intra-op threads in tests (1 by default; run the suite with 2 too, see docs/development.md).
ORT_THREADS = int(os.environ.get("MT_TEST_ORT_THREADS", "1"))
# For an emulated CPU (devtools/aarch64-emulated test), many times slower than Hypothesis's health
# checks and deadlines expect: pytest --hypothesis-profile=emulated.
settings.register_profile("emulated", suppress_health_check=[HealthCheck.too_slow], deadline=None)
# The fixture model's run config names its data relative to fixtures/ (its parity set is its dev set).
os.environ["MT_DATA_DIR"] = str(FIXTURES)


def _pairs() -> list[tuple[str, str]]:
    lines = (FIXTURE_MODEL / "pairs.tsv").read_text(encoding="utf-8").splitlines()
    return [tuple(line.split("\t")) for line in lines]


PAIRS = _pairs()                       # (German, English): what the fixture model reproduces
GERMAN = [de for de, _ in PAIRS]
ENGLISH = [en for _, en in PAIRS]


def tiny_run_dict(output_dir: Path, **optim) -> dict:
    """A bidirectional de<->en run over the Tatoeba sample: 2+2 layers, d_model 64."""
    return {
        "name": "tiny",
        "output_dir": str(output_dir),
        "languages": ["de", "en"],
        "data": {
            "data_dir": str(FIXTURES),
            "train": [{"src_file": "tatoeba/train.de", "tgt_file": "tatoeba/train.en", "src": "de", "tgt": "en",
                       "both_directions": True}],
            "dev": [{"src_file": "tatoeba/dev.de", "tgt_file": "tatoeba/dev.en", "src": "de", "tgt": "en"}],
        },
        "tokenizer": {"vocab_size": 600},
        "model": {"d_model": 64, "n_heads": 4, "encoder_layers": 2, "decoder_layers": 2, "ffn_dim": 128,
                  "dropout": 0.1, "activation_dropout": 0.1, "max_positions": 128},
        "optim": {"max_tokens": 1024, "warmup_steps": 30, "lr": 3e-3, "epochs": 4, "average_last": 2,
                  "keep_best": 1, "num_threads": 1, "log_every_steps": 1000, **optim},
    }


def train_tiny(output_dir: Path, console=None, **optim):
    from mtkit.train.config import RunConfig
    from mtkit.train.trainer import Trainer

    run = RunConfig.from_dict(tiny_run_dict(output_dir, **optim))
    trainer = Trainer(run, console)
    trainer.prepare(resume=False)
    trainer.train()
    return trainer


def invoke(main, args, capsys) -> tuple[int, str, str]:
    """Run a command's `main` in this process: (exit code, stdout, stderr)."""
    try:
        main(list(args))
        code = 0
    except SystemExit as e:
        code = e.code or 0
    out, err = capsys.readouterr()
    return code, out, err


def stderr_on_terminal(command: list[str]) -> tuple[int, bytes]:
    """Run `command` with its stderr on a pseudo-terminal, as a user's is: its exit code and what it
    drew there (a progress bar, which rich draws only on a terminal)."""
    import pty
    import subprocess

    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(command, stderr=follower, stdout=subprocess.PIPE, timeout=120,
                              env={**os.environ, "OMP_NUM_THREADS": "1", "TERM": "xterm", "COLUMNS": "80"})
        os.close(follower)
        follower = None
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower is not None:
            os.close(follower)
        os.close(leader)
    return proc.returncode, shown


def translate_cli(capsys, *args) -> tuple[int, str, str]:
    """mt-translate in this process, as the fixture model runs: its ONNX Runtime threads, greedy, from German."""
    from mtkit.runtime.cli import main
    return invoke(main, ["--threads", str(ORT_THREADS), "--beam-size", "1", "--from", "de", *args], capsys)


@pytest.fixture
def model(fixture_bundle, monkeypatch) -> Path:
    """The fixture bundle as mt-translate's default model ($MT_MODEL)."""
    monkeypatch.setenv("MT_MODEL", str(fixture_bundle))
    return fixture_bundle


@pytest.fixture
def models_dir(tmp_path, monkeypatch) -> Path:
    """An empty models directory and cache, and no default model from the environment."""
    monkeypatch.setenv("MT_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("MT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("MT_MODEL", raising=False)
    return tmp_path / "models"


@pytest.fixture(scope="session")
def fixture_checkpoint() -> Path:
    """The fixture model's checkpoint (the trainer's final.pt)."""
    return FIXTURE_MODEL / "checkpoint.pt"


@pytest.fixture(scope="session")
def fixture_bundle() -> Path:
    """The fixture model exported by mt-export (fp32 + int8 graphs): a bundle directory. Read-only:
    a test that changes a bundle copies it first."""
    return FIXTURE_MODEL / "bundle"


@pytest.fixture(scope="session")
def fixture_translator(fixture_bundle):
    """The fixture bundle's fp32 graphs on the CPU provider, one thread."""
    from mtkit.runtime import Translator
    return Translator(fixture_bundle, variant="fp32", threads=ORT_THREADS)
