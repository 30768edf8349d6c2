"""The Transformer block (000 §8.5; 001 §19.3–19.6; 004 §7–9, 11).

A block is shape-preserving, ``(B, T, d_model) -> (B, T, d_model)``, so blocks stack.

    Pre-LN  (norm_first=True):   x = x + Attn(LN(x));   x = x + FFN(LN(x))
    Post-LN (norm_first=False):  x = LN(x + Attn(x));   x = LN(x + FFN(x))

Norms are ``nn.LayerNorm`` or ``nn.RMSNorm`` (built from scratch and checked equal in
notebook 06).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.multihead import MultiHeadAttention

ACTIVATIONS = ("relu", "gelu", "swiglu")


def make_norm(kind: str, d_model: int, eps: float = 1e-5) -> nn.Module:
    """``"layer"`` -> ``nn.LayerNorm`` (2·d parameters), ``"rms"`` -> ``nn.RMSNorm`` (d parameters)."""
    if kind == "layer":
        return nn.LayerNorm(d_model, eps=eps)
    if kind == "rms":
        return nn.RMSNorm(d_model, eps=eps)
    raise ValueError(f"norm must be 'layer' or 'rms', got {kind!r}")


class FeedForward(nn.Module):
    """Position-wise FFN ``(B, T, d) -> (B, T, d)``.

    ``relu``/``gelu``: ``W2·act(W1·x)`` with ``2·d·d_ff`` weights.
    ``swiglu``: ``W2·(silu(W1·x) ⊙ W3·x)`` with ``3·d·d_ff`` weights.
    """

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu", dropout: float = 0.0, bias: bool = True):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.gate = nn.Linear(d_model, d_ff, bias=bias) if activation == "swiglu" else None
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear1(x)
        if self.activation == "relu":
            h = F.relu(h)
        elif self.activation == "gelu":
            h = F.gelu(h)
        else:
            h = F.silu(h) * self.gate(x)
        return self.linear2(self.dropout(h))


class EncoderLayer(nn.Module):
    """Self-attention + FFN, each with a residual connection and a norm (Pre- or Post-LN).

    ``forward(x, mask=None, is_causal=False, rope=None)``: ``x: (B, T, d)`` -> ``(B, T, d)``.
    With ``is_causal=True`` this is the decoder-only (GPT) block.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0, norm_first: bool = True,
                 activation: str = "relu", norm: str = "layer", n_kv_heads: int | None = None,
                 bias: bool = True, eps: float = 1e-5):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, n_kv_heads, bias=bias, dropout=dropout)
        self.ff = FeedForward(d_model, d_ff, activation, dropout, bias=bias)
        self.norm1 = make_norm(norm, d_model, eps)
        self.norm2 = make_norm(norm, d_model, eps)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask=None, is_causal: bool = False, rope=None):
        attn = lambda h: self.drop(self.self_attn(h, mask=mask, is_causal=is_causal, rope=rope))
        if self.norm_first:
            x = x + attn(self.norm1(x))
            return x + self.drop(self.ff(self.norm2(x)))
        x = self.norm1(x + attn(x))
        return self.norm2(x + self.drop(self.ff(x)))


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention to ``memory``, FFN (each with residual + norm).

    ``forward(x, memory, self_mask=None, memory_mask=None)``: ``x: (B, T, d)``,
    ``memory: (B, S, d)``, ``memory_mask`` broadcastable to ``(B, h, T, S)`` -> ``(B, T, d)``.
    The causal mask is always applied to self-attention; ``self_mask`` adds padding.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0, norm_first: bool = True,
                 activation: str = "relu", norm: str = "layer", bias: bool = True, eps: float = 1e-5):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, bias=bias, dropout=dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, bias=bias, dropout=dropout)
        self.ff = FeedForward(d_model, d_ff, activation, dropout, bias=bias)
        self.norm1 = make_norm(norm, d_model, eps)
        self.norm2 = make_norm(norm, d_model, eps)
        self.norm3 = make_norm(norm, d_model, eps)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        sa = lambda h: self.drop(self.self_attn(h, mask=self_mask, is_causal=True))
        ca = lambda h: self.drop(self.cross_attn(h, memory, memory, mask=memory_mask))
        ff = lambda h: self.drop(self.ff(h))
        if self.norm_first:
            x = x + sa(self.norm1(x))
            x = x + ca(self.norm2(x))
            return x + ff(self.norm3(x))
        x = self.norm1(x + sa(x))
        x = self.norm2(x + ca(x))
        return self.norm3(x + ff(x))
