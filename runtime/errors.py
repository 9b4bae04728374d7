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


# How running out of memory reads in an error: C++'s std::bad_alloc, ONNX Runtime's arena, ENOMEM (ORT's
# failed pthread_create says "error code: 12"), a shared library the loader could not map, a thread Python
# could not start.
OUT_OF_MEMORY_SIGNS = ("bad_alloc", "Failed to allocate memory", "Cannot allocate memory", "error code: 12 ",
                       "failed to map segment", "can't start new thread")


def is_out_of_memory(error: BaseException) -> bool:
    """Whether `error`, or the error it was raised from (numpy's ImportError wraps the loader's), is
    running out of memory: a MemoryError, or one of OUT_OF_MEMORY_SIGNS."""
    return any(isinstance(e, MemoryError) or any(sign in str(e) for sign in OUT_OF_MEMORY_SIGNS)
               for e in (error, error.__cause__, error.__context__) if e is not None)
