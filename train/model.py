"""An encoder-decoder Transformer for translation, readable in one sitting.

The decoder runs in one code path for training and for incremental decoding: `decode` takes the
past self-attention keys/values (possibly none) and returns the new ones. A full teacher-forced
forward pass is `decode` with no past, so the cached decode and the full pass share their math,
and the ONNX export traces exactly this module.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from mtkit.runtime.vocab import PAD_ID

KV = tuple[torch.Tensor, torch.Tensor]  # keys, values: [B, H, L, Dh]


@dataclass
class ModelConfig:
    vocab_size: int = 8000
    d_model: int = 256
    n_heads: int = 4
    encoder_layers: int = 3
    decoder_layers: int = 3
    ffn_dim: int = 1024
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0  # inside the FFN; off as in fairseq: on CPU the RNG is ~12% of a step
    activation: str = "relu"         # "relu" or "gelu"
    pre_norm: bool = True            # pre-norm (stable without warmup tricks) or the original post-norm
    positions: str = "sinusoidal"    # "sinusoidal" or "learned"
    max_positions: int = 256
    tie_embeddings: bool = True      # share source, target and output embeddings (joint vocabulary)

    def __post_init__(self):
        # ValueError, not assert: these values come from a user's config file or a checkpoint.
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.positions == "sinusoidal" and (self.d_model % 2 or self.d_model < 4):  # sinusoidal_table's halves
            raise ValueError(f"d_model must be even and at least 4 for sinusoidal positions, not {self.d_model}")
        for name in ("dropout", "attention_dropout", "activation_dropout"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} must be from 0 to below 1, not {getattr(self, name)}")
        if self.activation not in ("relu", "gelu"):
            raise ValueError(f"activation must be \"relu\" or \"gelu\", not {self.activation!r}")
        if self.positions not in ("sinusoidal", "learned"):
            raise ValueError(f"positions must be \"sinusoidal\" or \"learned\", not {self.positions!r}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)


def sinusoidal_table(length: int, dim: int) -> torch.Tensor:
    """[length, dim] table, sines in the first half and cosines in the second (tensor2tensor layout)."""
    half = dim // 2
    inv_timescales = torch.exp(torch.arange(half, dtype=torch.float64) * -(math.log(10000.0) / (half - 1)))
    angles = torch.arange(length, dtype=torch.float64)[:, None] * inv_timescales[None, :]
    return torch.cat([angles.sin(), angles.cos()], dim=1).float()


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """[B, L, D] -> [B, H, L, Dh]"""
    b, length, d = x.shape
    return x.view(b, length, n_heads, d // n_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[B, H, L, Dh] -> [B, L, D]"""
    b, h, length, dh = x.shape
    return x.transpose(1, 2).reshape(b, length, h * dh)


# Masked attention goes to cuDNN first on CUDA (torch 2.11, sm_90+), and cuDNN builds a plan for every new
# shape: length-bucketed batches and a growing KV cache make nearly every call new, and the first epoch on
# an H200 ran at a tenth of the later ones' speed. Flash and memory-efficient attention need no plans.
PLANLESS_CUDA_ATTENTION = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def attend(q, k, v, mask, dropout_p: float) -> torch.Tensor:
    if q.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
        # bf16 attention backward is ~3x slower than fp32 on CPU: keep attention in fp32, matmuls in bf16.
        with torch.autocast("cpu", enabled=False):
            return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask, dropout_p=dropout_p)
    with sdpa_kernel(PLANLESS_CUDA_ATTENTION) if q.is_cuda else nullcontext():
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)


