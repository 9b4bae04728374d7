"""`Translator`: load a bundle, translate text. The API that the CLIs and the TUI are built on.

A call goes: split each text into sentences (`sentences.py`), clean them, leave out those already in
the target language (`language_id.py`, unless the source language is given), keep URLs, emoji and
the like out of the model's way (`protect.py`), tokenize them, cut any sentence over CLAUSE_TOKENS
into parts at clause boundaries (with a warning past the model's positions), decode all parts in
length-sorted batches (`batching.py`, `search.py`, `onnx_backend.py`), decode again in one batch those
whose translation lost a rare word or a glossary term's translation, then detokenize, put the
protected spans and numbers back, and put every text together with its original separators.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import time
import warnings
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import bundle, language_id
from .arguments import as_texts, check_count, check_flag, check_glossary, language_code, prefixes_for
from .batching import PAD_MULTIPLE, decode_all
from .bundle_format import BundleConfig, BundleError
from .casing import in_capitals, to_capitals, usual_case
from .decode_budget import default_budget
from .decode_options import DecodeOptions
from .errors import ModelLoadError, TranslationError
from .graph_loading import open_for_provider
from .language_id import LanguageWarning, SourceLanguage
from .long_sentences import CLAUSE_TOKENS, split_long
from .prefix import Prefix
from .protect import Masked, equivalents, mask, strip_ansi, vocabulary_lacks
from .repetition import Pieces
from .results import Alignment, Hypothesis, Translation
from .scoring import Score, score_all
from .search import Hypothesis as SearchHypothesis, beam_score
from .sentence_text import clean, clean_space, restore, restore_after
from .sentences import split
from .threads import MAX_THREADS, Background
from .vocab import EOS_PIECE, source_ids

if TYPE_CHECKING:
    from .glossary import Glossary, Terms


# Batches decoded at once on the CPU. Two keep two cores busy through a decoder step's small kernels:
# beam-4 throughput 1.17-1.29x of one batch at a time on a 2-core AMD EPYC, outputs identical
# (benchmarks/PERF_NOTES.md). More would cut the row budget into batches too small to be efficient.
# How they share the threads: `SessionSettings.for_variant`.
PARALLEL_BATCHES = 2


class LongInputWarning(UserWarning):
    """A sentence longer than the model's positions was translated in parts."""


# Warnings are raised in `Translator._translate`, called by `translate` or `translate_iter`; 3 frames
# up is the caller's line (for translate_iter, the line that iterates it).
WARNING_LEVEL = 3


@dataclass
class _Segment:
    """One sentence of a text: its decoded parts and the text around it."""
    lead: str
    trail: str
    sep: str
    parts: list[int] = field(default_factory=list)     # indices into the flat list of decoded sources
    kept: str = ""                                     # the sentence itself, when not translated
    masked: Masked | None = None                       # what the model saw, with the spans to put back
    source: str = ""                                   # the sentence cleaned, before masking
    terms: Terms | None = None                         # the glossary's terms for it
    plain_first: bool = False                          # decoded without its terms first (_decode_again)
    prefix: str = ""                                   # what its translation must start with, as given
    written: str = ""                                  # that prefix as the model's pieces spell it


UNKNOWN_SCRIPT = "none of its letters are in this model's vocabulary; left as it is"

# A text's alignment is dense, target x source tokens, block-diagonal over its parts: past this many
# source tokens it would take gigabytes (3,000 sentences on one line were killed at 18 GB).
MAX_ALIGNED_TOKENS = 4096


def unknown_option(name: str) -> str:
    """The message for a keyword that is neither translate's own nor a DecodeOptions field."""
    import difflib

    known = [*DecodeOptions.__dataclass_fields__, "to", "from_lang", "split_sentences", "glossary", "prefix", "options"]
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown option {name!r}{hint}; the options are translate's keywords and DecodeOptions' fields"


