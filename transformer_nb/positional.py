"""Position information (000 §8.4; 001 §19.2; 004 §4): sinusoidal, learned, ALiBi.

- ``sinusoidal_encoding`` / ``SinusoidalPositionalEncoding``: fixed sin/cos table added to the
  token embeddings ``x: (B, T, d_model)``; no parameters.
- ``LearnedPositionalEmbedding``: a trained ``(max_len, d_model)`` table; hard length limit.
- ``alibi_slopes`` / ``alibi_bias`` / ``ALiBi``: no position vectors at all; a fixed, per-head
  linear penalty ``-m_h·|i - j|`` added to the attention scores (Press et al., 2022).

Both additive modules refuse a sequence longer than their table with a clear error (a learned
table simply has no row for position ``max_len``; we treat the sinusoidal buffer the same way,
since a silent wrap or a crash deep inside indexing teaches nothing). Rotary embeddings live in
``rope.py``.
"""

import math
from numbers import Integral

import torch
import torch.nn as nn


def sinusoid_frequencies(d_model: int, base: float = 10000.0) -> torch.Tensor:
    """``(d_model/2,)`` float64 angular frequencies ``ω_i = base^(-2i/d_model)``, ``i = 0 .. d_model/2 - 1``."""
    if isinstance(d_model, bool) or not isinstance(d_model, Integral) or d_model <= 0 or d_model % 2:
        raise ValueError(
            f"sinusoidal encodings pair sin/cos dimensions, so d_model must be a positive even integer, got {d_model!r}"
        )
    if not base > 0:
        raise ValueError(f"base must be positive, got {base!r}")
    return base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)


def sinusoidal_encoding(n_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """``(n_positions, d_model)``: PE[p, 2i] = sin(p / base^(2i/d)), PE[p, 2i+1] = cos(p / base^(2i/d))."""
    if d_model % 2:
        raise ValueError(f"sinusoidal encodings pair sin/cos dimensions, so d_model must be even, got {d_model}")
    if n_positions < 0:
        raise ValueError(f"n_positions must be >= 0, got {n_positions}")
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (T, 1)
    inv_freq = sinusoid_frequencies(d_model, base)  # (d/2,)
    pe = torch.zeros(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * inv_freq)
    pe[:, 1::2] = torch.cos(pos * inv_freq)
    return pe.float()


def _check_length(t: int, offset: int, max_len: int, kind: str) -> None:
    if offset < 0:
        raise ValueError(f"offset must be >= 0 (the position of the first token), got {offset}")
    if offset + t > max_len:
        raise ValueError(
            f"positions {offset}..{offset + t - 1} exceed the {kind} table of max_len={max_len}; "
            f"use sequences of at most {max_len} tokens or build the module with a larger max_len"
        )


def _check_input(x: torch.Tensor, d_model: int, kind: str) -> None:
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"{kind} expects x of shape (B, T, d_model={d_model}), got {tuple(x.shape)}")


class SinusoidalPositionalEncoding(nn.Module):
    """Adds fixed sinusoids: ``x: (B, T, d) -> x + PE[offset : offset+T]``. No parameters."""

    def __init__(self, d_model: int, max_len: int = 5000, base: float = 10000.0):
        super().__init__()
        self.max_len, self.d_model = max_len, d_model
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model, base), persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_input(x, self.d_model, "SinusoidalPositionalEncoding")
        _check_length(x.shape[1], offset, self.max_len, "sinusoidal")
        return x + self.pe[offset : offset + x.shape[1]].to(x.dtype)


class LearnedPositionalEmbedding(nn.Module):
    """Adds a learned vector per position: ``max_len·d_model`` parameters, hard limit ``max_len``."""

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.max_len, self.d_model = max_len, d_model
        self.emb = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.emb.weight, std=0.02)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_input(x, self.d_model, "LearnedPositionalEmbedding")
        _check_length(x.shape[1], offset, self.max_len, "learned position")
        pos = torch.arange(offset, offset + x.shape[1], device=x.device)
        return x + self.emb(pos)


