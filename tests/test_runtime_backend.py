"""ONNX Runtime backends and providers: the IOBinding path (run here on the CPU) against the plain
one, the cache bookkeeping of beam search, session options and provider selection, each graph checked
against config.json at load, and ONNX Runtime's errors in a run."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from conftest import ENGLISH, GERMAN, ORT_THREADS, translate_cli
from mtkit.runtime import ModelLoadError, ProviderError, Translator, TranslationError, checksums
from mtkit.runtime import bundle_format as bf
from mtkit.runtime.batching import pad_batch
from mtkit.runtime.bundle import shipped_models
from mtkit.runtime.bundle_format import BundleConfig, BundleError
from mtkit.runtime.decode_budget import BUDGET, INT8_BUDGET
from mtkit.runtime.gather_graph import FLOAT, FLOAT16, gather_model
from mtkit.runtime.onnx_backend import IOBindingBackend, OnnxBackend, cuda_available, first_rows, sentence_groups
from mtkit.runtime.translator import PARALLEL_BATCHES
from mtkit.runtime.vocab import BOS_ID, PAD_ID, source_ids

# Sentences the fixture model knows, so that both paths are far from any near-tie; one has two sentences.
TEXTS = [GERMAN[0], f"{GERMAN[1]} {GERMAN[2]}", *GERMAN[3:7]]


@pytest.fixture(scope="module")
def plain(fixture_translator):
    return fixture_translator


@pytest.fixture(scope="module")
def bound(fixture_bundle):
    return Translator(fixture_bundle, variant="fp32", threads=ORT_THREADS, io_binding=True)


def same(a, b):
    return [[(h.tokens, h.score) for h in t.hypotheses] for t in a] == [[(h.tokens, h.score) for h in t.hypotheses] for t in b]


@pytest.mark.parametrize("options", [dict(beam_size=1), dict(beam_size=4, num_hypotheses=3),
                                     dict(sampling=True, seed=5, top_k=10)])
def test_iobinding_path_gives_identical_outputs(plain, bound, options):
    assert isinstance(plain.backend, OnnxBackend) and not isinstance(plain.backend, IOBindingBackend)
    assert isinstance(bound.backend, IOBindingBackend) and bound.backend.device == "cpu"
    assert same(plain.translate(TEXTS, **options), bound.translate(TEXTS, **options))


def test_iobinding_alignment_is_identical(plain, bound):
    a = plain.translate(TEXTS[:2], beam_size=3, return_alignment=True)
    b = bound.translate(TEXTS[:2], beam_size=3, return_alignment=True)
    assert [t.alignment.weights for t in a] == [t.alignment.weights for t in b]


def test_iobinding_cache_stays_in_ortvalues(bound):
    backend = bound.backend
    ids = np.array([[5, 300, 301, 3], [5, 302, 3, 0]])
    state = backend.start(ids, ids != 0)
    backend.step(state, np.array([2, 2]))
    backend.select(state, np.array([1, 1, 0]))
    logits, _ = backend.step(state, np.array([7, 8, 9]))
    assert logits.shape == (3, bound.config.vocab_size)
    assert all(isinstance(v, ort.OrtValue) for v in [*state.past.values(), *state.cross.values()])
    assert state.past["past_key_0"].shape()[:3] == [3, bound.config.n_heads, 2]


@pytest.mark.parametrize("translator", ["plain", "bound"])
def test_teacher_force_over_a_chunk_matches_stepping_token_by_token(request, translator):
    """What export parity compares with PyTorch: known target tokens fed in one decoder call give every
    position the logits (and cross-attention) of the search's one-token steps, and the cache grows
    by the whole chunk, so stepping on from there continues the same decode."""
    t = request.getfixturevalue(translator)
    backend, tag = t.backend, t.tag_id("en")
    src_ids, src_mask = pad_batch([source_ids(ids, tag, t.config.max_positions)
                                   for ids in t.tokenizer.encode(GERMAN[:2])])
    tgt_ids, _ = pad_batch([[BOS_ID, *ids] for ids in t.tokenizer.encode(ENGLISH[:2])])
    assert not src_mask.all() or not (tgt_ids != PAD_ID).all(), "padding must be exercised"
    steps = tgt_ids.shape[1] - 1                 # the last token is fed after the chunk

    stepwise = backend.start(src_ids, src_mask)
    stepped = [backend.step(stepwise, tgt_ids[:, i], need_attention=True) for i in range(steps + 1)]
    chunked = backend.start(src_ids, src_mask)
    logits, attention = backend.teacher_force(chunked, tgt_ids[:, :steps], need_attention=True)
    assert logits.shape == (2, steps, t.config.vocab_size) and logits.dtype == np.float32
    assert attention.shape == (2, steps, src_ids.shape[1])
    np.testing.assert_allclose(logits, np.stack([s[0] for s in stepped[:steps]], 1), rtol=0, atol=1e-4)
    np.testing.assert_allclose(attention, np.stack([s[1] for s in stepped[:steps]], 1), rtol=0, atol=1e-5)

    last, _ = backend.step(chunked, tgt_ids[:, steps])
    np.testing.assert_allclose(last, stepped[steps][0], rtol=0, atol=1e-4)
    past = chunked.past[backend.past_names[0]]
    assert (past.shape() if isinstance(past, ort.OrtValue) else list(past.shape))[2] == steps + 1


@pytest.fixture(scope="module")
def per_row(fixture_bundle, tmp_path_factory):
    """The fixture bundle as an older mt-export wrote it: config.json without "cross_per_sentence",
    so the runtime feeds the decoder's cross tensors one per row (the graph takes either)."""
    copy = tmp_path_factory.mktemp("per-row") / "bundle"
    shutil.copytree(fixture_bundle, copy)
    config = json.loads((copy / "config.json").read_text(encoding="utf-8"))
    assert config["tensors"].pop("cross_per_sentence") is True
    (copy / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return Translator(copy, variant="fp32", threads=ORT_THREADS)


@pytest.mark.parametrize("options", [dict(beam_size=1), dict(beam_size=4, num_hypotheses=3),
                                     dict(beam_size=3, return_alignment=True), dict(sampling=True, seed=5, top_k=10)])
def test_cross_per_sentence_decodes_as_per_row(plain, per_row, options):
    """A sentence's beams sharing its cross keys/values is the same computation as each row having
    its own copy: same tokens, scores and alignments up to rounding."""
    assert plain.backend.names.cross_per_sentence and not per_row.backend.names.cross_per_sentence
    a, b = plain.translate(TEXTS, **options), per_row.translate(TEXTS, **options)
    assert [[h.tokens for h in t.hypotheses] for t in a] == [[h.tokens for h in t.hypotheses] for t in b]
    np.testing.assert_allclose([h.score for t in a for h in t.hypotheses],
                               [h.score for t in b for h in t.hypotheses], rtol=0, atol=1e-5)
    if options.get("return_alignment"):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x.alignment.weights, y.alignment.weights, rtol=0, atol=1e-5)


