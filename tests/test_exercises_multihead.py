"""Notebook 03's checkers: Exercise 8.6 in full (the student's multi-head attention, the mean attention
distance, local or global by the stated rule), GQA and the KV cache; typical wrong answers (notebook 03's
former demo cells among them) get their own hint, other correct answers pass."""

import math

import pytest
import torch

from transformer_nb.exercises.gqa import expand_kv_ex, kv_cache_ex
from transformer_nb.exercises.multihead import attention_distance_ex, head_kinds_ex, mha_ex
from transformer_nb.exercises.solutions import multihead as sol


def _gap(t):
    return (torch.arange(t)[:, None] - torch.arange(t)[None, :]).abs()


def signed_distance(w):  # notebook 03's demo cell
    t = w.shape[-1]
    offsets = torch.arange(t)[:, None] - torch.arange(t)[None, :]
    return (w * offsets).sum(-1).mean(-1)


def mha_view_without_transpose(x, w_q, w_k, w_v, w_o, n_heads):
    b, t, d = x.shape
    q, k, v = ((x @ w).view(b, n_heads, t, d // n_heads) for w in (w_q, w_k, w_v))
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // n_heads), -1)
    return (w @ v).transpose(1, 2).reshape(b, t, d) @ w_o, w


def mha_scaled_by_d_model(x, w_q, w_k, w_v, w_o, n_heads):
    b, t, d = x.shape
    q, k, v = ((x @ w).view(b, t, n_heads, d // n_heads).transpose(1, 2) for w in (w_q, w_k, w_v))
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), -1)
    return (w @ v).transpose(1, 2).reshape(b, t, d) @ w_o, w


def test_other_correct_answers_pass():

    def distance_loop(w):
        h, t, _ = w.shape
        return torch.stack([sum(w[k, i, j] * abs(i - j) for i in range(t) for j in range(t)) / t for k in range(h)])

    assert attention_distance_ex.check(distance_loop, quiet=True).passed
    assert expand_kv_ex.check(lambda kv, h: kv[:, torch.arange(h) // (h // kv.shape[1])], quiet=True).passed
    assert kv_cache_ex.check(lambda L, h, g, d, n, b, nb: 2 * L * g * d * n * b * nb, quiet=True).passed


@pytest.mark.parametrize(
    "ex, wrong, words",
    [
        (mha_ex, mha_view_without_transpose, "not the right slices"),
        (mha_ex, mha_scaled_by_d_model, "scaled with d_model"),
        (mha_ex, lambda *a: (lambda o, w: (o, w.mean(1)))(*sol.multi_head_attention(*a)), "(B, h, T, T)"),
        (attention_distance_ex, signed_distance, "yours cancel"),
        (attention_distance_ex, lambda w: _gap(w.shape[-1]).double().mean().expand(w.shape[0]).clone(), "not weighted"),
        (attention_distance_ex, lambda w: (w * _gap(w.shape[-1])).sum(-1).sum(-1), "average over the queries"),
        (attention_distance_ex, lambda w: -(w * _gap(w.shape[-1])).sum(-1).mean(-1), "cannot be negative"),
        (head_kinds_ex, lambda w: ["global"] * w.shape[0], "local"),
        (head_kinds_ex, lambda w: "local", "list of 5 results"),
        (expand_kv_ex, lambda kv, h: kv.repeat(1, h // kv.shape[1], 1, 1), "i mod n_kv_heads"),
        (expand_kv_ex, lambda kv, h: kv.repeat_interleave(h // kv.shape[1], dim=2), "time axis"),
        (kv_cache_ex, lambda L, h, g, d, n, b, nb: L * g * d * n * b * nb, "half the right size"),
        (kv_cache_ex, lambda L, h, g, d, n, b, nb: 2 * L * h * d * n * b * nb, "query heads"),  # notebook 03's demo
        (kv_cache_ex, lambda L, h, g, d, n, b, nb: 2 * L * g * d * n * nb, "batch"),
        (kv_cache_ex, lambda L, h, g, d, n, b, nb: 16 * L * g * d * n * b * nb, "not bits"),
        (kv_cache_ex, lambda L, h, g, d, n, b, nb: 2 * L * g * d * n * b, "number of cached values"),
    ],
)
def test_mistakes_get_specific_hints(ex, wrong, words):
    r = ex.check(wrong, quiet=True)
    assert not r.passed and words in r.message, r.message


def test_head_kinds_rule_on_known_heads():
    from transformer_nb.exercises.multihead import _known_heads

    assert head_kinds_ex.reference(*_known_heads()) == ["local", "local", "local", "global", "focused"]
