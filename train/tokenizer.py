"""Training a joint SentencePiece model with the special ids and language tags of `vocab.py`."""

from __future__ import annotations

import random
from pathlib import Path

import sentencepiece as spm

from mtkit.runtime.vocab import BOS_ID, BOS_PIECE, EOS_ID, EOS_PIECE, PAD_ID, PAD_PIECE, UNK_ID, UNK_PIECE, language_tag

from .config import TokenizerConfig
from .data import DataError


def train_tokenizer(sentences: list[str], languages: list[str], cfg: TokenizerConfig, model_path: Path,
                    seed: int = 1) -> spm.SentencePieceProcessor:
    """Train on `sentences` (both sides of the training data) and write `model_path`."""
    model_path = Path(model_path)
    model_path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    sample = sentences if len(sentences) <= cfg.input_sentence_size else rng.sample(sentences, cfg.input_sentence_size)
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sample),
            model_prefix=str(model_path.with_suffix("")),
            vocab_size=cfg.vocab_size,
            model_type=cfg.model_type,
            character_coverage=cfg.character_coverage,
            byte_fallback=cfg.byte_fallback,
            pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
            pad_piece=PAD_PIECE, unk_piece=UNK_PIECE, bos_piece=BOS_PIECE, eos_piece=EOS_PIECE,
            user_defined_symbols=[language_tag(lang) for lang in languages],
            input_sentence_size=0,          # we sampled above, deterministically
            num_threads=2,
            minloglevel=2,
        )
    except (RuntimeError, ValueError) as e:
        # What the config cannot know: vocab_size against this data. SentencePiece's message starts with
        # its source location and the failed check; the sentence after them says what to change.
        message = (str(e).strip() or type(e).__name__).splitlines()[0]
        raise DataError(f"SentencePiece could not train the tokenizer (tokenizer.vocab_size {cfg.vocab_size}, "
                        f"model_type {cfg.model_type!r}): {message.rpartition('] ')[2]}") from None
    return load_tokenizer(model_path)


def load_tokenizer(model_path: Path) -> spm.SentencePieceProcessor:
    return checked(spm.SentencePieceProcessor(model_file=str(model_path)), model_path)


def tokenizer_from_bytes(proto: bytes, where) -> spm.SentencePieceProcessor:
    """The tokenizer serialized in a checkpoint (`where` names it); DataError if the bytes do not load."""
    try:
        sp = spm.SentencePieceProcessor(model_proto=proto)
    except (RuntimeError, TypeError, OSError):    # SentencePiece's message quotes only its C++ source
        raise DataError(f"{where}: its tokenizer is damaged (SentencePiece cannot load it); "
                        f"use an earlier checkpoint") from None
    return checked(sp, where)


def checked(sp: spm.SentencePieceProcessor, where) -> spm.SentencePieceProcessor:
    ids = (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id())
    if ids != (PAD_ID, UNK_ID, BOS_ID, EOS_ID):
        raise DataError(f"{where}: special ids {ids} differ from mtkit.runtime.vocab's "
                        f"{(PAD_ID, UNK_ID, BOS_ID, EOS_ID)}")
    return sp


def language_tag_ids(sp: spm.SentencePieceProcessor, languages: list[str]) -> dict[str, int]:
    ids = {lang: sp.piece_to_id(language_tag(lang)) for lang in languages}
    missing = [lang for lang, i in ids.items() if i == UNK_ID]
    if missing:
        raise DataError(f"the tokenizer has no language tag for {', '.join(missing)}")
    return ids
