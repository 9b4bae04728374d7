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

`BundleConfig.from_json` checks every field it reads (types, ranges, file names inside the bundle) and
refuses a config.json that breaks this schema with a BundleError naming the file and the field, so a
damaged or hand-edited config is one line of error at load time, never a crash further on.

Schema versions (`READABLE_VERSIONS`; anything else is refused with a one-line error):
    1  the first format; "tensors" was written but not read
    2  a variant may list external data files ("data"); "tensors" is read; special ids are checked
       against vocab.py (the search relies on them)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import partial
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


class ConfigError(ValueError):
    """A config.json field of the wrong type or out of range; the message names the field.
    `BundleConfig.from_json` turns it into a BundleError naming the file."""


# Dimensions, layer counts and token ids end up in int32/int64 tensors and numpy shapes: a value
# beyond this is damage, not a model. json.loads reads 1e999 as inf and accepts NaN and Infinity,
# which are floats and so fail the int checks below.
MAX_INT = 2**31 - 1
MAX_BYTES = 2**63 - 1             # a file size (st_size is an int64)


def _show(value) -> str:
    """A value as config.json spells it (Infinity, NaN, "x", [...]), cut short."""
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 40 else text[:37] + "..."


def _object(value, field: str) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{field} must be an object, not {_show(value)}")
    return value


def _list(value, field: str) -> list:
    if not isinstance(value, list):
        raise ConfigError(f"{field} must be a list, not {_show(value)}")
    return value


