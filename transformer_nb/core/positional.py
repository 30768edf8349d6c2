"""Position information (000 §8.4; 001 §19.2; 004 §4): sinusoidal, learned, ALiBi.

- ``sinusoidal_encoding`` / ``SinusoidalPositionalEncoding``: fixed sin/cos table added to the
  token embeddings ``x: (B, T, d_model)``; no parameters.
- ``LearnedPositionalEmbedding``: a trained ``(max_len, d_model)`` table; hard length limit.
- ``alibi_slopes`` / ``alibi_bias`` / ``ALiBi``: no position vectors at all; a fixed, per-head
  linear penalty ``-m_h·|i - j|`` added to the attention scores (Press et al., 2022).

Both additive modules refuse positions past their table's ``max_len``. Rotary embeddings live in ``rope.py``.
"""

import torch
import torch.nn as nn

from transformer_nb.core import checks


@checks.boundary(checks._sinusoid_frequencies)
def sinusoid_frequencies(d_model: int, base: float = 10000.0) -> torch.Tensor:
    """``(d_model/2,)`` float64 angular frequencies ``ω_i = base^(-2i/d_model)``, ``i = 0 .. d_model/2 - 1``."""
    return float(base) ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)


@checks.boundary(checks._sinusoidal_encoding)
def sinusoidal_encoding(n_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """``(n_positions, d_model)``: PE[p, 2i] = sin(p / base^(2i/d)), PE[p, 2i+1] = cos(p / base^(2i/d))."""
    inv_freq = sinusoid_frequencies(d_model, base)
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (T, 1)
    pe = torch.zeros(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * inv_freq)
    pe[:, 1::2] = torch.cos(pos * inv_freq)
    return pe.float()


class SinusoidalPositionalEncoding(nn.Module):
    """Adds fixed sinusoids: ``x: (B, T, d) -> x + PE[offset : offset+T]``. No parameters."""

    @checks.boundary(checks._sinusoidal_init)
    def __init__(self, d_model: int, max_len: int = 5000, base: float = 10000.0):
        super().__init__()
        self.max_len, self.d_model = int(max_len), int(d_model)
        self.register_buffer("pe", sinusoidal_encoding(self.max_len, self.d_model, base), persistent=False)

    @checks.boundary(checks._positions)
    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        return x + self.pe[offset : offset + x.shape[1]].to(x.dtype)


class LearnedPositionalEmbedding(nn.Module):
    """Adds a learned vector per position: ``max_len·d_model`` parameters, hard limit ``max_len``."""

    @checks.boundary(checks._learned_init)
    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.max_len, self.d_model = int(max_len), int(d_model)
        self.emb = nn.Embedding(self.max_len, self.d_model)
        nn.init.normal_(self.emb.weight, std=0.02)

    @checks.boundary(checks._positions)
    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        pos = torch.arange(offset, offset + x.shape[1], device=x.device)
        return x + self.emb(pos).to(x.dtype)  # the output keeps x's dtype


# --------------------------------------------------------------------------- ALiBi


@checks.boundary(checks._alibi_slopes)
def alibi_slopes(n_heads: int) -> torch.Tensor:
    """``(n_heads,)`` float64 head slopes of ALiBi (Press et al., 2022, and their released code).

    - ``n_heads`` a power of 2: the geometric sequence that starts at ``2^(-8/n)`` with ratio
      ``2^(-8/n)``, i.e. head ``h = 1..n`` gets ``m_h = 2^(-8h/n)`` (8 heads: 1/2, 1/4, ..., 1/256).
    - otherwise, with ``n0`` the largest power of 2 below ``n_heads``: the ``n0`` slopes above,
      followed by the first ``n_heads - n0`` of the odd-numbered slopes of ``2·n0`` heads
      (``2^(-8(2j-1)/(2·n0))``, ``j = 1, 2, ...``), which interleave between them.
    """
    n_heads = int(n_heads)
    n0 = 1 << (n_heads.bit_length() - 1)  # largest power of 2 <= n_heads
    head = torch.arange(1, n0 + 1, dtype=torch.float64)
    slopes = 2.0 ** (-8.0 * head / n0)
    if n0 == n_heads:
        return slopes
    extra = alibi_slopes(2 * n0)[0::2][: n_heads - n0]
    return torch.cat([slopes, extra])


@checks.boundary(checks._alibi_bias)
def alibi_bias(t_q: int, n_heads: int, t_k: int | None = None, dtype=torch.float32, device=None) -> torch.Tensor:
    """``(n_heads, T_q, T_k)`` additive float mask ``bias[h, i, j] = -m_h · |pos_i - j|``.

    Queries are the last ``T_q`` of the ``T_k`` positions (``pos_i = T_k - T_q + i``), as when
    decoding with a KV cache; ``T_k`` defaults to ``T_q``. Pass it as ``mask=`` to attention (it
    broadcasts over the batch); combine it with ``is_causal=True`` for a decoder, where only
    ``j <= pos_i`` survive and the bias is the paper's ``-m_h·(pos_i - j)``.
    """
    slopes = alibi_slopes(n_heads)  # (h,)
    t_k = t_q if t_k is None else t_k
    q_pos = torch.arange(t_k - t_q, t_k, dtype=torch.float64)
    k_pos = torch.arange(t_k, dtype=torch.float64)
    dist = (q_pos[:, None] - k_pos[None, :]).abs()  # (T_q, T_k)
    bias = -slopes[:, None, None] * dist + 0.0  # (h, T_q, T_k); +0.0 turns -0 into 0
    return bias.to(dtype=dtype, device=device)


class ALiBi(nn.Module):
    """The ALiBi bias as a module: fixed slopes in a buffer, **zero parameters**.

    ``forward(t_q, t_k=None) -> (n_heads, T_q, T_k)`` float bias, on the buffer's device.
    """

    @checks.boundary(checks._alibi_init)
    def __init__(self, n_heads: int):
        super().__init__()
        self.register_buffer("slopes", alibi_slopes(n_heads).float(), persistent=False)
        self.n_heads = int(n_heads)

    @checks.boundary(checks._alibi)
    def forward(self, t_q: int, t_k: int | None = None) -> torch.Tensor:
        return alibi_bias(t_q, self.n_heads, t_k, dtype=self.slopes.dtype, device=self.slopes.device)

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}"
