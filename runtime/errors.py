"""The runtime's exceptions. Each message is meant for the user as is: it names the file, line or
setting at fault, so a CLI prints it and exits without a traceback."""

from __future__ import annotations

from .bundle_format import BundleError


class TranslationError(Exception):
    """Anything the runtime cannot do for the caller: bad options, unknown language, unusable model."""


class ModelLoadError(TranslationError, BundleError):
    """A missing, corrupt or mismatched bundle: both a `TranslationError` and a `BundleError`."""


class DocumentError(TranslationError):
    """A document that cannot be read as its kind (not JSON, a damaged zip, no subtitle cues, ...). The
    message says what is wrong; whoever knows where the document came from names it (mt-translate: the
    file given to -i)."""


class ProviderError(TranslationError):
    """The requested execution provider (e.g. CUDA) is not usable on this machine."""