def _string(value, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{field} must be a non-empty string, not {_show(value)}")
    return value


def _int(value, field: str, low: int = 1, high: int = MAX_INT) -> int:
    # bool is an int subclass in Python, and floats (2.0, 1e999, NaN) are not counts or ids
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{field} must be an integer from {low} to {high}, not {_show(value)}")
    return value


def _file_name(value, field: str) -> str:
    """A file the runtime opens: a relative path inside the bundle, never config.json itself."""
    path = PurePosixPath(_string(value, field))
    if path.is_absolute() or ".." in path.parts or value == CONFIG_FILE:
        raise ConfigError(f"{field}: {value!r} is not a file inside the bundle")
    return value


def parse_tensors(tensors: dict, decoder_layers: int) -> GraphNames:
    """config.json's "tensors" -> GraphNames; ConfigError (a ValueError) if the lists do not have the layout above."""
    def names(graph: str, kind: str) -> list[str]:
        field = f"tensors.{graph}.{kind}"
        listed = _list(_object(tensors.get(graph), f"tensors.{graph}").get(kind), field)
        return [_string(name, f"{field}[{i}]") for i, name in enumerate(listed)]

    tensors = _object(tensors, "tensors")
    enc_in, enc_out = names("encoder", "inputs"), names("encoder", "outputs")
    dec_in, dec_out = names("decoder", "inputs"), names("decoder", "outputs")
    kv = 2 * decoder_layers
    if len(enc_in) != 2 or len(enc_out) != 1 + kv or len(dec_in) != 2 + 2 * kv \
            or len(dec_out) not in (2 + kv, 5 + kv):
        raise ConfigError(f"tensors: the name lists do not fit a decoder of {decoder_layers} layers")
    cross = enc_out[1:]
    if dec_in[1] != enc_in[1] or dec_in[2 + kv:] != cross:
        raise ConfigError("tensors: the decoder's src_mask / cross inputs are not the encoder's")
    per_sentence = tensors.get("cross_per_sentence", False)
    if not isinstance(per_sentence, bool):
        raise ConfigError(f"tensors.cross_per_sentence must be true or false, not {_show(per_sentence)}")
    return GraphNames(enc_in, enc_out, dec_in, dec_out, src_ids=enc_in[0], src_mask=enc_in[1], cross=cross,
                      tgt_ids=dec_in[0], past=dec_in[2:2 + kv], logits=dec_out[0], present=dec_out[1:1 + kv],
                      cross_attention=dec_out[1 + kv], search_head=dec_out[2 + kv:],
                      cross_per_sentence=per_sentence)


class BundleError(Exception):
    """A bundle that cannot be used; the message names the file at fault."""


def parse_variants(variants: dict) -> dict[str, dict]:
    """config.json's "variants", checked: known variant names, each an object whose graph and data
    file names are files inside the bundle. Other keys (precision, optimizations, ...) are kept as they are."""
    for variant, entry in _object(variants, "variants").items():
        if variant not in VARIANTS:
            raise ConfigError(f"variants: unknown variant {variant!r} (this runtime knows {', '.join(VARIANTS)})")
        field = f"variants.{variant}"
        _object(entry, field)
        for graph in ("encoder", "decoder"):
            if graph in entry:
                _file_name(entry[graph], f"{field}.{graph}")
        for i, name in enumerate(_list(entry.get("data", []), f"{field}.data")):
            _file_name(name, f"{field}.data[{i}]")
    return dict(variants)


def parse_files(files: dict) -> dict[str, dict]:
    """config.json's "files", checked: relative paths inside the bundle, a hex sha256 and a size each."""
    parsed = {}
    for name, entry in _object(files, "files").items():
        field = f"files[{_show(name)}]"
        _file_name(name, field)
        entry = _object(entry, field)
        sha256 = entry.get("sha256")
        if not isinstance(sha256, str) or len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise ConfigError(f"{field}.sha256 must be 64 lowercase hex digits, not {_show(sha256)}")
        parsed[name] = {"sha256": sha256, "bytes": _int(entry.get("bytes"), f"{field}.bytes", 0, MAX_BYTES)}
    return parsed


def parse_directions(directions: list) -> list[list[str]]:
    """config.json's "directions": [[source, target], ...], two language codes each."""
    parsed = []
    for i, pair in enumerate(_list(directions, "directions")):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ConfigError(f"directions[{i}] must be a [source, target] pair, not {_show(pair)}")
        parsed.append([_string(lang, f"directions[{i}][{j}]") for j, lang in enumerate(pair)])
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
        """A parsed config.json, every field checked against the schema (see the module docstring);
        BundleError naming `source` and the field otherwise."""
        version = data.get("schema_version") if isinstance(data, dict) else None
        if isinstance(version, bool) or version not in READABLE_VERSIONS:
            newer = type(version) is int and version > SCHEMA_VERSION      # True is an int, not a version
            fix = ("written by a newer mtkit; upgrade mtkit (pip install -U mtkit) to read it" if newer
                   else "re-export the model with this mt-export")
            raise BundleError(
                f"{source}: schema_version {_show(version)} is not supported (this runtime reads versions "
                f"{', '.join(map(str, READABLE_VERSIONS))}); {fix}"
            )
        try:
            config = cls._parse(data, version)
        except ConfigError as e:
            raise BundleError(f"{source}: {e}") from None
        wrong = {k: v for k, v in config.special_ids.items() if SPECIAL_IDS.get(k, v) != v}
        if wrong or not SPECIAL_IDS.keys() <= config.special_ids.keys():
            raise BundleError(f"{source}: special_ids {config.special_ids} differ from this runtime's {SPECIAL_IDS}; "
                              "the model was not trained with mtkit's vocabulary")
        return config

    @classmethod
    def _parse(cls, data: dict, version: int) -> "BundleConfig":
        model = _object(data.get("model"), "model")
        dims = {k: _int(model.get(k), f"model.{k}") for k in cls.MODEL_KEYS}
        if dims["n_heads"] * dims["head_dim"] != dims["d_model"]:   # the attention cache shapes rely on it
            raise ConfigError(f"model: n_heads {dims['n_heads']} x head_dim {dims['head_dim']} "
                              f"is not d_model {dims['d_model']}")
        token_id = partial(_int, low=0, high=dims["vocab_size"] - 1)
        special_ids = {k: token_id(v, f"special_ids.{k}")
                       for k, v in _object(data.get("special_ids"), "special_ids").items()}
        language_tags = {k: token_id(v, f"language_tags.{k}")
                         for k, v in _object(data.get("language_tags"), "language_tags").items()}
        if not language_tags:            # the translator needs at least one target language
            raise ConfigError("language_tags is empty; the model has no target language")
        lexicon = data.get("lexicon")
        known = {"schema_version", "model", "special_ids", "language_tags", "directions",
                 "tokenizer", "tensors", "variants", "provenance", "parity", "files", "lexicon"}
        config = cls(
            **dims,
            special_ids=special_ids,
            language_tags=language_tags,
            directions=parse_directions(data.get("directions")),
            variants=parse_variants(data.get("variants")),
            tensors=dict(_object(data.get("tensors", {}), "tensors")),
            tokenizer=_file_name(data.get("tokenizer", TOKENIZER_FILE), "tokenizer"),
            provenance=dict(_object(data.get("provenance", {}), "provenance")),
            parity=dict(_object(data.get("parity", {}), "parity")),
            # Older bundles have no "files": no checksums to check, same schema otherwise.
            files=parse_files(data.get("files", {})),
            lexicon=None if lexicon is None else _file_name(lexicon, "lexicon"),
            schema_version=version,
            extra={k: v for k, v in data.items() if k not in known},
        )
        config.names                       # the tensor lists must have the graphs' layout
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
        except OSError as e:
            raise BundleError(f"{path}: cannot read ({e.strerror or e})") from None
        # ValueError: also bad UTF-8 and a number of over 4300 digits; RecursionError: lists nested thousands deep
        except (ValueError, RecursionError) as e:
            raise BundleError(f"{path}: not valid JSON ({e})") from None
        if not isinstance(data, dict):
            raise BundleError(f"{path}: expected a JSON object")
        return cls.from_json(data, source=str(path))
