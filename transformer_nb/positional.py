"""Position information (000 §8.4; 001 §19.2; 004 §4): sinusoidal and learned encodings.

Both modules add a position vector to token embeddings ``x: (B, T, d_model)`` and refuse a
sequence longer than their table with a clear error (a learned table simply has no row
for position ``T_max``; we treat the sinusoidal buffer the same way, since a silent wrap
or a crash deep inside indexing teaches nothing).
"""
import math

import torch
import torch.nn as nn


def sinusoidal_encoding(n_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """``(n_positions, d_model)``: PE[p, 2i] = sin(p / base^(2i/d)), PE[p, 2i+1] = cos(p / base^(2i/d))."""
    if d_model % 2:
        raise ValueError(f"sinusoidal encodings pair sin/cos dimensions, so d_model must be even, got {d_model}")
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]            # (T, 1)
    inv_freq = base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (d/2,)
    pe = torch.zeros(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * inv_freq)
    pe[:, 1::2] = torch.cos(pos * inv_freq)
    return pe.float()


def _check_length(t: int, offset: int, max_len: int, kind: str) -> None:
    if offset < 0 or offset + t > max_len:
        raise ValueError(f"positions {offset}..{offset + t - 1} exceed the {kind} table of max_len={max_len}; "
                         f"use sequences of at most {max_len} tokens or build the module with a larger max_len")


class SinusoidalPositionalEncoding(nn.Module):
    """Adds fixed sinusoids: ``x: (B, T, d) -> x + PE[offset : offset+T]``. No parameters."""

    def __init__(self, d_model: int, max_len: int = 5000, base: float = 10000.0):
        super().__init__()
        self.max_len = max_len
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model, base), persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_length(x.shape[1], offset, self.max_len, "sinusoidal")
        return x + self.pe[offset: offset + x.shape[1]].to(x.dtype)


class LearnedPositionalEmbedding(nn.Module):
    """Adds a learned vector per position: ``max_len·d_model`` parameters, hard limit ``max_len``."""

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.max_len = max_len
        self.emb = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.emb.weight, std=0.02)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_length(x.shape[1], offset, self.max_len, "learned position")
        pos = torch.arange(offset, offset + x.shape[1], device=x.device)
        return x + self.emb(pos)


def embedding_scale(d_model: int) -> float:
    """The ``sqrt(d_model)`` factor the original Transformer multiplies token embeddings by."""
    return math.sqrt(d_model)
