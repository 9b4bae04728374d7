"""Training a joint SentencePiece model with the special ids and language tags of `vocab.py`."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import sentencepiece as spm

from mtkit.runtime.text_io import atomic_output
from mtkit.runtime.vocab import BOS_ID, BOS_PIECE, EOS_ID, EOS_PIECE, PAD_ID, PAD_PIECE, UNK_ID, UNK_PIECE, language_tag

from .config import TokenizerConfig
from .data import DataError


# SentencePiece trains in C++ without coming back to Python, so in this process a Ctrl-C would wait
# for the end (minutes on a big corpus) and the model be written all the same. It trains in a child
# process instead, fed the sentences on stdin, that hands the model back on stdout: the parent waits
# in Python, where Ctrl-C stops it at once (subprocess.run then kills the child), and the child writes
# no file of its own, so nothing half-made is left, even when the parent is killed outright.
SPM_CHILD = """
import sys
sys.path.pop(0)                 # the working directory, which -c puts first: its files are not modules of ours
import io, json
import sentencepiece as spm
sentences = (line.decode("utf-8").rstrip("\\n") for line in sys.stdin.buffer)
model = io.BytesIO()
try:
    spm.SentencePieceTrainer.train(sentence_iterator=sentences, model_writer=model, **json.loads(sys.argv[1]))
except (RuntimeError, ValueError) as e:
    sys.exit((str(e).strip() or type(e).__name__).splitlines()[0])
sys.stdout.buffer.write(model.getvalue())
"""


def train_tokenizer(sentences: list[str], languages: list[str], cfg: TokenizerConfig, model_path: Path,
                    seed: int = 1) -> spm.SentencePieceProcessor:
    """Train on `sentences` (both sides of the training data, one line each) and write `model_path`
    (and its list of pieces, `.vocab`), each only once complete."""
    model_path = Path(model_path)
    model_path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    sample = sentences if len(sentences) <= cfg.input_sentence_size else rng.sample(sentences, cfg.input_sentence_size)
    options = dict(
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
    child = subprocess.run([sys.executable, "-c", SPM_CHILD, json.dumps(options)], capture_output=True,
                           input="".join(f"{s}\n" for s in sample).encode("utf-8"))
    if child.returncode:
        # What the config cannot know: vocab_size against this data. SentencePiece's message starts with
        # its source location and the failed check; the sentence after them says what to change.
        message = (child.stderr.decode("utf-8", "replace").strip().splitlines() or
                   [f"its process ended with exit status {child.returncode}"])[-1]
        raise DataError(f"SentencePiece could not train the tokenizer (tokenizer.vocab_size {cfg.vocab_size}, "
                        f"model_type {cfg.model_type!r}): {message.rpartition('] ')[2]}")
    sp = tokenizer_from_bytes(child.stdout, model_path)
    pieces = "".join(f"{sp.id_to_piece(i)}\t{sp.get_score(i):g}\n" for i in range(sp.get_piece_size()))
    for path, content in ((model_path.with_suffix(".vocab"), pieces.encode("utf-8")), (model_path, child.stdout)):
        with atomic_output(path, binary=True) as f:
            f.write(content)
    return sp


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
