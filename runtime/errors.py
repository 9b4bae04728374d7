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


class OutOfMemory(ModelLoadError, MemoryError):
    """The model could not be loaded or run for want of memory (a `ulimit -v`, a container's limit, a
    small machine): ONNX Runtime and SentencePiece say so as their own errors, which would read as a
    damaged model ("not a usable ONNX model (std::bad_alloc)")."""


def is_out_of_memory(error: BaseException) -> bool:
    """Whether a native library's error is running out of memory: C++'s std::bad_alloc, ONNX Runtime's
    arena ("Failed to allocate memory"), or ENOMEM (its failed pthread_create says "error code: 12")."""
    return isinstance(error, MemoryError) or any(sign in str(error) for sign in (
        "bad_alloc", "Failed to allocate memory", "Cannot allocate memory", "error code: 12 "))