class SelfAttention(nn.Module):
    """Multi-head self-attention with one fused q/k/v projection and an optional KV cache."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.dropout = cfg.attention_dropout
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, past: KV | None = None):
        q, k, v = (split_heads(t, self.n_heads) for t in self.qkv(x).chunk(3, dim=-1))
        if past is not None:
            k = torch.cat([past[0], k], dim=2)
            v = torch.cat([past[1], v], dim=2)
        y = attend(q, k, v, mask, self.dropout if self.training else 0.0)
        return self.out(merge_heads(y)), (k, v)


class CrossAttention(nn.Module):
    """Decoder-to-encoder attention. Keys and values come from `project_memory`, computed once per
    source; with `need_weights` the softmax is written out so the head-averaged weights can be returned.

    The queries may have more rows than the keys: N = g * B rows, the g consecutive rows of each of B
    sentences (its beams), attend to that sentence's keys as g times as many query positions, so
    beam search needs the keys and values once per sentence. In training N = B."""

    def __init__(self, cfg: ModelConfig, need_weights: bool):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.dropout = cfg.attention_dropout
        self.need_weights = need_weights
        self.q = nn.Linear(cfg.d_model, cfg.d_model)
        self.kv = nn.Linear(cfg.d_model, 2 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)

    def project_memory(self, memory: torch.Tensor) -> KV:
        k, v = self.kv(memory).chunk(2, dim=-1)
        return split_heads(k, self.n_heads), split_heads(v, self.n_heads)

    def forward(self, x: torch.Tensor, memory_kv: KV, mask: torch.Tensor):
        k, v = memory_kv                                            # [B,H,S,Dh]
        b, h, dh = k.size(0), self.n_heads, k.size(3)
        # [N,T,D] -> [B,g*T,H,Dh] -> [B,H,g*T,Dh]: a sentence's g rows in a row, as query positions.
        # -1, not N // B: the ONNX export must compute the group size, not freeze the example's.
        q = self.q(x).reshape(b, -1, h, dh).transpose(1, 2)
        if not self.need_weights:
            y, weights = attend(q, k, v, mask, self.dropout if self.training else 0.0), None
        else:
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
            weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = F.dropout(weights, self.dropout, self.training) @ v
            weights = weights.mean(dim=1).reshape(x.size(0), x.size(1), -1)         # [N,T,S]
        return self.out(y.transpose(1, 2).reshape_as(x)), weights


class FeedForward(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.ffn_dim)
        self.fc2 = nn.Linear(cfg.ffn_dim, cfg.d_model)
        self.activation = F.relu if cfg.activation == "relu" else F.gelu
        self.dropout = nn.Dropout(cfg.activation_dropout)

    def forward(self, x):
        return self.fc2(self.dropout(self.activation(self.fc1(x))))


class Residual(nn.Module):
    """x + dropout(sublayer(x)), with the layer norm before (pre-norm) or after (post-norm)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.pre_norm = cfg.pre_norm
        self.norm = nn.LayerNorm(cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x, sublayer):
        if self.pre_norm:
            y, extra = sublayer(self.norm(x))
            return x + self.dropout(y), extra
        y, extra = sublayer(x)
        return self.norm(x + self.dropout(y)), extra


class EncoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = SelfAttention(cfg)
        self.ffn = FeedForward(cfg)
        self.attn_block = Residual(cfg)
        self.ffn_block = Residual(cfg)

    def forward(self, x, mask):
        x, _ = self.attn_block(x, lambda h: self.self_attn(h, mask))
        x, _ = self.ffn_block(x, lambda h: (self.ffn(h), None))
        return x


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig, need_weights: bool):
        super().__init__()
        self.self_attn = SelfAttention(cfg)
        self.cross_attn = CrossAttention(cfg, need_weights)
        self.ffn = FeedForward(cfg)
        self.self_block = Residual(cfg)
        self.cross_block = Residual(cfg)
        self.ffn_block = Residual(cfg)

    def forward(self, x, causal_mask, memory_kv, memory_mask, past: KV | None):
        x, present = self.self_block(x, lambda h: self.self_attn(h, causal_mask, past))
        x, weights = self.cross_block(x, lambda h: self.cross_attn(h, memory_kv, memory_mask))
        x, _ = self.ffn_block(x, lambda h: (self.ffn(h), None))
        return x, present, weights


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=PAD_ID)
        nn.init.normal_(self.embed.weight, std=cfg.d_model ** -0.5)
        with torch.no_grad():
            self.embed.weight[PAD_ID].zero_()
        self.target_embed = self.embed if cfg.tie_embeddings else nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=PAD_ID)
        if cfg.positions == "learned":
            self.positions = nn.Embedding(cfg.max_positions, cfg.d_model)
        else:
            self.register_buffer("position_table", sinusoidal_table(cfg.max_positions, cfg.d_model), persistent=False)
        self.dropout = nn.Dropout(cfg.dropout)
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.encoder_layers))
        self.decoder_layers = nn.ModuleList(
            DecoderLayer(cfg, need_weights=(i == cfg.decoder_layers - 1)) for i in range(cfg.decoder_layers))
        self.encoder_norm = nn.LayerNorm(cfg.d_model) if cfg.pre_norm else nn.Identity()
        self.decoder_norm = nn.LayerNorm(cfg.d_model) if cfg.pre_norm else nn.Identity()
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.embed.weight

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def embed_tokens(self, embedding: nn.Embedding, ids: torch.Tensor, offset) -> torch.Tensor:
        positions = torch.arange(ids.size(1), device=ids.device) + offset
        pos = self.positions(positions) if self.cfg.positions == "learned" else self.position_table[positions]
        return self.dropout(embedding(ids) * math.sqrt(self.cfg.d_model) + pos)

    def encode(self, src_ids: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """src_ids [B,S], src_mask [B,S] (True = token) -> encoder states [B,S,D]."""
        x = self.embed_tokens(self.embed, src_ids, 0)
        attn_mask = src_mask[:, None, None, :]
        for layer in self.encoder_layers:
            x = layer(x, attn_mask)
        return self.encoder_norm(x)

    def cross_kv(self, memory: torch.Tensor) -> list[KV]:
        """The cross-attention keys and values of every decoder layer, computed once per source."""
        return [layer.cross_attn.project_memory(memory) for layer in self.decoder_layers]

    def decode(self, tgt_ids: torch.Tensor, src_mask: torch.Tensor, cross: list[KV], past: list[KV] | None = None):
        """Run the decoder over new positions `tgt_ids` [N,T] after `past` (per-layer [N,H,P,Dh]).
        `src_mask` [B,S] and `cross` are per sentence: N = B, or g rows per sentence (CrossAttention).

        Returns logits [N,T,V], the present keys/values (per layer, [N,H,P+T,Dh]) and the last
        layer's head-averaged cross-attention weights [N,T,S].
        """
        past_len = past[0][0].size(2) if past is not None else 0
        new_len = tgt_ids.size(1)
        x = self.embed_tokens(self.target_embed, tgt_ids, past_len)
        # New position i (absolute past_len + i) may see keys 0 .. past_len + i.
        key_pos = torch.arange(new_len + past_len, device=tgt_ids.device)
        query_pos = torch.arange(new_len, device=tgt_ids.device) + past_len
        causal_mask = key_pos[None, :] <= query_pos[:, None]
        memory_mask = src_mask[:, None, None, :]
        presents = []
        for i, layer in enumerate(self.decoder_layers):
            x, present, weights = layer(x, causal_mask, cross[i], memory_mask, past[i] if past is not None else None)
            presents.append(present)
        logits = self.lm_head(self.decoder_norm(x))
        return logits, presents, weights

    def forward(self, src_ids, src_mask, tgt_in):
        """Teacher-forced logits [B,T,V] for decoder inputs `tgt_in` [B,T]."""
        memory = self.encode(src_ids, src_mask)
        logits, _, _ = self.decode(tgt_in, src_mask, self.cross_kv(memory))
        return logits
