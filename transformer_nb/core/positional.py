"""Position information (000 §8.4; 001 §19.2; 004 §4): sinusoidal, learned, ALiBi.

- ``sinusoidal_encoding`` / ``SinusoidalPositionalEncoding``: fixed sin/cos table added to the
  token embeddings ``x: (B, T, d_model)``; no parameters.
- ``LearnedPositionalEmbedding``: a trained ``(max_len, d_model)`` table; hard length limit.
- ``alibi_slopes`` / ``alibi_bias`` / ``ALiBi``: no position vectors at all; a fixed, per-head
  linear penalty ``-m_h·|i - j|`` added to the attention scores (Press et al., 2022).

Both additive modules refuse positions past their table's ``max_len``. Rotary embeddings live in ``rope.py``.
"""

import math
from numbers import Integral

import torch
import torch.nn as nn

from transformer_nb.core.utils import as_device, as_int, as_real, check_device, check_memory


def sinusoid_frequencies(d_model: int, base: float = 10000.0) -> torch.Tensor:
    """``(d_model/2,)`` float64 angular frequencies ``ω_i = base^(-2i/d_model)``, ``i = 0 .. d_model/2 - 1``."""
    if isinstance(d_model, bool) or not isinstance(d_model, Integral) or d_model <= 0 or d_model % 2:
        raise ValueError(
            f"sinusoidal encodings pair sin/cos dimensions, so d_model must be a positive even integer, got {d_model!r}"
        )
    base = as_real("base", base, positive=True)
    check_memory(f"{d_model // 2} frequencies", 4 * d_model)  # d/2 float64
    return base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)


