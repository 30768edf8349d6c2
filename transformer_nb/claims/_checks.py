"""Small computations that several texts' checks share. Everything here is cheap (milliseconds), seeded and
runs on the CPU; nothing here depends on the rest of the package, so a ledger check tests the claim, not our
own code."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
from torch.utils.flop_counter import FlopCounterMode


def close(a: float, b: float, tol: float) -> None:
    """Assert ``|a - b| <= tol`` with both values in the message."""
    assert abs(float(a) - float(b)) <= tol, f"{a} is not within {tol} of {b}"


def gen(seed: int = 0) -> torch.Generator:
    """A CPU generator with a fixed seed, so every check draws the same numbers everywhere."""
    return torch.Generator().manual_seed(seed)


def softmax_rows(scores: torch.Tensor) -> torch.Tensor:
    """Row-wise softmax in float64."""
    return torch.softmax(scores.double(), dim=-1)


def sinusoidal(n: int, d: int) -> torch.Tensor:
    """(n, d) float64: PE(pos, 2i) = sin(pos ω_i), PE(pos, 2i+1) = cos(pos ω_i), ω_i = 10000^(-2i/d)."""
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.empty(n, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * w), torch.cos(pos * w)
    return pe


def rope(x: torch.Tensor, m: float) -> torch.Tensor:
    """Rotate pairs (x_2i, x_2i+1) of the last axis by m θ_i, θ_i = 10000^(-2i/d) (RoFormer, interleaved)."""
    d = x.shape[-1]
    a = m * 10000.0 ** (-torch.arange(0, d, 2, dtype=x.dtype) / d)
    out = torch.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * torch.cos(a) - x[..., 1::2] * torch.sin(a)
    out[..., 1::2] = x[..., 0::2] * torch.sin(a) + x[..., 1::2] * torch.cos(a)
    return out


def alibi_slopes(n: int) -> list[float]:
    """ALiBi's slopes (Press et al. 2022, §3 and the released code): 2^(-8h/n0) for the n0 = largest power of
    two <= n, then every other slope of 2·n0 heads until there are n."""
    n0 = 2 ** (n.bit_length() - 1)
    base = [2.0 ** (-8 * h / n0) for h in range(1, n0 + 1)]
    extra = [2.0 ** (-8 * h / (2 * n0)) for h in range(1, 2 * n0 + 1, 2)]
    return base + extra[: n - n0]


def kv_cache_bytes(layers: int, kv_heads: int, d_head: int, tokens: int, bytes_per_value: int = 2) -> int:
    """Keys and values of one sequence: 2 · L · g · d_k · n numbers."""
    return 2 * layers * kv_heads * d_head * tokens * bytes_per_value


def layer_flops(t: int, d: int, h: int, d_ff: int) -> tuple[int, int]:
    """FLOPs of one self-attention + FFN layer on ``t`` tokens, counted by PyTorch's FLOP counter on the meta
    device (nothing is computed). Returns (the linear-in-T part: the Q, K, V, O projections and the FFN,
    the quadratic part: Q Kᵀ and A V for all heads)."""
    with torch.device("meta"):
        proj = [nn.Linear(d, d, bias=False) for _ in range(4)]
        up, down = nn.Linear(d, d_ff, bias=False), nn.Linear(d_ff, d, bias=False)
        x = torch.empty(t, d)
    with FlopCounterMode(display=False) as counter:
        q, k, v = (p(x).view(t, h, d // h).transpose(0, 1) for p in proj[:3])
        a = torch.softmax(q @ k.transpose(1, 2), dim=-1) @ v
        y = proj[3](a.transpose(0, 1).reshape(t, d))
        down(torch.relu(up(y)))
    counts = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
    return counts.get("aten.mm", 0), counts.get("aten.bmm", 0)


def tiny_mha(d: int = 16, h: int = 4, seed: int = 0) -> nn.MultiheadAttention:
    """A seeded ``nn.MultiheadAttention`` without biases, in eval mode."""
    torch.manual_seed(seed)
    return nn.MultiheadAttention(d, h, bias=False, batch_first=True).eval()


def gpt_params(vocab: int, ctx: int, d: int, layers: int) -> int:
    """A GPT-2/3-style decoder with tied output: token + position embeddings, per block 12d² + 13d
    (attention 4d² + 4d, FFN 8d² + 5d, two LayerNorms 4d), a final LayerNorm."""
    return vocab * d + ctx * d + layers * (12 * d * d + 13 * d) + 2 * d


def original_params(d: int, d_ff: int, layers: int = 6, vocab: int = 37000) -> tuple[int, int, int]:
    """The original encoder-decoder with biases, Post-LN, one shared vocabulary (37K BPE) tied three ways:
    (encoder, decoder, embeddings)."""
    attn, ffn, norm = 4 * d * d + 4 * d, 2 * d * d_ff + d_ff + d, 2 * d
    return layers * (attn + ffn + 2 * norm), layers * (2 * attn + ffn + 3 * norm), vocab * d


def gaussian_outside(k: float) -> float:
    """P(|Z| > k) for a standard normal Z."""
    return math.erfc(k / math.sqrt(2))


def generation_flops(n: int, d: int = 16, h: int = 2, d_ff: int = 64) -> tuple[int, int]:
    """FLOPs of one layer generating ``n`` tokens greedily (counted per token by :func:`layer_flops`):
    (without a cache: step t re-runs the whole t-token prefix, with a cache: step t runs one token against t keys)."""
    a, b = layer_flops(1, d, h, d_ff)  # per token: the linear part a, and the quadratic coefficient b
    assert layer_flops(8, d, h, d_ff) == (8 * a, 64 * b)  # a·t + b·t² for a t-token pass
    s1, s2 = n * (n + 1) // 2, n * (n + 1) * (2 * n + 1) // 6  # Σ t and Σ t² over t = 1..n
    return a * s1 + b * s2, a * n + b * s1


def gqa_score_flops(t: int, h: int, g: int, d_head: int = 16) -> int:
    """FLOPs of Q Kᵀ for ``h`` query heads sharing ``g`` key heads (grouped-query attention) on ``t`` tokens,
    counted by PyTorch's FLOP counter on the meta device."""
    with torch.device("meta"):
        q, k = torch.empty(1, h, t, d_head), torch.empty(1, g, t, d_head)
    with FlopCounterMode(display=False) as counter:
        q @ k.repeat_interleave(h // g, dim=1).transpose(-2, -1)  # each group's keys serve h/g query heads
    return counter.get_total_flops()