@pytest.mark.parametrize("translator", ["plain", "per_row"])
def test_beam_reorders_do_not_regather_cross_attention_cache(request, translator):
    """Cross keys/values depend only on the source sentence: reordering beams within a sentence
    must leave them alone; dropping a sentence must gather them. Per sentence they are gathered
    neither at the beam expansion nor at a reorder."""
    backend = request.getfixturevalue(translator).backend
    per_sentence = backend.names.cross_per_sentence
    ids = np.array([[5, 300, 301, 3], [5, 302, 3, 0]])
    state = backend.start(ids, ids != 0)
    encoded = state.cross["cross_key_0"]
    backend.select(state, np.repeat([0, 1], 3))              # 3 beams per sentence
    backend.step(state, np.full(6, 2))
    cross = state.cross["cross_key_0"]
    assert (cross is encoded) == per_sentence and len(cross) == (2 if per_sentence else 6)
    backend.select(state, np.array([2, 0, 0, 5, 3, 4]))      # reorder within each sentence
    past = state.past["past_key_0"]
    backend.step(state, np.arange(6) + 10)
    assert state.cross["cross_key_0"] is cross               # untouched: no copy
    assert state.past["past_key_0"].shape[2] == past.shape[2] + 1
    backend.select(state, np.array([3, 4, 5]))                # sentence 0 finished
    backend.step(state, np.arange(3) + 10)
    left = 1 if per_sentence else 3
    assert state.cross["cross_key_0"] is not cross and len(state.cross["cross_key_0"]) == left
    np.testing.assert_array_equal(state.cross["cross_key_0"], cross[-left:])
    np.testing.assert_array_equal(state.src_mask, np.repeat([[True, True, True, False]], left, axis=0))