def embedding_scale(d_model: int) -> float:
    """The ``sqrt(d_model)`` factor the original Transformer multiplies token embeddings by."""
    return math.sqrt(d_model)


# --------------------------------------------------------------------------- ALiBi


def _check_heads(n_heads) -> None:
    if isinstance(n_heads, bool) or not isinstance(n_heads, Integral):
        raise TypeError(f"n_heads must be an int, got {type(n_heads).__name__}")
    if n_heads <= 0:
        raise ValueError(f"ALiBi needs at least one head: n_heads must be >= 1, got {n_heads}")


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """``(n_heads,)`` float64 head slopes of ALiBi (Press et al., 2022, and their released code).

    - ``n_heads`` a power of 2: the geometric sequence that starts at ``2^(-8/n)`` with ratio
      ``2^(-8/n)``, i.e. head ``h = 1..n`` gets ``m_h = 2^(-8h/n)`` (8 heads: 1/2, 1/4, ..., 1/256).
    - otherwise, with ``n0`` the largest power of 2 below ``n_heads``: the ``n0`` slopes above,
      followed by the first ``n_heads - n0`` of the odd-numbered slopes of ``2·n0`` heads
      (``2^(-8(2j-1)/(2·n0))``, ``j = 1, 2, ...``), which interleave between them.
    """
    _check_heads(n_heads)
    n_heads = int(n_heads)
    n0 = 1 << (n_heads.bit_length() - 1)  # largest power of 2 <= n_heads
    head = torch.arange(1, n0 + 1, dtype=torch.float64)
    slopes = 2.0 ** (-8.0 * head / n0)
    if n0 == n_heads:
        return slopes
    extra = alibi_slopes(2 * n0)[0::2][: n_heads - n0]
    return torch.cat([slopes, extra])


def alibi_bias(t_q: int, n_heads: int, t_k: int | None = None, dtype=torch.float32, device=None) -> torch.Tensor:
    """``(n_heads, T_q, T_k)`` additive float mask ``bias[h, i, j] = -m_h · |pos_i - j|``.

    Queries are the last ``T_q`` of the ``T_k`` positions (``pos_i = T_k - T_q + i``), as when
    decoding with a KV cache; ``T_k`` defaults to ``T_q``. Pass it as ``mask=`` to attention (it
    broadcasts over the batch); combine it with ``is_causal=True`` for a decoder, where only
    ``j <= pos_i`` survive and the bias is the paper's ``-m_h·(pos_i - j)``.
    """
    _check_heads(n_heads)
    t_k = t_q if t_k is None else t_k
    if t_q < 0 or t_k < t_q:
        raise ValueError(f"alibi_bias needs 0 <= T_q <= T_k, got T_q={t_q}, T_k={t_k}")
    q_pos = torch.arange(t_k - t_q, t_k, dtype=torch.float64)
    k_pos = torch.arange(t_k, dtype=torch.float64)
    dist = (q_pos[:, None] - k_pos[None, :]).abs()  # (T_q, T_k)
    bias = -alibi_slopes(n_heads)[:, None, None] * dist + 0.0  # (h, T_q, T_k); +0.0 turns -0 into 0
    return bias.to(dtype=dtype, device=device)


class ALiBi(nn.Module):
    """The ALiBi bias as a module: fixed slopes in a buffer, **zero parameters**.

    ``forward(t_q, t_k=None) -> (n_heads, T_q, T_k)`` float bias, on the buffer's device.
    """

    def __init__(self, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.register_buffer("slopes", alibi_slopes(n_heads).float(), persistent=False)

    def forward(self, t_q: int, t_k: int | None = None) -> torch.Tensor:
        return alibi_bias(t_q, self.n_heads, t_k, dtype=self.slopes.dtype, device=self.slopes.device)

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}"
