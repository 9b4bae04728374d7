"""The SentencePiece model uses the special ids and language tags defined in runtime/vocab.py."""

from pathlib import Path

import pytest

from mtkit.runtime.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID, language_tag, source_ids, tag_language
from mtkit.train.config import TokenizerConfig
from mtkit.train.data import DataError, read_lines
from mtkit.train.tokenizer import language_tag_ids, train_tokenizer

FIXTURES = Path(__file__).parent / "fixtures" / "tatoeba"


def test_special_ids_and_tags_round_trip(tmp_path):
    sentences = read_lines(FIXTURES / "train.de") + read_lines(FIXTURES / "train.en")
    sp = train_tokenizer(sentences, ["de", "en", "fr"], TokenizerConfig(vocab_size=500), tmp_path / "spm.model")
    assert (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (PAD_ID, UNK_ID, BOS_ID, EOS_ID)
    tags = language_tag_ids(sp, ["de", "en", "fr"])
    for lang, tag_id in tags.items():
        assert sp.id_to_piece(tag_id) == language_tag(lang)
        assert tag_language(sp.id_to_piece(tag_id)) == lang
        assert sp.is_control(tag_id) is False       # user-defined: survives encode/decode as one piece
    text = "Ich habe Hunger."
    ids = source_ids(sp.encode(text), tags["en"], max_len=64)
    assert ids[0] == tags["en"] and ids[-1] == EOS_ID
    assert sp.decode(ids[1:-1]) == text
    # A tag written in the text stays one piece (it is a user-defined symbol).
    assert sp.encode("<2en>")[-1] == tags["en"]
    # Emoji and unseen characters survive through byte fallback.
    assert sp.decode(sp.encode("Hallo 🙂 ☃")) == "Hallo 🙂 ☃"
    # A language the tokenizer has no tag for is a clear error, not an assert (gone under python -O).
    with pytest.raises(DataError, match="no language tag for it"):
        language_tag_ids(sp, ["de", "it"])
