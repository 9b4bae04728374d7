"""Torch-free runtime: ONNX Runtime + numpy + SentencePiece.

    from mtkit.runtime import DecodeOptions, Translator
    Translator().translate("Guten Morgen")[0].text
    Translator().translate(["Good morning"], to="de", options=DecodeOptions(beam_size=1))

The public names load lazily, so `import mtkit.runtime.vocab` (used by training) stays cheap.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Type checkers cannot follow the lazy loading below, so they read the same names here
    # (`X as X` re-exports them; tests/test_runtime_translator.py checks the two lists agree).
    from .bundle import default_model as default_model
    from .bundle_format import BundleConfig as BundleConfig, BundleError as BundleError
    from .decode_options import DecodeOptions as DecodeOptions, OptionError as OptionError
    from .errors import (DocumentError as DocumentError, ModelLoadError as ModelLoadError,
                         ProviderError as ProviderError, TranslationError as TranslationError)
    from .glossary import Glossary as Glossary, GlossaryError as GlossaryError
    from .language_id import LanguageWarning as LanguageWarning, SourceLanguage as SourceLanguage
    from .progress import translation_progress as translation_progress
    from .results import Alignment as Alignment, Hypothesis as Hypothesis, Translation as Translation
    from .scoring import Score as Score
    from .translator import LongInputWarning as LongInputWarning, Translator as Translator

_EXPORTS = {
    "Translator": "translator", "Translation": "results", "Hypothesis": "results", "Alignment": "results",
    "Score": "scoring",
    "LongInputWarning": "translator", "DecodeOptions": "decode_options", "OptionError": "decode_options",
    "SourceLanguage": "language_id", "LanguageWarning": "language_id",
    "TranslationError": "errors", "ModelLoadError": "errors", "ProviderError": "errors",
    "DocumentError": "errors",
    "BundleError": "bundle_format", "BundleConfig": "bundle_format",
    "default_model": "bundle", "Glossary": "glossary", "GlossaryError": "glossary",
    "translation_progress": "progress",
}

__all__ = list(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *__all__])      # the lazy names too, for help() and tab completion
