"""The PyTorch model: the cached incremental decode is the full forward pass, step by step."""

import pytest
import torch

from mtkit.train.model import ModelConfig, Transformer


def _model(**overrides) -> Transformer:
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=120, d_model=32, n_heads=4, encoder_layers=2, decoder_layers=2, ffn_dim=64,
                      dropout=0.0, max_positions=64, **overrides)
    return Transformer(cfg).eval()


@pytest.mark.parametrize("overrides", [
    {},
    {"pre_norm": False},
    {"positions": "learned"},
    {"tie_embeddings": False, "activation": "gelu"},
])
def test_cached_decode_matches_full_forward(overrides):
    model = _model(**overrides)
    src = torch.randint(4, 120, (3, 9))
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[1, 6:] = False           # padded sources in the batch
    mask[2, 3:] = False
    tgt = torch.randint(4, 120, (3, 7))
    with torch.no_grad():
        full = model(src, mask, tgt)
        cross = model.cross_kv(model.encode(src, mask))
        past, steps = None, []
        for t in range(tgt.size(1)):
            logits, past, _ = model.decode(tgt[:, t:t + 1], mask, cross, past)
            steps.append(logits)
        # Several new positions at once after a past (the decoder graph's general case).
        head, _, _ = model.decode(tgt[:, :3], mask, cross)
        _, past3, _ = model.decode(tgt[:, :3], mask, cross)
        tail, _, _ = model.decode(tgt[:, 3:], mask, cross, past3)
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)
    assert torch.allclose(torch.cat([head, tail], dim=1), full, atol=1e-5)


def test_cross_attention_weights_are_distributions_over_real_tokens():
    model = _model()
    src = torch.randint(4, 120, (2, 6))
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2], dtype=torch.bool)
    with torch.no_grad():
        _, _, weights = model.decode(torch.randint(4, 120, (2, 3)), mask, model.cross_kv(model.encode(src, mask)))
    assert weights.shape == (2, 3, 6)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3), atol=1e-6)
    assert weights[1, :, 4:].abs().max() == 0


def test_padding_does_not_change_a_sentence():
    """A sentence decodes the same alone and in a padded batch."""
    model = _model()
    src = torch.randint(4, 120, (1, 5))
    padded = torch.cat([src, torch.zeros(1, 3, dtype=torch.long)], dim=1)
    mask = torch.tensor([[1] * 5 + [0] * 3], dtype=torch.bool)
    tgt = torch.randint(4, 120, (1, 4))
    with torch.no_grad():
        alone = model(src, torch.ones(1, 5, dtype=torch.bool), tgt)
        batched = model(padded, mask, tgt)
    assert torch.allclose(alone, batched, atol=1e-5)


def test_parameter_count_of_the_edge_config_is_under_10m():
    cfg = ModelConfig(vocab_size=8000)
    assert Transformer(cfg).num_parameters() < 10_000_000
