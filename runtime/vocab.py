"""Special token ids and language tags: the one definition that training, export and runtime share.

The SentencePiece model is trained with exactly these ids, so a bundle's tokenizer and its
graphs always agree. A sentence is translated into language X by putting the tag `<2X>` in
front of the source tokens (the multilingual-NMT convention of Johnson et al., 2017).
"""

from collections.abc import Sequence

PAD_ID = 0
UNK_ID = 1
BOS_ID = 2
EOS_ID = 3

PAD_PIECE = "<pad>"
UNK_PIECE = "<unk>"
BOS_PIECE = "<s>"
EOS_PIECE = "</s>"


def language_tag(lang: str) -> str:
    """The piece that asks for output in `lang`, e.g. "<2en>"."""
    return f"<2{lang}>"


def tag_language(piece: str) -> str | None:
    """Inverse of `language_tag`: "<2en>" -> "en", anything else -> None."""
    if piece.startswith("<2") and piece.endswith(">") and len(piece) > 3:
        return piece[2:-1]
    return None


CONTINUATION = range(0x80, 0xC0)      # UTF-8's continuation bytes


def byte_value(piece: str) -> int | None:
    """The byte a byte-fallback piece stands for ("<0xC3>" -> 0xC3), or None for any other piece."""
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        try:
            return int(piece[3:5], 16)
        except ValueError:
            return None
    return None


def never_starts(byte: int) -> bool:
    """A byte no UTF-8 character starts with: a continuation byte, or one UTF-8 never uses (C0, C1,
    F5-FF)."""
    return byte in CONTINUATION or byte in (0xC0, 0xC1) or byte >= 0xF5


def character_length(lead: int) -> int:
    """How many bytes the UTF-8 character that `lead` (a byte that starts one) starts has."""
    return 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def never_output(pieces: Sequence[str]) -> list[int]:
    """Ids no translation may contain: padding, BOS, language tags, the byte pieces of control
    characters (a sampled "<0x0A>" would be a line break inside one translation), and bytes no
    character starts with (a search allows continuation bytes where a character needs them:
    byte_pieces.open_rows)."""
    def never(i: int, piece: str) -> bool:
        if i in (PAD_ID, BOS_ID) or tag_language(piece):
            return True
        byte = byte_value(piece)
        return byte is not None and (byte < 0x20 or byte == 0x7F or never_starts(byte))
    return [i for i, piece in enumerate(pieces) if never(i, piece)]


def source_ids(pieces: list[int], tag_id: int, max_len: int) -> list[int]:
    """Encoder input for one sentence: the target-language tag, the pieces, EOS (cut to `max_len`)."""
    return [tag_id, *pieces[: max(max_len - 2, 0)], EOS_ID]
