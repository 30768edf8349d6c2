"""Exercises for notebook 10 beyond Exercise 8.9: sampling and the KV cache.

- :data:`top_k_ex` -- ``top_k_distribution(logits, k, temperature)``: the distribution that top-k sampling
  with a temperature draws from (sampling is then one ``torch.multinomial``).
- :data:`kv_step_ex` -- ``kv_cache_step(q, k_new, v_new, k_cache, v_cache)``: one decoding step of attention
  with a KV cache: append the new key and value, attend, return the grown cache.

Exercise 8.9 (evaluation, a training step, greedy generation, the verdict) is in
:mod:`transformer_nb.exercises.lm_train`.
"""

__all__ = ["kv_step_ex", "top_k_ex"]  # what a notebook uses

import math

import torch
import torch.nn.functional as F

from transformer_nb.exercises import Exercise, gen, randn
from transformer_nb.exercises.solutions import lm as sol

NOTEBOOK = "10_wikitext_lm"  # the notebook whose exercise cells use this module


def _top_k(largest=True, temperature="divide", renormalise=True, extra=0):
    def fn(logits, k, t):
        kth = torch.topk(logits, k + extra, dim=-1, largest=largest).values[..., -1:]
        outside = logits < kth if largest else logits > kth
        z = {"divide": logits / t, "multiply": logits * t, "ignore": logits}[temperature]
        if not renormalise:
            return torch.softmax(z, dim=-1).masked_fill(outside, 0.0)
        return torch.softmax(z.masked_fill(outside, float("-inf")), dim=-1)

    return fn


def _top_k_case(b, v, k, t, seed):
    return lambda: (torch.randn(b, v, generator=gen(seed)) * 2, k, t)


top_k_ex = Exercise(
    "Top-k sampling with a temperature",
    sol.top_k_distribution,
    name="top_k_ex",
    cases=[
        ("4 rows over 50 words, k=5, temperature 1", _top_k_case(4, 50, 5, 1.0, 0)),
        ("k=10, temperature 0.5 (sharper)", _top_k_case(3, 40, 10, 0.5, 1)),
        ("k=3, temperature 2.0 (flatter)", _top_k_case(2, 30, 3, 2.0, 2)),
        ("k=1: greedy as a distribution", _top_k_case(2, 20, 1, 0.7, 3)),
    ],
    mistakes=[
        _top_k(largest=False),
        _top_k(temperature="multiply"),
        _top_k(renormalise=False),
        _top_k(extra=1),
        _top_k(temperature="ignore"),
    ],
    properties=[
        lambda a, o: torch.allclose(o.sum(-1), torch.ones(o.shape[0], dtype=o.dtype), atol=1e-5),
        lambda a, o: bool(((o > 0).sum(-1) == a[1]).all()),
    ],
)


def _kv(attend="all", order="append", scale=True, out="attention"):
    def fn(q, k_new, v_new, k_cache, v_cache):
        pair = (k_cache, k_new) if order == "append" else (k_new, k_cache)
        k_all = torch.cat(pair, dim=2)
        v_all = torch.cat((v_cache, v_new) if order == "append" else (v_new, v_cache), dim=2)
        if out == "value":
            return v_new.clone(), k_all, v_all
        if attend == "causal":
            return F.scaled_dot_product_attention(q, k_all, v_all, is_causal=True), k_all, v_all
        keys, values = (k_cache, v_cache) if attend == "cache" else (k_all, v_all)
        scores = q @ keys.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if scale else 1.0)
        return torch.softmax(scores, dim=-1) @ values, k_all, v_all

    return fn


def _kv_case(b, h, t, d, seed):
    return randn(seed, *[(b, h, n, d) for n in (1, 1, 1, t, t)])


kv_step_ex = Exercise(
    "One decoding step with a KV cache",
    sol.kv_cache_step,
    name="kv_step_ex",
    cases=[
        ("B=2, h=4, 7 cached tokens, d_head=8", lambda: _kv_case(2, 4, 7, 8, 0)),
        ("B=1, h=2, 1 cached token, d_head=16", lambda: _kv_case(1, 2, 1, 16, 1)),
        ("B=3, h=1, 20 cached tokens, d_head=4", lambda: _kv_case(3, 1, 20, 4, 2)),
    ],
    mistakes=[_kv(attend="causal"), _kv(attend="cache"), _kv(order="prepend"), _kv(out="value"), _kv(scale=False)],
)
