"""Opening a bundle's encoder and decoder on a provider: the variant chosen, each graph checked
against config.json, CUDA tried first where asked for "auto"."""

from __future__ import annotations

from pathlib import Path

from . import bundle
from .bundle_format import BundleConfig
from .errors import ProviderError
from .threads import Background


def open_graphs(directory: Path, config: BundleConfig, variant: str, provider: str, settings):
    """(variant, encoder session, decoder session) for a variant ("auto": int8 on CPU or fp16 on CUDA
    when the bundle has it, else fp32), each graph checked against config.json."""
    from .onnx_backend import check_graph, check_pair, create_session

    if variant == "auto":
        preference = ("int8", "fp32", "fp16") if provider == "cpu" else ("fp16", "fp32", "int8")
        variant = next((v for v in preference if v in config.variants), "fp32")
    encoder_path, decoder_path = bundle.variant_files(directory, config, variant)
    # Both at once: ONNX Runtime releases the GIL for most of a session's creation (PERF_NOTES.md,
    # "Session 9"). An encoder error still comes first.
    with Background(create_session, decoder_path, provider, settings.for_graph(variant, "decoder")) as building_decoder:
        encoder = create_session(encoder_path, provider, settings.for_graph(variant, "encoder"))
        decoder = building_decoder.result()
    # The decoder first: a config.json edited to other heads disagrees with both graphs, and the
    # decoder is the one that has always been named for that.
    check_graph(decoder, "decoder", config, decoder_path)
    check_graph(encoder, "encoder", config, encoder_path)
    check_pair(encoder, decoder, config, encoder_path, decoder_path)
    return variant, encoder, decoder


def open_for_provider(directory: Path, config: BundleConfig, variant: str, provider: str, settings,
                      io_binding: bool | None = None) -> tuple[str, str, str, object]:
    """(provider, why it was chosen, variant, backend): `open_backend` on `provider`, where "auto" is
    CUDA when this onnxruntime has it and it initializes, else the CPU."""
    from .onnx_backend import cuda_available

    if provider != "auto":
        return (provider, "", *open_backend(directory, config, variant, provider, settings, io_binding))
    note = "this onnxruntime build has no CUDA provider"
    if cuda_available():
        try:
            return ("cuda", "CUDA is available and initialized",
                    *open_backend(directory, config, variant, "cuda", settings, io_binding))
        except ProviderError as e:
            note = f"CUDA did not initialize: {e}"
    return ("cpu", note, *open_backend(directory, config, variant, "cpu", settings, io_binding))


def open_backend(directory: Path, config: BundleConfig, variant: str, provider: str, settings,
                 io_binding: bool | None = None):
    """(variant, backend) for a variant as `open_graphs` chooses it: an IOBindingBackend, which keeps
    the KV cache on the device, when `io_binding` (default: on CUDA only), else an OnnxBackend."""
    from .onnx_backend import IOBindingBackend, OnnxBackend

    variant, encoder, decoder = open_graphs(directory, config, variant, provider, settings)
    paths = bundle.variant_files(directory, config, variant)     # which the backend names in an error of a run
    use_binding = provider == "cuda" if io_binding is None else io_binding
    if use_binding:
        return variant, IOBindingBackend(encoder, decoder, config, device=provider, settings=settings,
                                         paths=paths)
    return variant, OnnxBackend(encoder, decoder, config, paths)