def test_sentence_groups():
    np.testing.assert_array_equal(sentence_groups(np.array([3, 3, 1, 1])), [3, 1])
    np.testing.assert_array_equal(sentence_groups(np.array([0, 1, 2])), [0, 1, 2])
    assert sentence_groups(np.array([0, 0, 1])) is None          # unequal counts
    assert sentence_groups(np.array([0, 1, 0, 1])) is None       # a sentence's rows apart
    assert sentence_groups(np.array([], dtype=np.int64)) is None


def test_first_rows():
    assert first_rows(np.array([0, 1]), np.array([0, 1])) is None
    np.testing.assert_array_equal(first_rows(np.array([1, 1, 0]), np.array([0, 0, 1, 1])), [2, 2, 0])


@pytest.mark.parametrize("elem, dtype", [(FLOAT, np.float32), (FLOAT16, np.float16)])
def test_gather_graph_is_valid_onnx_and_gathers_rows(elem, dtype):
    onnx = pytest.importorskip("onnx")
    model = gather_model(elem)
    onnx.checker.check_model(onnx.load_from_string(model), full_check=True)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random((3, 2, 4, 5)).astype(dtype)
    rows = np.array([2, 2, 0])
    np.testing.assert_array_equal(session.run(None, {"data": x, "indices": rows})[0], x[rows])


def test_session_options_are_applied(fixture_bundle, plain):
    t = Translator(fixture_bundle, variant="fp32", threads=2, graph_optimization="disable", memory_arena=False)
    options = t.backend.decoder.get_session_options()
    assert options.intra_op_num_threads == 2
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    assert options.enable_cpu_mem_arena is False
    assert not uses_shared_arena(t.backend.decoder)
    a, b = t.translate(TEXTS, beam_size=1), plain.translate(TEXTS, beam_size=1)
    assert [x.tokens for x in a] == [x.tokens for x in b]


def uses_shared_arena(session: ort.InferenceSession) -> bool:
    try:
        return session.get_session_options().get_session_config_entry("session.use_env_allocators") == "1"
    except RuntimeError:      # ORT: no such entry
        return False


def test_cpu_sessions_share_one_arena(fixture_bundle):
    """Every CPU session with an arena uses the process's one (`shared_cpu_arena`), also across
    Translators, and translates as a session with its own allocations does."""
    first, second = (Translator(fixture_bundle, variant="int8", threads=1) for _ in range(2))
    own = Translator(fixture_bundle, variant="int8", threads=1, memory_arena=False)
    for t in (first, second):
        assert uses_shared_arena(t.backend.encoder) and uses_shared_arena(t.backend.decoder)
    assert not uses_shared_arena(own.backend.encoder)
    results = [[x.tokens for x in t.translate(TEXTS, beam_size=2)] for t in (first, second, own)]
    assert results[0] == results[1] == results[2]


