"""The model bundle format: file names, tensor names and `config.json`, defined once.

A bundle is a directory (or a .tar.gz / .zip of one) holding:

    config.json        this schema; the runtime's single source of truth
    tokenizer.model    the SentencePiece model (ids as in `vocab.py`)
    encoder.onnx       fp32 encoder   } always present
    decoder.onnx       fp32 decoder   }
    encoder.int8.onnx / decoder.int8.onnx, encoder.fp16.onnx / ...   optional variants
    embedding.int8.bin external data the int8 encoder and decoder share (the int8 vocabulary table,
                       stored once); a variant lists such files under "data"
    parity.json        the export's parity report
    lexicon.tsv.gz     optional: word counts of the training data per language, which `--from auto`
                       uses to tell the model's languages apart (`lexicon.py`); named by "lexicon"

config.json's "files" records every other file's sha256 and size ({name: {"sha256", "bytes"}}):
loading checks the sizes of the files it opens, `mt-models verify` every checksum (`checksums.py`).
Bundles exported before checksums have no "files" and load without these checks.

Graphs (B batch, S source length, T new target positions, P past length, H heads, Dh head dim):

    encoder  in : src_ids int64[B,S], src_mask bool[B,S] (True = real token)
             out: encoder_out float[B,S,D], cross_key_{i}, cross_value_{i} float[B,H,S,Dh]
    decoder  in : tgt_ids int64[B,T], src_mask bool[B,S],
                  past_key_{i}, past_value_{i} float[B,H,P,Dh]   (P may be 0),
                  cross_key_{i}, cross_value_{i} float[B,H,S,Dh]
             out: logits float[B,T,V], present_key_{i}, present_value_{i} float[B,H,P+T,Dh],
                  cross_attention float[B,T,S]  (last decoder layer, averaged over heads)
    decoder search head (mt-export adds it; older bundles lack it and the runtime does without):
             out: top_logprobs float[B,K], top_ids int64[B,K]  (the last position's K most likely
                  tokens, best first; K = min(SEARCH_HEAD_K, V)), eos_logprob float[B]

Every cache tensor has batch on axis 0, so beam search reorders all of them the same way.
Where "tensors" says "cross_per_sentence": true (what mt-export writes now), the decoder's src_mask
and cross inputs may have one row per sentence instead: N rows of tgt_ids and past, the g = N / B
rows of each sentence (its beams) consecutive. Feeding them per row (g = 1) still works, which is
what older runtimes do; bundles without the key need them per row.
The names above are the defaults; the runtime reads them from config.json's "tensors" (the lists
in the order above, parsed by `parse_tensors`), so that file is the contract.
Loading a bundle reads JSON, SentencePiece and ONNX only: never pickle.

Schema versions (`READABLE_VERSIONS`; anything else is refused with a one-line error):
    1  the first format; "tensors" was written but not read
    2  a variant may list external data files ("data"); "tensors" is read; special ids are checked
       against vocab.py (the search relies on them)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID

SPECIAL_IDS = {"pad": PAD_ID, "unk": UNK_ID, "bos": BOS_ID, "eos": EOS_ID}

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)

CONFIG_FILE = "config.json"
TOKENIZER_FILE = "tokenizer.model"
PARITY_FILE = "parity.json"
LEXICON_FILE = "lexicon.tsv.gz"

VARIANTS = ("fp32", "fp16", "int8")


def graph_file(graph: str, variant: str) -> str:
    """encoder/decoder file name of a precision variant: fp32 has no suffix."""
    assert graph in ("encoder", "decoder") and variant in VARIANTS
    return f"{graph}.onnx" if variant == "fp32" else f"{graph}.{variant}.onnx"


def variant_graphs(variant: str, entry: dict | None) -> tuple[str, str]:
    """(encoder, decoder) file names of a variant, as its config.json entry names them (default: `graph_file`)."""
    entry = entry or {}
    return entry.get("encoder", graph_file("encoder", variant)), entry.get("decoder", graph_file("decoder", variant))


def variant_data(entry: dict | None) -> list[str]:
    """External data files a variant's graphs read (schema 2; none for older bundles)."""
    return [str(name) for name in (entry or {}).get("data", [])]


# Tensor names.
SRC_IDS = "src_ids"
SRC_MASK = "src_mask"
ENCODER_OUT = "encoder_out"
TGT_IDS = "tgt_ids"
LOGITS = "logits"
CROSS_ATTENTION = "cross_attention"

