"""Exercises for notebook 03 (multi-head attention, Exercise 8.6, MQA/GQA, KV cache).

- ``attention_distance_ex``: Exercise 8.6's measured statistic, the mean attention distance per head.
- ``expand_kv_ex``: GQA's sharing of key/value heads among groups of query heads.
- ``kv_cache_ex``: 002's KV-cache formula, in bytes.
"""

import torch

from transformer_nb.exercises import Exercise, Mistake, Property


def _gen(seed):
    return torch.Generator().manual_seed(seed)


# --------------------------------------------------------------------------- 1. attention distance


def _distance_ref(weights):
    t = weights.shape[-1]
    pos = torch.arange(t, dtype=weights.dtype)
    gap = (pos[:, None] - pos[None, :]).abs()
    return (weights * gap).sum(-1).mean(-1)


def _distance_signed(weights):
    t = weights.shape[-1]
    pos = torch.arange(t, dtype=weights.dtype)
    return (weights * (pos[:, None] - pos[None, :])).sum(-1).mean(-1)


def _distance_unweighted(weights):
    t = weights.shape[-1]
    pos = torch.arange(t, dtype=weights.dtype)
    gap = (pos[:, None] - pos[None, :]).abs()
    return gap.mean().expand(weights.shape[:-2]).clone()


def _distance_summed(weights):
    t = weights.shape[-1]
    pos = torch.arange(t, dtype=weights.dtype)
    gap = (pos[:, None] - pos[None, :]).abs()
    return (weights * gap).sum(-1).sum(-1)


def _distance_fraction(weights):
    return _distance_ref(weights) / (weights.shape[-1] - 1)


def _softmax_case(seed, h, t, sharp=2.0, causal=False):
    def make():
        s = sharp * torch.randn(h, t, t, generator=_gen(seed), dtype=torch.float64)
        if causal:
            s = s.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
        return (torch.softmax(s, -1),)

    return make


def _prev_token_case():
    w = torch.zeros(2, 6, 6, dtype=torch.float64)
    w[:, 0, 0] = 1.0
    w[:, torch.arange(1, 6), torch.arange(0, 5)] = 1.0
    w[1] = torch.eye(6, dtype=torch.float64)
    return (w,)


attention_distance_ex = Exercise(
    "mean attention distance per head",
    _distance_ref,
    cases=[
        ("4 heads, 7 tokens, random weights", _softmax_case(11, 4, 7)),
        ("head 0 = previous token, head 1 = itself", _prev_token_case),
        ("2 heads, 5 tokens, causal weights", _softmax_case(12, 2, 5, causal=True)),
    ],
    mistakes=[
        Mistake(
            _distance_signed,
            "attending 2 tokens back and 2 tokens ahead should both count as distance 2, but yours cancel "
            "out: use the absolute offset |i - j|.",
        ),
        Mistake(
            _distance_unweighted,
            "every head gets the same number: you averaged |i - j| over all pairs without weighting "
            "each pair by how much query i attends to key j.",
        ),
        Mistake(
            _distance_summed,
            "your numbers grow with the sequence length: you added up the per-query distances. "
            "Average them over the queries instead.",
        ),
        Mistake(
            _distance_fraction,
            "the distance should be in tokens, not a fraction of the longest possible offset: do not divide by T - 1.",
        ),
    ],
    properties=[
        Property(
            lambda args, out: bool((out >= -1e-9).all()),
            "a distance cannot be negative: use the absolute offset |i - j|.",
        ),
        Property(
            lambda args, out: bool((out <= args[0].shape[-1] - 1 + 1e-9).all()),
            "no token is more than T - 1 positions away, so no head's mean distance can exceed T - 1.",
        ),
    ],
    stub_hint="For each query i, weight each offset |i - j| by w[i, j] and add; then average over the queries.",
)


# --------------------------------------------------------------------------- 2. GQA: share K/V heads


def _expand_ref(kv, n_heads):
    group = n_heads // kv.shape[1]
    return kv.repeat_interleave(group, dim=1)