@pytest.mark.parametrize("threads, batches, intra_op", [(4, 2, 2), (2, None, 1), (3, 2, 1), (1, 2, 1), (2, 1, 2)])
def test_parallel_batches_share_the_int8_threads(fixture_bundle, threads, batches, intra_op):
    int8 = Translator(fixture_bundle, variant="int8", threads=threads, parallel_batches=batches)
    fp32 = Translator(fixture_bundle, variant="fp32", threads=threads, parallel_batches=batches)
    assert int8.parallel_batches == fp32.parallel_batches == (batches or min(PARALLEL_BATCHES, threads))
    for session in (int8.backend.encoder, int8.backend.decoder):
        assert session.get_session_options().intra_op_num_threads == intra_op
    for session in (fp32.backend.encoder, fp32.backend.decoder):
        assert session.get_session_options().intra_op_num_threads == threads


def test_variants(fixture_bundle, plain):
    auto = Translator(fixture_bundle, threads=ORT_THREADS)
    assert (auto.provider, auto.variant) == ("cpu", "int8")          # int8 preferred on CPU
    fp32 = plain
    assert fp32.variant == "fp32"
    with pytest.raises(TranslationError, match="no 'fp16' variant"):
        Translator(fixture_bundle, variant="fp16")
    with pytest.raises(TranslationError, match="unknown variant"):
        Translator(fixture_bundle, variant="int4")
    # int8 is an approximation of fp32: most greedy outputs agree on this tiny model.
    a, b = auto.translate(TEXTS, beam_size=1), fp32.translate(TEXTS, beam_size=1)
    assert sum(x.tokens[:3] == y.tokens[:3] for x, y in zip(a, b)) >= len(TEXTS) // 2


@pytest.mark.skipif(cuda_available(), reason="checks the behaviour without a CUDA provider")
def test_cuda_without_cuda_is_a_clear_error_not_a_fallback(fixture_bundle):
    with pytest.raises(ProviderError, match="CUDA"):
        Translator(fixture_bundle, provider="cuda")


@pytest.mark.skipif(cuda_available(), reason="checks the behaviour without a CUDA provider")
def test_auto_provider_falls_back_to_cpu_and_says_why(fixture_bundle):
    t = Translator(fixture_bundle, provider="auto", threads=ORT_THREADS)
    assert t.provider == "cpu" and t.variant == "int8"
    assert "CUDA" in t.provider_note
    assert t.backend.decoder.get_providers()[0] == "CPUExecutionProvider"


def test_the_decode_budget_follows_the_variant(fixture_bundle):
    """The int8 graphs decode fewer rows at once by default (`decode_budget.py`); a budget given is kept."""
    int8 = Translator(fixture_bundle, variant="int8", threads=1)
    fp32 = Translator(fixture_bundle, variant="fp32", threads=1)
    given = Translator(fixture_bundle, variant="int8", threads=1, max_batch_tokens=2000, max_batch_sentences=12)
    assert (int8.max_batch_tokens, int8.max_batch_sentences) == INT8_BUDGET
    assert (fp32.max_batch_tokens, fp32.max_batch_sentences) == BUDGET
    assert (given.max_batch_tokens, given.max_batch_sentences) == (2000, 12)
    assert INT8_BUDGET[1] < BUDGET[1]


def shipped_copy(dest: Path) -> Path:
    """The shipped de-en model's config.json and the files its Translator opens, copied to `dest`."""
    source = shipped_models()["de-en"]
    dest.mkdir()
    for name in [bf.CONFIG_FILE, *checksums.runtime_files(BundleConfig.load(source))]:
        shutil.copy(source / name, dest / name)
    return dest


