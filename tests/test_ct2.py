"""The CTranslate2 conversion computes our model: same log-probs, same greedy and beam outputs.

Checked on the committed `fixture_checkpoint` and on untrained models with the other architecture
options (post-norm + gelu, learned positions + untied embeddings). Untrained models give varied
outputs of varied lengths when the EOS row of the output projection is scaled up, so the
comparison is not between constant outputs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ctranslate2 = pytest.importorskip("ctranslate2")
torch = pytest.importorskip("torch")

import sentencepiece as spm  # noqa: E402

from mtkit.benchmarks.ct2_convert import convert, convert_checkpoint  # noqa: E402
from mtkit.benchmarks.ct2_run import source_tokens, translate_options  # noqa: E402
from conftest import ENGLISH, GERMAN  # noqa: E402
from mtkit.export.parity import TIE_TOLERANCE, differences  # noqa: E402
from mtkit.runtime.agreement import logprobs_along, sequence_score  # noqa: E402
from mtkit.runtime.batching import decode_all  # noqa: E402
from mtkit.runtime.search import DecodeOptions  # noqa: E402
from mtkit.runtime.vocab import BOS_ID, EOS_ID, source_ids  # noqa: E402
from mtkit.train.checkpoint import Checkpoint, load_checkpoint  # noqa: E402
from mtkit.train.model import ModelConfig, Transformer  # noqa: E402
from mtkit.train.reference import TorchBackend  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "tatoeba"
DEV = {lang: (FIXTURES / f"dev.{lang}").read_text(encoding="utf-8").splitlines() for lang in ("de", "en")}
KNOWN = {"de": GERMAN, "en": ENGLISH}      # what the fixture model reproduces: log-probs near 0, no ties


class Pair:
    """A PyTorch model and its CT2 conversion, with the shared tokenizer."""

    def __init__(self, ckpt: Checkpoint, out: Path, quantization: str | None = None, **convert_options):
        torch.set_num_threads(1)
        self.cfg = ckpt.model_config
        self.model = Transformer(self.cfg)
        self.model.load_state_dict(ckpt.model)
        self.model.eval()
        self.tags = ckpt.language_tags
        self.sp = spm.SentencePieceProcessor(model_proto=ckpt.tokenizer_model)
        self.dir = convert(ckpt, out, quantization, **convert_options)
        self.ct2 = ctranslate2.Translator(str(self.dir), intra_threads=1)

    def ours(self, texts, to, opts):
        sources = [source_ids(p, self.tags[to], self.cfg.max_positions) for p in self.sp.encode(texts)]
        return sources, [r.hypotheses[0] for r in decode_all(TorchBackend(self.model), sources, opts)]

    def theirs(self, texts, to, opts):
        """CT2, one sentence per call so that each gets our per-sentence length limit."""
        out = []
        for text in texts:
            tokens = source_tokens(self.sp, text, to, self.cfg.max_positions)
            result = self.ct2.translate_batch([tokens], **translate_options(opts, len(tokens)))[0]
            out.append([self.sp.piece_to_id(t) for t in result.hypotheses[0]])
        return out

    def torch_log_probs(self, src: str, tgt: str, to: str) -> np.ndarray:
        ids = torch.tensor([source_ids(self.sp.encode(src), self.tags[to], self.cfg.max_positions)])
        target = self.sp.encode(tgt)
        with torch.no_grad():
            lp = self.model(ids, ids != 0, torch.tensor([[BOS_ID, *target]])).log_softmax(-1)[0]
        return lp[torch.arange(len(target) + 1), torch.tensor(target + [EOS_ID])].numpy()

    def ct2_log_probs(self, src: str, tgt: str, to: str) -> np.ndarray:
        tokens = source_tokens(self.sp, src, to, self.cfg.max_positions)
        return np.array(self.ct2.score_batch([tokens], [self.sp.encode(tgt, out_type=str)])[0].log_probs)


def max_score_diff(pair: Pair, texts: dict, n: int = 20) -> float:
    worst = 0.0
    for src_lang, to in (("de", "en"), ("en", "de")):
        for src, tgt in zip(texts[src_lang][:n], texts[to][:n]):
            ours, theirs = pair.torch_log_probs(src, tgt, to), pair.ct2_log_probs(src, tgt, to)
            assert ours.shape == theirs.shape
            worst = max(worst, float(np.abs(ours - theirs).max()))
    return worst


def assert_same_outputs(pair: Pair, sources, ours, theirs, length_penalty: float | None = None) -> None:
    """CT2's outputs are ours, except where PyTorch itself had a near-tie (runtime/agreement.py)."""
    assert differences(TorchBackend(pair.model), sources, theirs, ours, length_penalty) == []


