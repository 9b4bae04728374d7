"""Torch-free runtime: ONNX Runtime + numpy + SentencePiece.

    from mtkit.runtime import DecodeOptions, Translator
    Translator().translate("Guten Morgen")[0].text
    Translator().translate(["Good morning"], to="de", options=DecodeOptions(beam_size=1))

The public names load lazily, so `import mtkit.runtime.vocab` (used by training) stays cheap.
"""

_EXPORTS = {
    "Translator": "translator", "Translation": "results", "Hypothesis": "results", "Alignment": "results",
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