def sinusoidal_encoding(n_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """``(n_positions, d_model)``: PE[p, 2i] = sin(p / base^(2i/d)), PE[p, 2i+1] = cos(p / base^(2i/d))."""
    n_positions = as_int("n_positions", n_positions)
    inv_freq = sinusoid_frequencies(d_model, base)  # checks d_model and base
    check_memory(f"a sinusoidal table of n_positions={n_positions} x d_model={d_model}", 12 * n_positions * d_model)
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (T, 1)
    pe = torch.zeros(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * inv_freq)
    pe[:, 1::2] = torch.cos(pos * inv_freq)
    return pe.float()


def _check_length(t: int, offset, max_len: int, kind: str) -> int:
    offset = as_int("offset", offset)  # the position of the first token
    if offset + t > max_len:
        raise ValueError(
            f"positions {offset}..{offset + t - 1} exceed the {kind} table of max_len={max_len}; "
            f"use sequences of at most {max_len} tokens or build the module with a larger max_len"
        )
    return offset


def _check_input(x: torch.Tensor, d_model: int, kind: str, table: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{kind} expects x as a torch.Tensor of shape (B, T, d_model), got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{kind} adds to embeddings: x must be a floating-point tensor, got dtype {x.dtype}")
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"{kind} expects x of shape (B, T, d_model={d_model}), got {tuple(x.shape)}")
    check_device("x", x, table.device)


class SinusoidalPositionalEncoding(nn.Module):
    """Adds fixed sinusoids: ``x: (B, T, d) -> x + PE[offset : offset+T]``. No parameters."""

    def __init__(self, d_model: int, max_len: int = 5000, base: float = 10000.0):
        super().__init__()
        max_len = as_int("max_len", max_len, minimum=1)
        sinusoid_frequencies(d_model, base)  # checks d_model and base
        check_memory(f"a sinusoidal table of max_len={max_len} x d_model={d_model}", 12 * max_len * d_model)
        pe = sinusoidal_encoding(max_len, d_model, base)
        self.max_len, self.d_model = int(max_len), int(d_model)
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_input(x, self.d_model, "SinusoidalPositionalEncoding", self.pe)
        offset = _check_length(x.shape[1], offset, self.max_len, "sinusoidal")
        return x + self.pe[offset : offset + x.shape[1]].to(x.dtype)


class LearnedPositionalEmbedding(nn.Module):
    """Adds a learned vector per position: ``max_len·d_model`` parameters, hard limit ``max_len``."""

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.max_len, self.d_model = as_int("max_len", max_len, minimum=1), as_int("d_model", d_model, minimum=1)
        check_memory(f"a learned table of max_len={max_len} x d_model={d_model}", 4 * self.max_len * self.d_model)
        self.emb = nn.Embedding(self.max_len, self.d_model)
        nn.init.normal_(self.emb.weight, std=0.02)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_input(x, self.d_model, "LearnedPositionalEmbedding", self.emb.weight)
        offset = _check_length(x.shape[1], offset, self.max_len, "learned position")
        pos = torch.arange(offset, offset + x.shape[1], device=x.device)
        return x + self.emb(pos).to(x.dtype)  # the output keeps x's dtype


def embedding_scale(d_model: int) -> float:
    """The ``sqrt(d_model)`` factor the original Transformer multiplies token embeddings by."""
    return math.sqrt(as_int("d_model", d_model, minimum=1))


# --------------------------------------------------------------------------- ALiBi


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """``(n_heads,)`` float64 head slopes of ALiBi (Press et al., 2022, and their released code).

    - ``n_heads`` a power of 2: the geometric sequence that starts at ``2^(-8/n)`` with ratio
      ``2^(-8/n)``, i.e. head ``h = 1..n`` gets ``m_h = 2^(-8h/n)`` (8 heads: 1/2, 1/4, ..., 1/256).
    - otherwise, with ``n0`` the largest power of 2 below ``n_heads``: the ``n0`` slopes above,
      followed by the first ``n_heads - n0`` of the odd-numbered slopes of ``2·n0`` heads
      (``2^(-8(2j-1)/(2·n0))``, ``j = 1, 2, ...``), which interleave between them.
    """
    n_heads = as_int("n_heads", n_heads, 1)
    check_memory(f"ALiBi slopes for n_heads={n_heads}", 8 * n_heads)
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
    slopes, t_q = alibi_slopes(n_heads), as_int("T_q", t_q)  # (h,): checks n_heads
    n_heads = len(slopes)
    t_k = t_q if t_k is None else as_int("T_k", t_k)
    device = as_device("device", device)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype (the bias is fractional), got {dtype!r}")
    if t_k < t_q:
        raise ValueError(f"alibi_bias needs 0 <= T_q <= T_k, got T_q={t_q}, T_k={t_k}")
    n_bytes = 16 * n_heads * t_q * t_k + 8 * (t_q + t_k)  # the float64 bias and the positions it is built from
    check_memory(f"an ALiBi bias of n_heads={n_heads} x T_q={t_q} x T_k={t_k}", n_bytes, device)
    q_pos = torch.arange(t_k - t_q, t_k, dtype=torch.float64)
    k_pos = torch.arange(t_k, dtype=torch.float64)
    dist = (q_pos[:, None] - k_pos[None, :]).abs()  # (T_q, T_k)
    bias = -slopes[:, None, None] * dist + 0.0  # (h, T_q, T_k); +0.0 turns -0 into 0
    return bias.to(dtype=dtype, device=device)


class ALiBi(nn.Module):
    """The ALiBi bias as a module: fixed slopes in a buffer, **zero parameters**.

    ``forward(t_q, t_k=None) -> (n_heads, T_q, T_k)`` float bias, on the buffer's device.
    """

    def __init__(self, n_heads: int):
        super().__init__()
        self.register_buffer("slopes", alibi_slopes(n_heads).float(), persistent=False)  # checks n_heads
        self.n_heads = int(n_heads)

    def forward(self, t_q: int, t_k: int | None = None) -> torch.Tensor:
        return alibi_bias(t_q, self.n_heads, t_k, dtype=self.slopes.dtype, device=self.slopes.device)

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}"
