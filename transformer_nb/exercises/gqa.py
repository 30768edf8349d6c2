"""Exercises for notebook 03 beyond Exercise 8.6: grouped-query attention and the KV cache's size.

- :data:`expand_kv_ex` -- ``expand_kv(kv, n_heads)``: GQA's sharing of key/value heads among groups of query heads.
- :data:`kv_cache_ex` -- ``cache_bytes(...)``: 002's KV-cache formula, in bytes.
"""

__all__ = ["expand_kv_ex", "kv_cache_ex"]  # what a notebook uses

import torch

from transformer_nb.exercises import Exercise, gen
from transformer_nb.exercises.compare import equal
from transformer_nb.exercises.solutions import multihead as sol

NOTEBOOK = "03_multihead_attention"  # the notebook whose exercise cells use this module


def _expand_case(seed, b, n_kv, t, dh, h):
    return lambda: (torch.randn(b, n_kv, t, dh, generator=gen(seed)), h)


expand_kv_ex = Exercise(
    "share key/value heads among query heads (GQA)",
    sol.expand_kv,
    name="expand_kv_ex",
    cases=[
        ("2 K/V heads for 8 query heads", _expand_case(21, 2, 2, 5, 4, 8)),
        ("3 K/V heads for 6 query heads", _expand_case(22, 1, 3, 4, 2, 6)),
        ("1 K/V head for 4 query heads (MQA)", _expand_case(23, 1, 1, 3, 2, 4)),
    ],
    mistakes=[
        lambda kv, n_heads: kv.repeat(1, n_heads // kv.shape[1], 1, 1),
        lambda kv, n_heads: kv.repeat_interleave(n_heads // kv.shape[1], dim=2),
    ],
)


def _bytes(kv=True, two=2, batch=True, scale=1):
    def fn(n_layers, n_heads, n_kv_heads, d_head, seq_len, b, bytes_per_value):
        heads = n_kv_heads if kv else n_heads
        return two * n_layers * heads * d_head * seq_len * (b if batch else 1) * bytes_per_value * scale

    return fn


kv_cache_ex = Exercise(
    "KV-cache size in bytes",
    sol.cache_bytes,
    name="kv_cache_ex",
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
        _bytes(two=1),
        _bytes(kv=False),
        _bytes(batch=False),
        _bytes(scale=8),
        lambda *a: sol.cache_bytes(*a) // a[-1],
    ],
    compare=equal,
)