class Translator:
    """A model bundle loaded for translation, offline: ONNX Runtime, numpy and SentencePiece, no torch.

    Translator(path=None, provider="cpu", threads=None, variant="auto", ...) loads a bundle directory
    or archive (None: the default model) to run on "cpu", "cuda" or "auto" with `threads` ONNX Runtime
    threads; the keyword-only rest tunes the sessions and the batches (see `__init__`). Loading takes a
    while: keep one Translator for many calls, and share it between threads if you like (calls made at
    once each get what they would get alone).

    `translate(texts, to=None, options=None, **overrides)` is the call: a str or a list of str in, one
    `Translation` per text out. `translate_iter` does the same for a stream, a batch at a time.

        from mtkit.runtime import Translator
        t = Translator()                                           # the default model, on the CPU
        print(t.translate("Guten Morgen")[0].text)                 # into English
        for tr in t.translate(["Good morning", "Thank you"], to="de", beam_size=1):
            print(tr.text)
    """

    def __init__(self, path: str | Path | None = None, provider: str = "cpu", threads: int | None = None,
                 variant: str = "auto", *, graph_optimization: str = "all", memory_arena: bool = True,
                 spinning: bool = False, io_binding: bool | None = None, max_batch_tokens: int | None = None,
                 max_batch_sentences: int | None = None, parallel_batches: int | None = None,
                 low_latency: bool = False):
        """Load a bundle: a directory or a .tar.gz / .zip archive; None = the default model (`bundle.default_model`).

        provider: "cpu", "cuda" (an error if CUDA is not usable) or "auto" (CUDA if usable, else CPU).
        variant: "auto" (int8 on CPU when the bundle has it, fp16 on CUDA when it has it, else fp32),
        or "fp32" / "int8" / "fp16". threads: ONNX Runtime intra-op threads (None = its default, at most
        the CPUs the process may use; the int8 graphs' parallel batches share them, see
        `SessionSettings.for_variant`).
        graph_optimization ("disable" / "basic" / "extended" / "all"), memory_arena and spinning (idle
        ORT threads busy-wait: can help on an otherwise idle CPU, hurts on a shared one) are ORT session
        options. io_binding: keep the KV cache on the device between steps (default: on for CUDA).
        max_batch_tokens / max_batch_sentences: the padded tokens and rows (sentences x beam) decoded
        together (None: 1024 and 32 on the int8 graphs, 4096 and 64 on the others; `decode_budget.py`).
        parallel_batches: batches decoded at once, sharing that budget (default: 2 on a CPU with 2 or more
        threads, else 1; see `batching.decode_all`).
        low_latency: for one short request at a time on an otherwise idle CPU (a terminal, an editor): batches
        decode one at a time, and the int8 decoder spreads each step over two cores, its second thread
        pinned to a core and busy-waiting between kernels (`SessionSettings.for_graph`). Requests of many
        sentences are slower this way, and that core is busy while a translation runs.
        """
        from .onnx_backend import SessionSettings, available_cpus

        if provider not in ("cpu", "cuda", "auto"):
            raise TranslationError(f"unknown provider {provider!r} (expected cpu, cuda or auto)")
        if variant != "auto" and variant not in ("fp32", "int8", "fp16"):
            raise TranslationError(f"unknown variant {variant!r} (expected auto, fp32, int8 or fp16)")
        check_count("threads", threads, optional=True, most=MAX_THREADS)
        check_count("parallel_batches", parallel_batches, optional=True)
        check_count("max_batch_tokens", max_batch_tokens, optional=True)
        check_count("max_batch_sentences", max_batch_sentences, optional=True)
        for name, value, allowed in (("memory_arena", memory_arena, (bool,)), ("spinning", spinning, (bool,)),
                                     ("low_latency", low_latency, (bool,)),
                                     ("io_binding", io_binding, (bool, type(None)))):
            if not isinstance(value, allowed):        # ONNX Runtime's own error for them is a pybind TypeError
                raise TypeError(f"{name} must be True or False{' or None' if len(allowed) > 1 else ''}, "
                                f"not {type(value).__name__}")
        if graph_optimization not in ("disable", "basic", "extended", "all"):
            raise TranslationError(f"unknown graph_optimization {graph_optimization!r} "
                                   "(expected disable, basic, extended or all)")
        try:
            directory = bundle.resolve_model(path)
            config = BundleConfig.load(directory)
            lexicon_path = bundle.lexicon_file(directory, config)     # present, of its recorded size
            # A GPU runs one batch at a time best, as does low_latency; a 1-thread CPU gains nothing from two.
            batches = parallel_batches or (1 if provider == "cuda" or low_latency
                                           else min(PARALLEL_BATCHES, threads or available_cpus()))
            settings = SessionSettings(threads=threads, parallel_batches=batches, graph_optimization=graph_optimization,
                                       memory_arena=memory_arena, spinning=spinning, low_latency=low_latency)
            # ONNX Runtime builds the sessions while SentencePiece loads; a tokenizer error still comes first.
            with Background(open_for_provider, directory, config, variant, provider, settings, io_binding) as opening:
                tokenizer = bundle.load_tokenizer(directory, config)
                pieces = Pieces.of_tokenizer(tokenizer).prepare()
                provider, self.provider_note, chosen_variant, backend = opening.result()
        except BundleError as e:
            raise e if isinstance(e, ModelLoadError) else ModelLoadError(str(e)) from None
        if parallel_batches is None and provider == "cuda":   # "auto" chose CUDA, which runs one batch at a time best
            batches = 1
        self._setup(backend, tokenizer, config, directory, provider, chosen_variant,
                    max_batch_tokens, max_batch_sentences, batches, pieces, lexicon_path)

    @classmethod
    def from_backend(cls, backend, tokenizer, config: BundleConfig, path: Path, provider: str = "cpu",
                     variant: str = "fp32", max_batch_tokens: int | None = None,
                     max_batch_sentences: int | None = None) -> "Translator":
        """A Translator over any `search.DecoderBackend`, e.g. the PyTorch model (mt-eval on a checkpoint)."""
        check_count("max_batch_tokens", max_batch_tokens, optional=True)
        check_count("max_batch_sentences", max_batch_sentences, optional=True)
        self = cls.__new__(cls)
        self.provider_note = ""
        self._setup(backend, tokenizer, config, Path(path), provider, variant, max_batch_tokens, max_batch_sentences, 1)
        return self

    def _setup(self, backend, tokenizer, config, path, provider, variant, max_batch_tokens, max_batch_sentences,
               parallel_batches, pieces=None, lexicon_path=None):
        self.backend = backend
        self.tokenizer = tokenizer
        self.pieces = pieces or Pieces.of_tokenizer(tokenizer)     # for the loop ban (repetition.py)
        self.config = config
        self.path = path
        self.provider = provider
        self.variant = variant
        budget = default_budget(variant)
        self.max_batch_tokens = max_batch_tokens or budget[0]
        self.max_batch_sentences = max_batch_sentences or budget[1]
        self.parallel_batches = parallel_batches
        self.pad_to = PAD_MULTIPLE          # on Arm, batches padded to length buckets: batching.PAD_MULTIPLE
        # Targets the model was trained to produce; a tag alone (e.g. a reverse direction never
        # trained) would give fluent-looking garbage.
        tags = set(config.language_tags)
        self.directions = [(str(d[0]), str(d[1])) for d in config.directions if len(d) == 2 and str(d[1]) in tags]
        self.languages = sorted({b for _, b in self.directions}) or list(config.language_tags)
        self.source_languages = sorted({a for a, _ in self.directions}) or list(config.language_tags)
        self.default_language = "en" if "en" in self.languages else self.languages[0]
        self._lacks = vocabulary_lacks(tokenizer)      # characters kept out of the model (protect.py)
        self._readable = equivalents(self._lacks)       # punctuation it reads as another mark (protect.py)
        self._lexicon_path = lexicon_path              # read by `lexicon` on the first detection

    @functools.cached_property
    def lexicon(self):
        """The bundle's word counts (`lexicon.Lexicon`), which source-language detection weighs in; read
        on first use; None if the bundle has none."""
        if self._lexicon_path is None:
            return None
        try:
            return bundle.read_lexicon(self._lexicon_path, self.config)
        except BundleError as e:
            raise ModelLoadError(str(e)) from None

    def __repr__(self) -> str:
        return f"Translator({str(self.path)!r}, provider={self.provider!r}, variant={self.variant!r})"

    @contextlib.contextmanager
    def decode_cache(self, path: str | Path):
        """Within the block, each sentence decoded is kept in the SQLite file `path`, and one kept there
        is read back instead of decoded (runtime/decode_cache.py): an interrupted document goes on
        where it stopped. Yields the `DecodeCache` (len(): the sentences it holds)."""
        import hashlib    # OpenSSL's bindings: kept off the start-up of a plain translation

        from . import decode_cache

        config = self.path / "config.json"
        model = config.read_bytes() if config.is_file() else repr(self.config).encode()
        namespace = hashlib.sha256(model + f"|{self.variant}|{self.provider}".encode()).hexdigest()
        cache = decode_cache.DecodeCache(path, namespace)
        try:
            with decode_cache.keeping(cache):
                yield cache
        finally:
            cache.close()

    # Options and languages.

    def decode_options(self, options: DecodeOptions | None = None, **overrides) -> DecodeOptions:
        """`options` (default: `DecodeOptions()`) with `overrides` (its field names) applied, checked
        (an `OptionError`, a TranslationError, when out of range) and capped by the model's positions."""
        if options is None:
            options = DecodeOptions()
        elif not isinstance(options, DecodeOptions):     # fields by name have one way in: keywords
            raise TypeError(f"options must be a DecodeOptions, not {type(options).__name__} (to pass a dict of "
                            f"its fields, unpack it: translate(texts, **options))")
        unknown = sorted(overrides.keys() - DecodeOptions.__dataclass_fields__.keys())
        if unknown:     # not "DecodeOptions.__init__() got an unexpected keyword", which names our internals
            raise TypeError(unknown_option(unknown[0]))
        return (replace(options, **overrides) if overrides else options).for_model(self.config.max_positions)

    def tag_id(self, to: str | None) -> int:
        to = language_code(to) or self.default_language
        if to not in self.languages:
            raise TranslationError(f"this model cannot translate into {to!r}; its target languages are: "
                                   f"{', '.join(self.languages)}")
        return self.config.language_tags[to]

    def target_from(self, source: str, to: str | None = None) -> str:
        """The target language for a text in `source`: `to`, else the model's default or its first target
        from `source`. A TranslationError unless the model translates `source` into it."""
        source, to = language_code(source), language_code(to)
        if source not in self.source_languages:
            raise TranslationError(f"this model cannot translate from {source!r}; its source languages are: "
                                   f"{', '.join(self.source_languages)}")
        if to is None:
            targets = [b for a, b in self.directions if a == source] or self.languages
            to = self.default_language if self.default_language in targets else targets[0]
        if self.directions and (source, to) not in self.directions:
            raise TranslationError(f"this model does not translate {source} -> {to}; its directions are: "
                                   f"{', '.join(f'{a} -> {b}' for a, b in self.directions)}")
        return to

    # Translation.

    def translate(self, texts: Iterable[str] | str, to: str | None = None, options: DecodeOptions | None = None, *,
                  from_lang: str = "auto", split_sentences: bool = True, glossary: Glossary | None = None,
                  prefix: str | list[str | None] | None = None, **overrides) -> list[Translation]:
        """Translate each text into `to`. No `to`: with a `from_lang`, the language the model translates it
        into ("en" if it is one of them, else the first: `target_from`, as mt-translate chooses), else "en"
        if the model has it, else its first language.

        `options` is a `DecodeOptions` (default: its defaults, beam search of width 4); `overrides` are
        its fields by name, e.g. `beam_size=1` (greedy), `num_hypotheses=3` (an n-best list),
        `sampling=True, temperature=0.8, seed=1`, `return_alignment=True` (cross-attention weights).
        A dict of fields goes in as overrides, `translate(texts, **settings)`; `options` takes only a
        DecodeOptions (anything else is a TypeError).
        Output is at most max_length_ratio * source tokens + 10 (and the model's maximum).
        from_lang "auto" detects the language of each sentence and leaves one already in `to` unchanged
        (`Translation.languages` says which); a language code translates every sentence from it.
        split_sentences translates a paragraph sentence by sentence. A `Glossary` (runtime/glossary.py)
        fixes the translation of its terms in the sentences of its two languages. `prefix` is text each
        translation must start with (one str for every text, or a list with one per text, None for none):
        the model continues it, completing a last word left unfinished ("The train to Mun" -> "The train to
        Munich ..."), as interactive translation needs (runtime/prefix.py). A text with a prefix is
        translated as one sentence, and even when it looks already in the target language. Returns one
        Translation per text, in order (a str gives a list of one). Language codes are case-insensitive.
        """
        return self._translate(texts, to, options, from_lang, split_sentences, overrides, glossary, prefix)

    def score(self, sources: Iterable[str] | str, targets: Iterable[str] | str, to: str | None = None) -> list[Score]:
        """The model's log-probability of each target as the translation of its source, piece by piece
        (runtime/scoring.py): to filter parallel data, rank candidate translations, or weigh one made
        elsewhere. Sources and targets pair up in order (a str is a list of one); `to` is the targets'
        language (default as in `translate`). Each side is read as written, as one sentence: none of
        translate's sentence splitting, masking or casing. A side longer than the model's maximum is a
        TranslationError. Returns one `Score` per pair, in order; `score_iter` does the same for a stream."""
        sources, targets = list(as_texts(sources)), list(as_texts(targets))
        if len(sources) != len(targets):
            raise TranslationError(f"{len(sources)} sources for {len(targets)} targets: give one target per source")
        return self._score(sources, targets, to)

    def score_iter(self, sources: Iterable[str], targets: Iterable[str], to: str | None = None,
                   batch_size: int = 256) -> Iterator[Score]:
        """`score` for two streams, `batch_size` pairs at a time, yielding each Score in input order."""
        check_count("batch_size", batch_size)
        end = object()
        pairs = itertools.zip_longest(as_texts(sources), as_texts(targets), fillvalue=end)
        done = 0
        while chunk := list(itertools.islice(pairs, batch_size)):
            if (missing := next((i for i, pair in enumerate(chunk) if end in pair), None)) is not None:
                ended = "sources" if chunk[missing][0] is end else "targets"
                raise TranslationError(f"the {ended} end after {done + missing:,}: give one target per source")
            yield from self._score([s for s, _ in chunk], [t for _, t in chunk], to, first=done + 1)
            done += len(chunk)

    def _score(self, sources: list[str], targets: list[str], to: str | None, first: int = 1) -> list[Score]:
        """`score` of pairs whose count is checked; `first`: the number of the first pair, in messages."""
        tag = self.tag_id(to)
        limit = self.config.max_positions - 2         # a source's tag and </s>; a target's <s> and </s>
        pairs = []
        for number, texts in enumerate(zip(sources, targets), start=first):
            pair = []
            for side, text in zip(("source", "target"), texts):
                if not isinstance(text, str):
                    raise TranslationError(f"{side} {number} is a {type(text).__name__}, not a str")
                if len(ids := self.tokenizer.encode(clean(text).strip())) > limit:
                    raise TranslationError(f"{side} {number} is {len(ids)} tokens; this model reads at most {limit}")
                pair.append(ids)
            pairs.append(pair)
        log_probs = score_all(self.backend, [source_ids(s, tag, limit + 2) for s, _ in pairs], [t for _, t in pairs],
                              self.max_batch_tokens, self.max_batch_sentences, self.parallel_batches,
                              self.pad_to, self.config.max_positions) if pairs else []
        return [Score(source, target, [*map(self.tokenizer.id_to_piece, t), EOS_PIECE], lp.tolist())
                for source, target, (_, t), lp in zip(sources, targets, pairs, log_probs)]

    def translate_html(self, page: str, to: str | None = None, options: DecodeOptions | None = None, *,
                       from_lang: str = "auto", split_sentences: bool = True, glossary: Glossary | None = None,
                       **overrides) -> str:
        """`page`, an HTML document or fragment, with its text translated and its markup kept
        (runtime/markup.py): inline elements go back around the words they covered; script, style, pre,
        code and anything marked translate="no" or class="notranslate" come back unchanged. Options as
        for `translate`; the best hypothesis is used."""
        from . import markup          # html.parser stays off the start-up path of plain text
        return self._document(markup.translate_html, "page", page, to, options, from_lang, glossary,
                              split_sentences=split_sentences, **overrides)

    def translate_subtitles(self, document: str, to: str | None = None, options: DecodeOptions | None = None, *,
                            from_lang: str = "auto", glossary: Glossary | None = None, **overrides) -> str:
        """`document`, an SRT or WebVTT file's text, with each cue's text translated and its numbers,
        timings and layout kept (runtime/subtitles.py). Options as for `translate`."""
        from . import subtitles
        return self._document(subtitles.translate_subtitles, "document", document, to, options, from_lang, glossary,
                              **overrides)

    def translate_markdown(self, document: str, to: str | None = None, options: DecodeOptions | None = None, *,
                           from_lang: str = "auto", glossary: Glossary | None = None, **overrides) -> str:
        """`document`, Markdown, with the text of its headings, paragraphs, lists, quotes and tables
        translated, and its code, links' targets, front matter and layout kept (runtime/markdown.py)."""
        from . import markdown
        return self._document(markdown.translate_markdown, "document", document, to, options, from_lang, glossary,
                              **overrides)

    def translate_paragraphs(self, document: str, to: str | None = None, options: DecodeOptions | None = None, *,
                             from_lang: str = "auto", glossary: Glossary | None = None, **overrides) -> str:
        """`document`, plain text in wrapped paragraphs, with each paragraph translated as one text and
        wrapped again at its width and indentation; blank lines, list items and short lines kept as
        lines (runtime/paragraphs.py). Options as for `translate`."""
        from . import paragraphs
        return self._document(paragraphs.translate_paragraphs, "document", document, to, options, from_lang, glossary,
                              **overrides)

    def translate_po(self, document: str, to: str | None = None, options: DecodeOptions | None = None, *,
                     from_lang: str = "auto", glossary: Glossary | None = None, **overrides) -> str:
        """`document`, a gettext catalog (.po or .pot), with each message that has no translation yet
        translated and flagged fuzzy, and all else kept (runtime/po.py). `to` defaults to the catalog's
        Language. Options as for `translate`."""
        from . import po
        return self._document(po.translate_po, "document", document, to, options, from_lang, glossary, **overrides)

    def translate_json(self, document: str, to: str | None = None, options: DecodeOptions | None = None, *,
                       from_lang: str = "auto", glossary: Glossary | None = None, **overrides) -> str:
        """`document`, JSON such as a locale file, with its string values translated and its keys,
        structure and indentation kept (runtime/json_strings.py). Options as for `translate`."""
        from . import json_strings
        return self._document(json_strings.translate_json, "document", document, to, options, from_lang, glossary,
                              **overrides)

    def translate_xliff(self, document: str, to: str | None = None, options: DecodeOptions | None = None, *,
                        from_lang: str = "auto", glossary: Glossary | None = None, **overrides) -> str:
        """`document`, XLIFF 1.2 or 2.x, with each unit that has no target translated and marked for review,
        its inline codes kept, and all else kept (runtime/xliff.py). `to` defaults to the file's target
        language. Options as for `translate`."""
        from . import xliff
        return self._document(xliff.translate_xliff, "document", document, to, options, from_lang, glossary,
                              **overrides)

    def translate_docx(self, document: bytes, to: str | None = None, options: DecodeOptions | None = None, *,
                       from_lang: str = "auto", glossary: Glossary | None = None, **overrides) -> bytes:
        """`document`, a Word .docx file's bytes, with the text of its body, tables, text boxes, headers,
        footers, notes and comments translated, and its formatting, pictures, fields and links kept
        (runtime/word.py). Options as for `translate`."""
        from . import word
        return self._document(word.translate_docx, "document", document, to, options, from_lang, glossary,
                              kind=bytes, **overrides)

    def translate_pptx(self, document: bytes, to: str | None = None, options: DecodeOptions | None = None, *,
                       from_lang: str = "auto", glossary: Glossary | None = None, **overrides) -> bytes:
        """`document`, a PowerPoint .pptx file's bytes, with the text of its slides (text boxes, shapes,
        tables) and speaker notes translated, and its layout, formatting, pictures, fields and links kept
        (runtime/slides.py). Options as for `translate`."""
        from . import slides
        return self._document(slides.translate_pptx, "document", document, to, options, from_lang, glossary,
                              kind=bytes, **overrides)

    def translate_xlsx(self, document: bytes, to: str | None = None, options: DecodeOptions | None = None, *,
                       from_lang: str = "auto", glossary: Glossary | None = None, **overrides) -> bytes:
        """`document`, an Excel .xlsx file's bytes, with the text of its cells and comments translated, and
        its numbers, formulas, formatting and sheets kept (runtime/sheets.py). Options as for `translate`."""
        from . import sheets
        return self._document(sheets.translate_xlsx, "document", document, to, options, from_lang, glossary,
                              kind=bytes, **overrides)

    def translate_opendocument(self, document: bytes, to: str | None = None, options: DecodeOptions | None = None, *,
                               from_lang: str = "auto", glossary: Glossary | None = None, **overrides) -> bytes:
        """`document`, an OpenDocument file's bytes (.odt, .odp, .ods: LibreOffice's), with its text translated
        and its formatting, pictures, notes and links kept (runtime/opendocument.py). Options as for
        `translate`."""
        from . import opendocument
        return self._document(opendocument.translate_opendocument, "document", document, to, options, from_lang,
                              glossary, kind=bytes, **overrides)

    def translate_epub(self, document: bytes, to: str | None = None, options: DecodeOptions | None = None, *,
                       from_lang: str = "auto", glossary: Glossary | None = None, **overrides) -> bytes:
        """`document`, an EPUB book's bytes, with the text of its chapters and table of contents translated,
        and its markup, images, styles and metadata kept (runtime/epub.py). Options as for `translate`."""
        from . import epub
        return self._document(epub.translate_epub, "document", document, to, options, from_lang, glossary,
                              kind=bytes, **overrides)

    def translate_pdf(self, document: bytes, to: str | None = None, options: DecodeOptions | None = None, *,
                      from_lang: str = "auto", glossary: Glossary | None = None, **overrides) -> bytes:
        """`document`, a PDF file's bytes, with each page's text translated and set where it stood, and its
        pictures, drawings, links and outline kept (runtime/pdf.py; needs the `pdf` extra: pypdfium2,
        reportlab). Options as for `translate`."""
        from . import pdf
        return self._document(pdf.translate_pdf, "document", document, to, options, from_lang, glossary,
                              kind=bytes, **overrides)

    def _document(self, translate, name: str, document, to, options, from_lang, glossary, kind: type = str,
                  **more):
        """A whole document through `translate` (markup's, subtitles' or markdown's), after the checks
        `translate` makes: so a language the model lacks fails even for a document without words."""
        if not isinstance(document, kind):
            raise TranslationError(f"{name} must be a {kind.__name__}, not {type(document).__name__}")
        check_flag("split_sentences", more.get("split_sentences", True))
        chosen = self._direction(to, from_lang, glossary)[0]
        if to is None and language_code(from_lang) != "auto":
            # The target a given source picks, as mt-translate --from does (and named in the document's
            # language tags); else None stays None: a catalog's own target language, or the default.
            to = chosen
        # A byte-order mark is not the document's: its parser would take it for text (a Markdown "# Title"
        # for a paragraph), and some players read a subtitle file as UTF-8 only with it. So it goes around.
        if kind is str and document.startswith("\ufeff"):
            return "\ufeff" + translate(self, document[1:], to, options, from_lang=from_lang, glossary=glossary, **more)
        return translate(self, document, to, options, from_lang=from_lang, glossary=glossary, **more)

    def _direction(self, to: str | None, from_lang: str, glossary: Glossary | None = None) -> tuple[str, str, int]:
        """`to` and `from_lang`, lower-cased and checked against the model's directions, and the target's
        tag id; the glossary's type checked too. No `to`: `target_from(from_lang)` (as mt-translate and
        mt-tui choose), or the model's default language when the source is detected."""
        to, from_lang = language_code(to), language_code(from_lang)
        check_glossary(glossary)
        if glossary is not None:
            glossary.check_model(self)
        if to is not None:
            self.tag_id(to)         # a target the model lacks is named as such, before the direction
        to = (to or self.default_language) if from_lang == "auto" else self.target_from(from_lang, to)
        return to, from_lang, self.tag_id(to)

    def _translate(self, texts: Iterable[str] | str, to: str | None, options: DecodeOptions | None, from_lang: str,
                   split_sentences: bool, overrides: dict, glossary: Glossary | None = None,
                   prefix: str | list[str | None] | None = None, first: int = 1) -> list[Translation]:
        """`translate`, for it and `translate_iter`: its warnings point past both to the caller's line.
        `first`: the number of the first text, in messages (translate_iter's batches go on counting)."""
        texts = list(as_texts(texts))
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TranslationError(f"text {first + i} is a {type(t).__name__}, not a str")
        text_prefixes = prefixes_for(prefix, len(texts), first)
        check_flag("split_sentences", split_sentences)
        to, from_lang, tag = self._direction(to, from_lang, glossary)
        opts = self.decode_options(options, **overrides)
        t0 = time.perf_counter()
        text_languages: list[list[SourceLanguage]] = [[] for _ in texts]

        # 1. Sentences, cleaned and tokenized; over-long ones cut into parts.
        layouts: list[list[_Segment]] = []
        cores: list[str] = []
        owners: list[tuple[int, int]] = []
        for i, text in enumerate(texts):
            segments = []
            prefix_text = clean(text_prefixes[i] or "")         # one line, as the text's translation is
            prefix_text = prefix_text if prefix_text.strip() else ""
            whole = not split_sentences or bool(prefix_text)
            pieces = [(text.strip(), "")] if whole else split(text.strip())
            for sentence, sep in pieces:
                core = sentence.strip()
                lead, trail = sentence[: len(sentence) - len(sentence.lstrip())], sentence[len(sentence.rstrip()):]
                segments.append(_Segment(clean_space(lead), clean_space(trail), clean_space(sep)))
                plain = clean(strip_ansi(core)).strip()
                segments[-1].source = plain
                segments[-1].masked = self._mask(segments[-1])
                core = segments[-1].masked.text
                if language_id.has_letters(plain) and not language_id.has_letters(core):
                    # words, but all in a script the model lacks (what is left: punctuation, numbers)
                    language = self.unknown_script(plain, from_lang)
                    if any(known.warning and UNKNOWN_SCRIPT in known.warning for known in text_languages[i]):
                        language = replace(language, warning=None)      # said once a text, not once a sentence
                    else:
                        warnings.warn(f"text {first + i}: {language.warning}", LanguageWarning, stacklevel=WARNING_LEVEL)
                    text_languages[i].append(language)
                    segments[-1].kept = plain
                elif core:
                    language = self.source_language(plain, to, from_lang)    # detected on the text as written
                    if prefix_text:          # the user wants it translated: they began its translation
                        segments[-1].prefix, segments[-1].written = prefix_text, self._written(prefix_text)
                        if not language.translated:
                            language = replace(language, translated=True, warning=None)
                    text_languages[i].append(language)
                    if language.warning:
                        warnings.warn(f"text {first + i}: {language.warning}", LanguageWarning, stacklevel=WARNING_LEVEL)
                    if not language.translated:
                        segments[-1].kept = plain
                        continue
                    if glossary and (terms := glossary.terms(language.language, to)):
                        segments[-1].terms = terms
                        # Decoded as it is first, with its terms only if their translations are not in its
                        # translation (_decode_again). Up front: with a prefix (its search is the prefix's
                        # too) and with sampling (a sample is a draw, not the model's best translation).
                        if prefix_text or opts.sampling:
                            segments[-1].masked = self._mask(segments[-1], terms)
                            core = segments[-1].masked.text
                        else:
                            segments[-1].plain_first = True
                    owners.append((i, len(segments) - 1))
                    cores.append(core)
            layouts.append(segments)
        # One call per sentence: SentencePiece's list call starts threads, ~5 ms the first time (PERF_NOTES).
        encoded = [self.tokenizer.encode(core) for core in cores]
        limit = self.config.max_positions - 2                  # room for the language tag and </s>
        sources: list[list[int]] = []
        source_prefixes: list[Prefix | None] = []
        text_warnings: list[list[str]] = [[] for _ in texts]
        for (i, s), ids in zip(owners, encoded):
            if (seg := layouts[i][s]).plain_first and len(ids) > min(CLAUSE_TOKENS, limit):
                # To be cut into parts, it could not be decoded again as one (_decode_again): terms up front.
                seg.plain_first, seg.masked = False, self._mask(seg, seg.terms)
                ids = self.tokenizer.encode(seg.masked.text)
            parts = [ids]
            if len(ids) > min(CLAUSE_TOKENS, limit):
                parts = split_long(ids, min(CLAUSE_TOKENS, limit), [self.tokenizer.id_to_piece(t) for t in ids])
            if len(ids) > limit:
                message = (f"a sentence of {len(ids)} tokens is longer than the model's maximum of {limit}; "
                           f"translated in {len(parts)} parts")
                text_warnings[i].append(message)
                warnings.warn(f"text {first + i}: {message}", LongInputWarning, stacklevel=WARNING_LEVEL)
            for part in parts:
                source_prefixes.append(self._prefix(layouts[i][s].prefix, first + i, opts) if part is parts[0] else None)
                layouts[i][s].parts.append(len(sources))
                sources.append(source_ids(part, tag, limit + 2))
        unaligned = set()
        for i, segments in enumerate(layouts if opts.return_alignment else []):
            if (n := sum(len(sources[p]) for seg in segments for p in seg.parts)) > MAX_ALIGNED_TOKENS:
                message = (f"{n:,} tokens, too many for an alignment (at most {MAX_ALIGNED_TOKENS:,}: it holds "
                           f"target x source weights); translated without one")
                text_warnings[i].append(message)
                warnings.warn(f"text {first + i}: {message}", LongInputWarning, stacklevel=WARNING_LEVEL)
                unaligned.add(i)
        t1 = time.perf_counter()

        # 2. Decoding, length-sorted, in input order.
        results = decode_all(self.backend, sources, opts, self.max_batch_tokens, self.max_batch_sentences,
                             self.parallel_batches, self.pieces, source_prefixes, self.pad_to,
                             self.config.max_positions) if sources else []
        if any(not r.hypotheses or math.isnan(r.hypotheses[0].score) for r in results):
            # NaN weights (a broken average or export): beam search then finds nothing, greedy finds noise
            raise ModelLoadError(f"{self.path}: the model's scores are not numbers (NaN): its weights are "
                                 f"broken; export it again from a sound checkpoint")
        self._decode_again(layouts, sources, results, opts, tag, limit)
        t2 = time.perf_counter()

        # 3. Detokenized and reassembled.
        translations = [self._assemble(text, segments, sources, results,
                                       replace(opts, return_alignment=False) if i in unaligned else opts,
                                       text_warnings[i])
                        for i, (text, segments) in enumerate(zip(texts, layouts))]
        t3 = time.perf_counter()
        timings = {"preprocess_ms": 1000 * (t1 - t0), "decode_ms": 1000 * (t2 - t1),
                   "postprocess_ms": 1000 * (t3 - t2), "batch_texts": len(texts), "batch_parts": len(sources)}
        for tr, languages in zip(translations, text_languages):
            tr.timings = dict(timings)
            tr.languages = languages
            tr.warnings = [s.warning for s in languages if s.warning] + tr.warnings
        return translations

    def _decode_again(self, layouts: list[list[_Segment]], sources: list[list[int]], results: list,
                      opts: DecodeOptions, tag: int, limit: int) -> None:
        """Decode again, in one batch, each sentence whose best translation lost what it must keep. Sources and
        results change in place.

        A word with rare letters: it goes again as a name (protect.mask). The model copies most from their
        byte pieces, but garbles some ("Rychtářová" -> "Lacrossetář").
        A glossary term's translation, in a sentence decoded as it is first (`_Segment.plain_first`): it goes
        again with its terms behind placeholder names (glossary.py). The model fits the words around a term
        it reads (articles, gender, inflection), not around a name, so a translation that already has every
        term's translation (`glossary.holds`) is kept: on technical documentation, BLEU 39.5 -> 45.9 (de-en)
        and 29.2 -> 33.1 (en-de) against the terms always behind names, as many terms right, with 31% and 59%
        of the sentences decoded twice (docs/documents.md). Only the best hypothesis is checked: an n-best
        list is all from the decoding kept, and its others may lack a term.
        A sentence decoded again reads its glossary terms as names, whatever it lost: so it keeps them."""
        again: list[tuple[_Segment, Masked, list[int]]] = []
        for seg in (seg for segments in layouts for seg in segments):
            if not (((seg.masked and seg.masked.copies) or seg.plain_first) and len(seg.parts) == 1 and not seg.prefix):
                continue
            translation = self._restore(seg, self.model_text(results[seg.parts[0]].hypotheses[0].tokens))
            lost = [word for word in seg.masked.copies if word not in translation]
            if not (lost or seg.plain_first):
                continue
            masked = self._mask(seg, seg.terms, names=lost)     # what it goes again as, if it does
            missing = False
            if seg.plain_first:
                from .glossary import holds         # only with a glossary: off the start-up path
                missing = not holds(translation, masked.terms)      # one per term found: twice, twice
            if not (lost or missing):
                continue
            ids = self.tokenizer.encode(masked.text)
            # One that lacks a term goes again even past a clause's length (it was within it without its
            # terms): its terms must go in.
            if len(ids) <= (limit if missing else min(CLAUSE_TOKENS, limit)):
                again.append((seg, masked, source_ids(ids, tag, limit + 2)))
        if not again:
            return
        redone = decode_all(self.backend, [ids for _, _, ids in again], opts, self.max_batch_tokens,
                            self.max_batch_sentences, self.parallel_batches, self.pieces, [None] * len(again),
                            self.pad_to, self.config.max_positions)
        for (seg, masked, ids), result in zip(again, redone):
            if result.hypotheses:
                seg.masked, sources[seg.parts[0]], results[seg.parts[0]] = masked, ids, result

    def _mask(self, seg: _Segment, terms: Terms | None = None, names: Collection[str] = ()) -> Masked:
        """A segment's sentence as the model is to read it: protect.mask (with glossary `terms` and `names`),
        then in usual case if it is written in capitals (casing.py)."""
        masked = mask(seg.source, self._lacks, terms=terms, readable=self._readable, names=names)
        kept = masked.placeholders | set(masked.copies)
        if in_capitals(masked.text, kept):
            masked.text = usual_case(masked.text, self._word_count, lambda word: len(self.tokenizer.encode(word)), kept)
            masked.capitals = True
        return masked

    def _word_count(self, word: str) -> int:
        """How often the training data has `word` (lexicon.py), 0 without word counts."""
        return self.lexicon.total(word) if self.lexicon else 0

    def _restore(self, seg: _Segment, body: str) -> str:
        """A sentence's translation with what `_mask` changed put back: capitals, numbers, spans."""
        if seg.masked.capitals and not seg.prefix:
            body = to_capitals(body, seg.masked.placeholders)
        if seg.prefix:
            return restore_after(seg.prefix, seg.written, body, seg.masked)
        return restore(body, seg.masked)

    def _prefix(self, text: str, number: int, opts: DecodeOptions) -> Prefix | None:
        """The search's prefix for the prefix `text` of text `number` (None for none), checked against the
        output's room."""
        if not text:
            return None
        prefix = Prefix.of(text, self.tokenizer)
        room = opts.max_length - 2                      # positions, less BOS and the closing EOS
        if len(prefix.tokens) + bool(prefix.spelling) > room:
            raise TranslationError(f"the prefix of text {number} is {len(prefix.tokens)} tokens; this model's "
                                   f"translations hold at most {room}")
        return prefix

    def _written(self, prefix: str) -> str:
        """A prefix as the model's pieces spell it (SentencePiece's whitespace and Unicode normalisation)."""
        return self.tokenizer.decode(self.tokenizer.encode(prefix.strip()))

    def sources_into(self, to: str) -> list[str]:
        """The languages this model translates into `to` from ([] if its config names no directions)."""
        return [a for a, b in self.directions if b == to]

    def source_language(self, sentence: str, to: str, from_lang: str = "auto") -> SourceLanguage:
        """The language of one sentence for a translation into `to`, and whether it needs translating:
        `from_lang` as given, or (for "auto") detected by `language_id.choose`."""
        if from_lang != "auto":
            return SourceLanguage(from_lang, None)
        sources = self.sources_into(to) or [s for s in self.source_languages if s != to]
        return language_id.choose(sentence, to, sources, self.lexicon)

    def unknown_script(self, sentence: str, from_lang: str = "auto") -> SourceLanguage:
        """A sentence with letters but none the vocabulary has (another script): it comes back as it is,
        with a warning that names its language when detecting."""
        if from_lang != "auto":
            return SourceLanguage(from_lang, None, translated=False, warning=UNKNOWN_SCRIPT)
        probs = language_id.probabilities(sentence)
        language = max(probs, key=probs.get)
        return SourceLanguage(language, probs[language], translated=False, detected=language,
                              warning=f"looks like {language} ({probs[language]:.2f}); {UNKNOWN_SCRIPT}")

    def translate_iter(self, texts: Iterable[str], to: str | None = None, options: DecodeOptions | None = None, *,
                       from_lang: str = "auto", batch_size: int = 32, split_sentences: bool = True,
                       glossary: Glossary | None = None, prefix: str | Iterable[str | None] | None = None,
                       **overrides) -> Iterator[Translation]:
        """Translate a stream, `batch_size` texts at a time, yielding results in input order as soon as
        each batch is done; a str is one text. Options as for `translate`; `prefix` is one str for every
        text, or a stream of one per text (None: none). They are checked when the first result is asked
        for, before the first text is read."""
        texts = as_texts(texts)
        check_count("batch_size", batch_size)
        check_flag("split_sentences", split_sentences)
        to, from_lang, _ = self._direction(to, from_lang, glossary)
        opts = self.decode_options(options, **overrides)      # fail before reading
        per_text = prefix is not None and not isinstance(prefix, str)
        if per_text and not isinstance(prefix, Iterable):
            raise TranslationError(f"prefix must be a str, one per text, or None, not {type(prefix).__name__}")
        prefixes = iter(prefix) if per_text else None
        iterator, done, failed = iter(texts), 0, None
        while not failed:
            batch = []
            try:
                batch.extend(itertools.islice(iterator, batch_size))
            except Exception as e:          # the input's own error: the texts read before it are translated first
                failed = e
            if not batch:
                break
            starts = list(itertools.islice(prefixes, len(batch))) if per_text else prefix
            if per_text and len(starts) < len(batch):
                raise TranslationError(f"fewer prefixes than texts (only {done + len(starts)}): give one per text")
            yield from self._translate(batch, to, opts, from_lang, split_sentences, {}, glossary, starts, done + 1)
            done += len(batch)
        if failed:
            raise failed
        if per_text and next(prefixes, done) is not done:
            raise TranslationError(f"more prefixes than texts ({done}): give one per text")

    def _assemble(self, text: str, segments: list[_Segment], sources, results, opts: DecodeOptions,
                  text_warnings: list[str]) -> Translation:
        parts = [p for seg in segments for p in seg.parts]
        n_best = max(len(results[p].hypotheses) for p in parts) if parts else 1
        beam = not opts.sampling and opts.beam_size > 1

        def hypothesis(rank: int) -> tuple[Hypothesis, list[SearchHypothesis]]:
            chosen: dict[int, SearchHypothesis] = {}
            for p in parts:
                hyps = results[p].hypotheses or [SearchHypothesis([], 0.0)]
                chosen[p] = hyps[min(rank, len(hyps) - 1)]
            out, tokens = [], []
            for seg in segments:
                words = [self.model_text(chosen[p].tokens) for p in seg.parts]
                body = " ".join(w for w in words if w)
                body = seg.kept or self._restore(seg, body)
                out.append((seg.lead + body + seg.trail if body else "") + seg.sep)
                tokens += [self.tokenizer.id_to_piece(t) for p in seg.parts for t in chosen[p].tokens]
            # Scores of parts combine as if decoded as one: log-probs add up; a beam score is its
            # log-prob / length ** length_penalty, so the parts' log-probs are recovered and renormalised.
            if not parts:
                score = 0.0
            elif beam:
                lengths = [len(chosen[p].tokens) + 1 for p in parts]
                log_prob = sum(chosen[p].score * n ** opts.length_penalty for p, n in zip(parts, lengths))
                score = beam_score(log_prob, sum(lengths), opts.length_penalty)
            else:
                score = sum(chosen[p].score for p in parts)
            return Hypothesis("".join(out).strip(), tokens, float(score)), [chosen[p] for p in parts]

        hypotheses, best_parts = [], None
        for rank in range(n_best):
            hyp, used = hypothesis(rank)
            hypotheses.append(hyp)
            best_parts = best_parts or used
        best = hypotheses[0]
        alignment = self._alignment(parts, sources, best_parts) if opts.return_alignment and parts else None
        n_source = sum(len(sources[p]) - 2 for p in parts)
        return Translation(best.text, best.tokens, best.score, hypotheses, alignment, source=text,
                           num_tokens=len(best.tokens), num_source_tokens=n_source, num_parts=len(parts),
                           warnings=list(text_warnings))

    def model_text(self, ids: list[int]) -> str:
        """The text of the model's token ids. A character whose bytes the search left unfinished (only
        where its search head ranked no byte to continue it: byte_pieces.py) is dropped, not shown as
        U+FFFD (none is lost: SentencePiece's normalisation drops a U+FFFD from the source), and a line or
        paragraph separator spelled in bytes becomes a space, as in the input (clean_space)."""
        return clean_space(self.tokenizer.decode(ids).replace("\ufffd", "")).strip()

    def _alignment(self, parts: list[int], sources, hyps: list[SearchHypothesis]) -> Alignment:
        piece = self.tokenizer.id_to_piece
        source_tokens, target_tokens, blocks = [], [], []
        for p, hyp in zip(parts, hyps):
            src = sources[p]
            source_tokens += [piece(t) for t in src]                  # tag, pieces, </s>
            target_tokens += [piece(t) for t in hyp.tokens] + [EOS_PIECE]
            block = np.zeros((len(hyp.tokens) + 1, len(src)), dtype=np.float32)
            for r, row in enumerate((hyp.attention or [])[: len(block)]):
                block[r] = row[: len(src)]                           # batch rows are padded on the right
            blocks.append(block)
        weights = np.zeros((len(target_tokens), len(source_tokens)), dtype=np.float32)
        r = c = 0
        for b in blocks:
            weights[r:r + b.shape[0], c:c + b.shape[1]] = b
            r, c = r + b.shape[0], c + b.shape[1]
        return Alignment(source_tokens, target_tokens, weights.round(6).tolist())
