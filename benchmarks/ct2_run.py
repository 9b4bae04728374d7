"""Running a model converted by `ct2_convert.py`: inputs and options that match our runtime.

Imports only ctranslate2, sentencepiece and mtkit modules that need neither numpy nor torch (importing
`ctranslate2.converters` would pull torch in), so CTranslate2's memory in `mt-bench` is its own, and
this is also the minimal "translate one sentence" script that `mt-bench` times from a fresh process:

    python -m mtkit.benchmarks.ct2_run CT2_DIR --to en "Guten Morgen."
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from mtkit.runtime.decode_options import DecodeOptions
from mtkit.runtime.vocab import EOS_PIECE, language_tag

TOKENIZER_FILE = "tokenizer.model"     # copied next to model.bin so a CT2 dir is self-contained
INFO_FILE = "mtkit.json"               # max_positions, language tags and sha256 of the source checkpoint


def read_info(directory: Path) -> dict:
    path = Path(directory) / INFO_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing; convert the checkpoint with mtkit.benchmarks.ct2_convert")
    return json.loads(path.read_text(encoding="utf-8"))


def source_tokens(sp, text: str, target_lang: str, max_len: int) -> list[str]:
    """CT2 source tokens equal to our encoder input `vocab.source_ids(...)`: tag, pieces, EOS.
    The converted model has add_source_bos/eos off, so CT2 adds nothing to them."""
    body = sp.encode(text, out_type=str)[: max(max_len - 2, 0)]
    return [language_tag(target_lang), *body, EOS_PIECE]


def max_decoding_length(source_len: int, opts: DecodeOptions) -> int:
    """CT2's `max_decoding_length` matching `search.max_lengths` for a source of `source_len` tokens
    (`opts` capped by the model, `DecodeOptions.for_model`).

    Our search forces EOS at step `limit`, so at most limit - 1 real tokens come out; CT2 stops
    after `max_decoding_length` tokens, so limit - 1 gives the same cut. (One difference remains at
    the cut in beam search: we score a cut hypothesis with the EOS log-prob added, CT2 without.)"""
    limit = min(math.ceil(opts.max_length_ratio * source_len) + opts.max_length_extra, opts.max_length - 1)
    return max(int(limit) - 1, 1)


def translate_options(opts: DecodeOptions, source_len: int) -> dict:
    """`Translator.translate_batch` keyword arguments equal to our DecodeOptions (greedy or beam).
    CT2's defaults differ: min_decoding_length 1 (ours 0) and max_input_length 1024 (we cut earlier).
    CT2 has no loop ban: compare with `no_repeat_loop=0`."""
    return dict(beam_size=max(opts.beam_size, 1), length_penalty=opts.length_penalty,
                num_hypotheses=max(opts.num_hypotheses, 1), no_repeat_ngram_size=opts.no_repeat_ngram_size,
                max_decoding_length=max_decoding_length(source_len, opts), min_decoding_length=0,
                max_input_length=0, return_scores=True)


def main(argv: list[str] | None = None) -> None:
    import argparse

    import ctranslate2
    import sentencepiece as spm

    parser = argparse.ArgumentParser(description="Translate sentences with a converted CTranslate2 model.")
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("text", nargs="+")
    parser.add_argument("--to", required=True, help="target language, e.g. en")
    parser.add_argument("--compute-type", default="default")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads per replica (0: CT2's default)")
    parser.add_argument("--replicas", type=int, default=1, help="translators side by side (inter_threads)")
    parser.add_argument("--beam-size", type=int, default=DecodeOptions.beam_size)
    args = parser.parse_args(argv)

    info = read_info(args.model_dir)
    sp = spm.SentencePieceProcessor(model_file=str(args.model_dir / TOKENIZER_FILE))
    translator = ctranslate2.Translator(str(args.model_dir), device=args.device, compute_type=args.compute_type,
                                       inter_threads=args.replicas, intra_threads=args.threads)
    opts = DecodeOptions(beam_size=args.beam_size, no_repeat_loop=0).for_model(info["max_positions"])   # CT2 has no loop ban
    sources = [source_tokens(sp, t, args.to, info["max_positions"]) for t in args.text]
    results = translator.translate_batch(sources, **translate_options(opts, max(map(len, sources))))
    for r in results:
        print(sp.decode_pieces(r.hypotheses[0]))


if __name__ == "__main__":
    main()
