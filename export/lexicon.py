"""The bundle's word counts (runtime/lexicon.py), from the training data of the run that made the model."""

from __future__ import annotations

from pathlib import Path

from mtkit.runtime.lexicon import Lexicon
from mtkit.train.checkpoint import Checkpoint
from mtkit.train.config import RunConfig
from mtkit.train.data import DataError

from .bundle import ExportError
from .parity import checkpoint_run


def training_lexicon(ckpt: Checkpoint, lexicon_data: Path | None) -> tuple[Lexicon | None, str]:
    """The word counts of the training data of `lexicon_data` (a run config), else of the checkpoint's
    own run, and a line saying what was counted. Without readable data there is none (a bundle without
    word counts detects with fastText alone), unless `lexicon_data` was asked for: an ExportError."""
    try:
        run = RunConfig.load(lexicon_data) if lexicon_data else checkpoint_run(ckpt)
        if run is None:
            return None, "no lexicon: the checkpoint records no run config (--lexicon-data CONFIG names one)"
        pairs = run.load_split("train")
    except (DataError, KeyError, TypeError) as e:
        if lexicon_data:
            raise ExportError(f"--lexicon-data {lexicon_data}: cannot read its training data ({e})") from None
        return None, f"no lexicon: cannot read the training data ({e})"
    # Each sentence once: both directions and repeats weigh corpora for training, not words here.
    texts = {(lang, text) for p in pairs for lang, text in ((p.src_lang, p.src), (p.tgt_lang, p.tgt))}
    lexicon = Lexicon.count(sorted(texts), sorted(ckpt.language_tags))
    return lexicon, f"lexicon: {len(lexicon.counts):,} words of the training data of {run.name}"