def test_an_encoder_that_does_not_match_config_json_is_refused_at_load(fixture_bundle, tmp_path, capsys):
    """The fixture's int8 encoder swapped into the de-en bundle, its checksums recorded again (as docs/models.md
    says after editing a bundle): the decoder's checks pass, and the encoder's width (64, not 256) is one
    line naming encoder.int8.onnx when the model loads, in the API and the CLI, as a swapped decoder is;
    not ONNX Runtime's Gather error at the first sentence."""
    swapped = shipped_copy(tmp_path / "swapped")
    shutil.copy(fixture_bundle / "encoder.int8.onnx", swapped / "encoder.int8.onnx")
    checksums.record(swapped)
    assert checksums.verify(swapped).ok
    message = r"swapped/encoder.int8.onnx: output encoder_out has d_model 64, but config.json says 256; it does not match"
    with pytest.raises(ModelLoadError, match=message) as info:
        Translator(swapped, threads=ORT_THREADS)
    assert isinstance(info.value, BundleError) and isinstance(info.value, TranslationError)
    code, out, err = translate_cli(capsys, "-m", str(swapped), "Guten Morgen")
    assert (code, out) == (1, "") and re.fullmatch(f"mt-translate: error: .*{message}\n", err), err


def test_each_graph_is_checked_against_config_json(fixture_bundle):
    """What ONNX Runtime's sessions tell of the fixture's graphs, against a config.json saying other sizes:
    the heads and head size of the encoder's cross outputs, the encoder's width and the decoder's vocabulary
    (its logits). The encoder's embedding table the session does not show: a smaller one fails in the run
    (test_an_onnx_runtime_error_in_a_run_is_one_line_naming_the_graph)."""
    from mtkit.runtime.onnx_backend import check_graph, check_pair

    config = BundleConfig.load(fixture_bundle)
    encoder_path, decoder_path = fixture_bundle / "encoder.onnx", fixture_bundle / "decoder.onnx"
    encoder, decoder = (ort.InferenceSession(str(p), providers=["CPUExecutionProvider"])
                        for p in (encoder_path, decoder_path))
    check_graph(encoder, "encoder", config, encoder_path)
    check_graph(decoder, "decoder", config, decoder_path)
    check_pair(encoder, decoder, config, encoder_path, decoder_path)
    heads = replace(config, n_heads=2 * config.n_heads, head_dim=config.head_dim // 2)
    with pytest.raises(ModelLoadError, match=r"encoder.onnx: output cross_key_0 has 4 heads of 16, but config.json "
                                             r"says 8 of 8; it does not match"):
        check_graph(encoder, "encoder", heads, encoder_path)
    with pytest.raises(ModelLoadError, match=r"encoder.onnx: output encoder_out has d_model 64, but config.json says 128"):
        check_graph(encoder, "encoder", replace(config, d_model=128), encoder_path)
    vocab = replace(config, vocab_size=config.vocab_size + 8)
    check_graph(encoder, "encoder", vocab, encoder_path)            # the session does not show the table
    with pytest.raises(ModelLoadError, match=r"decoder.onnx: output logits has vocab_size 760, but config.json says 768"):
        check_graph(decoder, "decoder", vocab, decoder_path)


@pytest.mark.parametrize("io_binding", [False, True])
def test_an_onnx_runtime_error_in_a_run_is_one_line_naming_the_graph(fixture_bundle, tmp_path, capfd, io_binding):
    """A mismatch no session shows: config.json promising longer sentences (max_positions 512) than the
    graphs' positions (64). ONNX Runtime fails in the run, on both backends; the caller gets mtkit's error
    naming the graph, and mt-translate one line (not a traceback, nor ORT's own log line of the error)."""
    longer = Path(shutil.copytree(fixture_bundle, tmp_path / "longer"))
    config = BundleConfig.load(longer)
    config.max_positions = 512
    config.save(longer)
    checksums.record(longer)
    text = " ".join(["Guten Morgen und"] * 40)            # over 64 tokens, one sentence
    translator = Translator(longer, threads=ORT_THREADS, io_binding=io_binding)
    message = r"longer/encoder.int8.onnx: ONNX Runtime could not run it \(.*\); does the graph match config.json\?"
    with pytest.raises(ModelLoadError, match=message):
        translator.translate(text, "en")
    assert translator.translate("Guten Morgen", "en")[0].text   # a short sentence still translates
    capfd.readouterr()
    code, out, err = translate_cli(capfd, "-m", str(longer), text)
    assert (code, out) == (1, "") and re.fullmatch(f"mt-translate: error: .*{message}\n", err), err