def _expand_tiled(kv, n_heads):
    return kv.repeat(1, n_heads // kv.shape[1], 1, 1)


def _expand_case(seed, b, n_kv, t, dh, h):
    return lambda: (torch.randn(b, n_kv, t, dh, generator=_gen(seed)), h)


expand_kv_ex = Exercise(
    "share key/value heads among query heads (GQA)",
    _expand_ref,
    cases=[
        ("2 K/V heads for 8 query heads", _expand_case(21, 2, 2, 5, 4, 8)),
        ("3 K/V heads for 6 query heads", _expand_case(22, 1, 3, 4, 2, 6)),
        ("1 K/V head for 4 query heads (MQA)", _expand_case(23, 1, 1, 3, 2, 4)),
    ],
    mistakes=[
        Mistake(
            _expand_tiled,
            "query head i got K/V head (i mod n_kv_heads): you tiled whole copies of the K/V heads one "
            "after another. In GQA a group is a run of neighbouring query heads, so query head i uses "
            "K/V head i // (n_heads // n_kv_heads): each K/V head must be repeated in place.",
        ),
    ],
    stub_hint="Each K/V head serves n_heads // n_kv_heads neighbouring query heads: repeat it that many times "
    "along the head axis, in place.",
)


# --------------------------------------------------------------------------- 3. KV-cache bytes


def _cache_ref(n_layers, n_heads, n_kv_heads, d_head, seq_len, batch, bytes_per_value):
    return 2 * n_layers * n_kv_heads * d_head * seq_len * batch * bytes_per_value


def _cache_no_two(n_layers, n_heads, n_kv_heads, d_head, seq_len, batch, bytes_per_value):
    return n_layers * n_kv_heads * d_head * seq_len * batch * bytes_per_value


def _cache_query_heads(n_layers, n_heads, n_kv_heads, d_head, seq_len, batch, bytes_per_value):
    return 2 * n_layers * n_heads * d_head * seq_len * batch * bytes_per_value


def _cache_no_batch(n_layers, n_heads, n_kv_heads, d_head, seq_len, batch, bytes_per_value):
    return 2 * n_layers * n_kv_heads * d_head * seq_len * bytes_per_value


def _cache_bits(n_layers, n_heads, n_kv_heads, d_head, seq_len, batch, bytes_per_value):
    return 8 * _cache_ref(n_layers, n_heads, n_kv_heads, d_head, seq_len, batch, bytes_per_value)


def _cache_values(n_layers, n_heads, n_kv_heads, d_head, seq_len, batch, bytes_per_value):
    return 2 * n_layers * n_kv_heads * d_head * seq_len * batch


def _exact(out, ref) -> bool:
    try:
        return float(out) == float(ref)
    except (TypeError, ValueError):
        return False


kv_cache_ex = Exercise(
    "KV-cache size in bytes",
    _cache_ref,
    cases=[
        ("tiny MHA: 2 layers, 4 heads, d_head 16, 10 tokens, batch 5, fp32", lambda: (2, 4, 4, 16, 10, 5, 4)),
        (
            "LLaMA-2-70B-like: 80 layers, 64 query / 8 K/V heads, d_head 128, 4096 tokens, batch 1, fp16",
            lambda: (80, 64, 8, 128, 4096, 1, 2),
        ),
        (
            "Mistral-7B-like: 32 layers, 32 query / 8 K/V heads, d_head 128, 8192 tokens, batch 3, fp16",
            lambda: (32, 32, 8, 128, 8192, 3, 2),
        ),
    ],
    mistakes=[
        Mistake(_cache_no_two, "exactly half the right size: the cache stores keys AND values."),
        Mistake(
            _cache_query_heads,
            "you counted the query heads. Queries are never cached; only the n_kv_heads key/value heads are, "
            "which is the whole point of GQA/MQA.",
        ),
        Mistake(_cache_no_batch, "every sequence in the batch has its own cache: multiply by the batch size."),
        Mistake(_cache_bits, "8 times too large: bytes_per_value is already in bytes, not bits."),
        Mistake(_cache_values, "that is the number of cached values; multiply by bytes_per_value to get bytes."),
    ],
    compare=_exact,
    stub_hint="Count the cached numbers (keys and values, per layer, per K/V head, per feature, per token, "
    "per sequence) and multiply by the bytes each takes.",
)

EXERCISES = {"attention_distance": attention_distance_ex, "expand_kv": expand_kv_ex, "kv_cache": kv_cache_ex}
