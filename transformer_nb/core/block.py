"""The Transformer block (000 §8.5; 001 §19.3–19.6; 004 §7–9, 11).

A block is shape-preserving, ``(B, T, d_model) -> (B, T, d_model)``, so blocks stack.

    Pre-LN  (norm_first=True):   x = x + Attn(LN(x));   x = x + FFN(LN(x))
    Post-LN (norm_first=False):  x = LN(x + Attn(x));   x = LN(x + FFN(x))

Every part is built from one ``TransformerConfig`` (``config.py``), which was validated when it was
made: ``EncoderLayer(cfg)``, ``DecoderLayer(cfg)``, ``FeedForward(cfg)``, ``make_norm(cfg)``. With
``EncoderLayer(cfg, residual=False)`` the ``x +`` is dropped (an experiment only: notebook 06 shows
what happens to the gradients). Norms are ``nn.LayerNorm`` or ``nn.RMSNorm``.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.core import checks
from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.multihead import MultiHeadAttention


@checks.boundary(checks.check_config)
def make_norm(cfg: TransformerConfig) -> nn.Module:
    """``cfg.norm``: ``"layer"`` -> ``nn.LayerNorm`` (2·d parameters), ``"rms"`` -> ``nn.RMSNorm`` (d parameters)."""
    norm = nn.LayerNorm if cfg.norm == "layer" else nn.RMSNorm
    return norm(cfg.d_model, eps=cfg.eps)


# --------------------------------------------------------------------------- feed-forward


class FeedForward(nn.Module):
    """Position-wise FFN ``(B, T, d) -> (B, T, d)``, ``d = cfg.d_model``, hidden width ``d_ff = cfg.ff``.

    ``relu``/``gelu``: ``W2·act(W1·x)`` with ``2·d·d_ff`` weights (``linear1``, ``linear2``).
    ``swiglu``: ``W2·(silu(W1·x) ⊙ W3·x)`` with ``3·d·d_ff`` weights; ``linear1`` is the
    silu branch, ``gate`` (W3) the linear branch it multiplies.
    """

    @checks.boundary(checks._feed_forward_init)
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        d, d_ff = cfg.d_model, cfg.ff
        self.activation, self.d_model = cfg.activation, d
        self.linear1 = nn.Linear(d, d_ff, bias=cfg.bias)
        self.gate = nn.Linear(d, d_ff, bias=cfg.bias) if cfg.activation == "swiglu" else None
        self.linear2 = nn.Linear(d_ff, d, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)

    @checks.boundary(checks._feed_forward)
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear1(x)
        if self.activation == "relu":
            h = F.relu(h)
        elif self.activation == "gelu":
            h = F.gelu(h)
        else:
            h = F.silu(h) * self.gate(x)
        return self.linear2(_dropped(self.dropout, h))


def _dropped(drop: nn.Dropout, h: torch.Tensor) -> torch.Tensor:
    """``drop(h)``, without the call where it would return ``h`` itself (evaluation, or p = 0)."""
    return drop(h) if drop.training and drop.p else h


# --------------------------------------------------------------------------- blocks


class EncoderLayer(nn.Module):
    """Self-attention + FFN, each with a residual connection and a norm (Pre- or Post-LN), from ``cfg``.

    ``forward(x, mask=None, is_causal=False, rope=None, cache=None)``: ``x: (B, T, d)`` -> ``(B, T, d)``.
    With ``is_causal=True`` this is the decoder-only (GPT) block. ``residual=False`` drops
    the two skip connections (for the depth experiment only).
    """

    @checks.boundary(checks._built_from_config)
    def __init__(self, cfg: TransformerConfig, residual: bool = True):
        super().__init__()
        self.norm_first, self.residual = cfg.norm_first, residual
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.bias, cfg.dropout)
        self.ff = FeedForward(cfg)
        self.norm1, self.norm2 = make_norm(cfg), make_norm(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    @checks.boundary(checks._encoder_layer)
    def forward(self, x, mask=None, is_causal: bool = False, rope=None, cache=None):
        if self.norm_first:
            h = self.self_attn(self.norm1(x), mask=mask, is_causal=is_causal, rope=rope, cache=cache)
            x = self._skip(x) + _dropped(self.drop, h)
            return self._skip(x) + _dropped(self.drop, self.ff(self.norm2(x)))
        h = self.self_attn(x, mask=mask, is_causal=is_causal, rope=rope, cache=cache)
        x = self.norm1(self._skip(x) + _dropped(self.drop, h))
        return self.norm2(self._skip(x) + _dropped(self.drop, self.ff(x)))

    def _skip(self, x):
        """The residual branch: ``x``, or nothing when ``residual=False``."""
        return x if self.residual else 0.0


# --------------------------------------------------------------------------- apart: the encoder-decoder's block


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention to ``memory``, FFN (each with residual + norm), from ``cfg``.

    ``forward(x, memory, self_mask=None, memory_mask=None)``: ``x: (B, T, d)``,
    ``memory: (B, S, d)``, ``memory_mask`` broadcastable to ``(B, h, T, S)`` -> ``(B, T, d)``.
    The causal mask is always applied to self-attention; ``self_mask`` adds padding.
    Both attentions have ``n_heads`` key/value heads (``cfg.n_kv_heads`` is the encoder's and GPT's).
    """

    @checks.boundary(checks._built_from_config)
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.norm_first = cfg.norm_first
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, bias=cfg.bias, dropout=cfg.dropout)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, bias=cfg.bias, dropout=cfg.dropout)
        self.ff = FeedForward(cfg)
        self.norm1, self.norm2, self.norm3 = make_norm(cfg), make_norm(cfg), make_norm(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    @checks.boundary(checks._decoder_layer)
    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self._sa(self.norm1(x), self_mask)
            x = x + self._ca(self.norm2(x), memory, memory_mask)
            return x + _dropped(self.drop, self.ff(self.norm3(x)))
        x = self.norm1(x + self._sa(x, self_mask))
        x = self.norm2(x + self._ca(x, memory, memory_mask))
        return self.norm3(x + _dropped(self.drop, self.ff(x)))

    def _sa(self, h, mask):
        return _dropped(self.drop, self.self_attn(h, mask=mask, is_causal=True))

    def _ca(self, h, memory, mask):
        return _dropped(self.drop, self.cross_attn(h, memory, memory, mask=mask))