# The search head: beam search needs only each row's few best tokens, so the graph computes them
# instead of handing [B,V] logits to numpy (log-softmax and top-k were ~40% of a beam step there).
TOP_LOGPROBS = "top_logprobs"
TOP_IDS = "top_ids"
EOS_LOGPROB = "eos_logprob"
SEARCH_HEAD_K = 16              # beam search keeps 2 x beam per row: beams up to 8 use the head


def cross_key(i: int) -> str:
    return f"cross_key_{i}"


def cross_value(i: int) -> str:
    return f"cross_value_{i}"


def past_key(i: int) -> str:
    return f"past_key_{i}"


def past_value(i: int) -> str:
    return f"past_value_{i}"


def present_key(i: int) -> str:
    return f"present_key_{i}"


def present_value(i: int) -> str:
    return f"present_value_{i}"


def tensor_names(decoder_layers: int, search_head: bool = False, cross_per_sentence: bool = False) -> dict:
    """Input and output names of both graphs, in graph order; the search head's only if asked, and
    whether the decoder takes src_mask and cross per sentence (see the module docstring)."""
    cross = [n for i in range(decoder_layers) for n in (cross_key(i), cross_value(i))]
    past = [n for i in range(decoder_layers) for n in (past_key(i), past_value(i))]
    present = [n for i in range(decoder_layers) for n in (present_key(i), present_value(i))]
    return {
        "encoder": {"inputs": [SRC_IDS, SRC_MASK], "outputs": [ENCODER_OUT, *cross]},
        "decoder": {
            "inputs": [TGT_IDS, SRC_MASK, *past, *cross],
            "outputs": [LOGITS, *present, CROSS_ATTENTION,
                        *([TOP_LOGPROBS, TOP_IDS, EOS_LOGPROB] if search_head else [])],
        },
        **({"cross_per_sentence": True} if cross_per_sentence else {}),
    }


@dataclass(frozen=True)
class GraphNames:
    """Both graphs' tensor names by role."""
    encoder_inputs: list[str]
    encoder_outputs: list[str]
    decoder_inputs: list[str]
    decoder_outputs: list[str]
    src_ids: str
    src_mask: str
    cross: list[str]              # cross_key_0, cross_value_0, ...: encoder outputs = decoder inputs
    tgt_ids: str
    past: list[str]               # past_key_0, past_value_0, ...
    logits: str
    present: list[str]            # present_key_0, ... (fed back as `past`, same order)
    cross_attention: str
    search_head: list[str]        # [top_logprobs, top_ids, eos_logprob], or [] for a decoder without it
    cross_per_sentence: bool = False   # src_mask and cross may have one row per sentence, not per row


def parse_tensors(tensors: dict, decoder_layers: int) -> GraphNames:
    """config.json's "tensors" -> GraphNames; ValueError if the lists do not have the layout above."""
    enc_in, enc_out = list(tensors["encoder"]["inputs"]), list(tensors["encoder"]["outputs"])
    dec_in, dec_out = list(tensors["decoder"]["inputs"]), list(tensors["decoder"]["outputs"])
    kv = 2 * decoder_layers
    if len(enc_in) != 2 or len(enc_out) != 1 + kv or len(dec_in) != 2 + 2 * kv \
            or len(dec_out) not in (2 + kv, 5 + kv):
        raise ValueError(f"tensors: the name lists do not fit a decoder of {decoder_layers} layers")
    cross = enc_out[1:]
    if dec_in[1] != enc_in[1] or dec_in[2 + kv:] != cross:
        raise ValueError("tensors: the decoder's src_mask / cross inputs are not the encoder's")
    return GraphNames(enc_in, enc_out, dec_in, dec_out, src_ids=enc_in[0], src_mask=enc_in[1], cross=cross,
                      tgt_ids=dec_in[0], past=dec_in[2:2 + kv], logits=dec_out[0], present=dec_out[1:1 + kv],
                      cross_attention=dec_out[1 + kv], search_head=dec_out[2 + kv:],
                      cross_per_sentence=tensors.get("cross_per_sentence", False) is True)


class BundleError(Exception):
    """A bundle that cannot be used; the message names the file at fault."""


def parse_files(files: dict) -> dict[str, dict]:
    """config.json's "files", checked: relative paths inside the bundle, a hex sha256 and a size each."""
    parsed = {}
    for name, entry in dict(files).items():
        path = PurePosixPath(name)
        if path.is_absolute() or ".." in path.parts or name == CONFIG_FILE:
            raise ValueError(f"files: {name!r} is not a file inside the bundle")
        sha256, size = str(entry["sha256"]), int(entry["bytes"])
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256) or size < 0:
            raise ValueError(f"files: {name!r} has no valid sha256 and size")
        parsed[name] = {"sha256": sha256, "bytes": size}
    return parsed