@pytest.fixture(scope="module")
def fixture_pair(fixture_checkpoint, tmp_path_factory) -> Pair:
    return Pair(load_checkpoint(fixture_checkpoint), tmp_path_factory.mktemp("ct2") / "fp32")


def untrained(base: Checkpoint, seed: int = 0, **options) -> Checkpoint:
    """An untrained model with the tokenizer of `base`: random but deterministic outputs."""
    torch.manual_seed(seed)
    cfg = ModelConfig(**{**base.model_config.to_dict(), **options})
    model = Transformer(cfg)
    with torch.no_grad():
        model.lm_head.weight[EOS_ID] *= 5      # EOS wins now and then: outputs of varied lengths
    return Checkpoint(model=model.state_dict(), model_config=cfg, tokenizer_model=base.tokenizer_model,
                      language_tags=base.language_tags)


def test_source_tokens_are_our_encoder_input(fixture_pair):
    sp = fixture_pair.sp
    for text in DEV["de"][:10] + [""]:
        tokens = source_tokens(sp, text, "en", fixture_pair.cfg.max_positions)
        assert [sp.piece_to_id(t) for t in tokens] == source_ids(sp.encode(text), fixture_pair.tags["en"],
                                                                 fixture_pair.cfg.max_positions)
    long = " ".join(DEV["de"])           # longer than the position table: cut the same way
    tokens = source_tokens(sp, long, "en", 16)
    assert [sp.piece_to_id(t) for t in tokens] == source_ids(sp.encode(long), fixture_pair.tags["en"], 16)
    assert len(tokens) == 16


def test_converted_model_has_our_config(fixture_pair):
    import json

    config = json.loads((fixture_pair.dir / "config.json").read_text())
    assert config["add_source_bos"] is False and config["add_source_eos"] is False
    assert config["decoder_start_token"] == "<s>" and config["eos_token"] == "</s>"
    assert config["layer_norm_epsilon"] == pytest.approx(1e-5)
    vocab = json.loads((fixture_pair.dir / "shared_vocabulary.json").read_text())
    assert vocab == [fixture_pair.sp.id_to_piece(i) for i in range(fixture_pair.sp.get_piece_size())]


def test_log_probs_match_torch(fixture_pair):
    assert max_score_diff(fixture_pair, KNOWN) < 2e-5     # float noise is ~2e-6; a wrong layer-norm eps gives 5e-6..6e-5


def test_ct2_own_positions_would_be_shifted(fixture_checkpoint, tmp_path):
    """Why we write our position table: CT2's built-in one starts at position 1, ours at 0."""
    pair = Pair(load_checkpoint(fixture_checkpoint), tmp_path / "own", use_our_positions=False)
    assert max_score_diff(pair, KNOWN, n=5) > 1e-3


@pytest.mark.parametrize("to,src_lang", [("en", "de"), ("de", "en")])
def test_greedy_outputs_identical(fixture_pair, to, src_lang):
    opts = DecodeOptions(beam_size=1, max_length=fixture_pair.cfg.max_positions, no_repeat_loop=0)
    sources, ours = fixture_pair.ours(KNOWN[src_lang] + DEV[src_lang], to, opts)
    theirs = fixture_pair.theirs(KNOWN[src_lang] + DEV[src_lang], to, opts)
    assert [h.tokens for h in ours[:len(KNOWN[src_lang])]] == theirs[:len(KNOWN[src_lang])]   # no ties there
    assert_same_outputs(fixture_pair, sources, [h.tokens for h in ours], theirs)