@dataclass
class BundleConfig:
    """`config.json`, parsed. Unknown keys are kept in `extra` so a round trip loses nothing."""

    vocab_size: int
    d_model: int
    n_heads: int
    head_dim: int
    encoder_layers: int
    decoder_layers: int
    max_positions: int
    special_ids: dict[str, int]
    language_tags: dict[str, int]           # target language -> tag token id
    directions: list[list[str]]             # [[src, tgt], ...] seen in training
    variants: dict[str, dict]               # variant -> {"encoder", "decoder", "precision", ...}
    tensors: dict = field(default_factory=dict)
    tokenizer: str = TOKENIZER_FILE
    provenance: dict = field(default_factory=dict)
    parity: dict = field(default_factory=dict)
    files: dict[str, dict] = field(default_factory=dict)   # name -> {"sha256", "bytes"}; {} = not recorded
    lexicon: str | None = None              # LEXICON_FILE when the bundle has one (older runtimes ignore it)
    schema_version: int = SCHEMA_VERSION
    extra: dict = field(default_factory=dict)

    @property
    def names(self) -> GraphNames:
        """The graphs' tensor names, from "tensors" (the default names where a bundle has none)."""
        return parse_tensors(self.tensors or tensor_names(self.decoder_layers), self.decoder_layers)

    MODEL_KEYS = ("vocab_size", "d_model", "n_heads", "head_dim", "encoder_layers",
                  "decoder_layers", "max_positions")

    def to_json(self) -> dict:
        return {
            "schema_version": self.schema_version,
            "model": {k: getattr(self, k) for k in self.MODEL_KEYS},
            "special_ids": self.special_ids,
            "language_tags": self.language_tags,
            "directions": self.directions,
            "tokenizer": self.tokenizer,
            "tensors": self.tensors,
            "variants": self.variants,
            "provenance": self.provenance,
            "parity": self.parity,
            "files": self.files,
            **({"lexicon": self.lexicon} if self.lexicon else {}),
            **self.extra,
        }

    @classmethod
    def from_json(cls, data: dict, source: str = CONFIG_FILE) -> "BundleConfig":
        version = data.get("schema_version")
        if version not in READABLE_VERSIONS:
            raise BundleError(
                f"{source}: schema_version {version!r} is not supported (this runtime reads versions "
                f"{', '.join(map(str, READABLE_VERSIONS))}); re-export the model with this mt-export"
            )
        try:
            model = data["model"]
            known = {"schema_version", "model", "special_ids", "language_tags", "directions",
                     "tokenizer", "tensors", "variants", "provenance", "parity", "files", "lexicon"}
            config = cls(
                **{k: int(model[k]) for k in cls.MODEL_KEYS},
                special_ids={k: int(v) for k, v in data["special_ids"].items()},
                language_tags={k: int(v) for k, v in data["language_tags"].items()},
                directions=[list(d) for d in data["directions"]],
                variants=dict(data["variants"]),
                tensors=dict(data.get("tensors", {})),
                tokenizer=data.get("tokenizer", TOKENIZER_FILE),
                provenance=dict(data.get("provenance", {})),
                parity=dict(data.get("parity", {})),
                # Older bundles have no "files": no checksums to check, same schema otherwise.
                files=parse_files(data.get("files", {})),
                lexicon=str(data["lexicon"]) if data.get("lexicon") else None,
                schema_version=version,
                extra={k: v for k, v in data.items() if k not in known},
            )
            config.names                       # the tensor lists must have the graphs' layout
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise BundleError(f"{source}: malformed config ({type(e).__name__}: {e})") from None
        wrong = {k: v for k, v in config.special_ids.items() if SPECIAL_IDS.get(k, v) != v}
        if wrong or not SPECIAL_IDS.keys() <= config.special_ids.keys():
            raise BundleError(f"{source}: special_ids {config.special_ids} differ from this runtime's {SPECIAL_IDS}; "
                              "the model was not trained with mtkit's vocabulary")
        return config

    def save(self, directory: Path) -> None:
        path = Path(directory) / CONFIG_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, directory: Path) -> "BundleConfig":
        path = Path(directory) / CONFIG_FILE
        if not path.is_file():
            raise BundleError(f"{path}: missing; is this a model bundle written by mt-export?")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise BundleError(f"{path}: not valid JSON ({e})") from None
        if not isinstance(data, dict):
            raise BundleError(f"{path}: expected a JSON object")
        return cls.from_json(data, source=str(path))