def test_beam4_finds_what_ct2_finds_or_better(fixture_pair):
    """On the sentences the fixture knows, our beam search returns the references. CTranslate2 stops
    a sentence once beam_size hypotheses have ended (fairseq's rule, which we dropped), so on a few it
    returns an early ending instead; wherever the two differ, ours must score higher under the model."""
    opts = DecodeOptions(beam_size=4, max_length=fixture_pair.cfg.max_positions, no_repeat_loop=0)
    backend = TorchBackend(fixture_pair.model)
    for src_lang, to in (("de", "en"), ("en", "de")):
        sources, ours = fixture_pair.ours(KNOWN[src_lang], to, opts)
        theirs = fixture_pair.theirs(KNOWN[src_lang], to, opts)
        assert [h.tokens for h in ours] == [fixture_pair.sp.encode(t) for t in KNOWN[to]]
        assert sum(h.tokens == t for h, t in zip(ours, theirs)) >= 0.8 * len(ours)
        for source, our, their in zip(sources, ours, theirs):
            if our.tokens != their:
                scores = [sequence_score(t, logprobs_along(backend, source)(t), opts.length_penalty)
                          for t in (our.tokens, their)]
                assert scores[0] > scores[1] + TIE_TOLERANCE


@pytest.mark.parametrize("options", [
    {"pre_norm": False, "activation": "gelu"},
    {"positions": "learned", "tie_embeddings": False},
], ids=["postnorm-gelu", "learned-untied"])
def test_other_architectures(fixture_checkpoint, tmp_path, options):
    pair = Pair(untrained(load_checkpoint(fixture_checkpoint), **options), tmp_path / "ct2")
    assert max_score_diff(pair, DEV, n=5) < 2e-5
    opts = DecodeOptions(beam_size=1, max_length=pair.cfg.max_positions, no_repeat_loop=0)
    sources, ours = pair.ours(DEV["de"][:20], "en", opts)
    assert_same_outputs(pair, sources, [h.tokens for h in ours], pair.theirs(DEV["de"][:20], "en", opts))


def test_int8_conversion(fixture_checkpoint, fixture_pair, tmp_path):
    int8 = convert_checkpoint(fixture_checkpoint, tmp_path / "int8", quantization="int8")
    assert (int8 / "model.bin").stat().st_size < 0.5 * (fixture_pair.dir / "model.bin").stat().st_size
    translator = ctranslate2.Translator(str(int8), compute_type="int8", intra_threads=1)
    tokens = source_tokens(fixture_pair.sp, GERMAN[0], "en", fixture_pair.cfg.max_positions)
    scores = np.array(translator.score_batch([tokens], [fixture_pair.sp.encode(ENGLISH[0], out_type=str)])[0].log_probs)
    reference = fixture_pair.torch_log_probs(GERMAN[0], ENGLISH[0], "en")
    assert np.abs(scores - reference).max() < 0.5       # quantized, so close but not equal


def test_tokenizer_that_does_not_fit_is_an_error(fixture_checkpoint, tmp_path):
    ckpt = load_checkpoint(fixture_checkpoint)
    ckpt.tokenizer_model = spm_model_with_fewer_pieces(ckpt)
    with pytest.raises(ValueError, match="pieces but the model has"):
        convert(ckpt, tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


def spm_model_with_fewer_pieces(ckpt: Checkpoint) -> bytes:
    """A tokenizer that does not fit the model (a real SentencePiece model, trained here)."""
    import io

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(DEV["de"] + DEV["en"]), model_writer=model,
                                   vocab_size=100, pad_id=0, unk_id=1, bos_id=2, eos_id=3, minloglevel=2)
    return model.getvalue()
