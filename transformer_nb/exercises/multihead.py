"""Exercise 8.6 (000) for notebook 03: multi-head attention, and which of its heads are local.

- :data:`mha_ex` -- ``multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads) -> (out, weights)``: the
  student's own multi-head attention, checked exactly against the reference for the same weights.
- :data:`attention_distance_ex` -- ``mean_distance(w)``: each head's mean attention distance.
- :data:`head_kinds_ex` -- ``head_kinds(w)``: the exercise's description made checkable; each head is
  ``"local"``, ``"global"`` or ``"focused"`` by a stated rule.

GQA and the KV cache are in :mod:`transformer_nb.exercises.gqa`.
"""

__all__ = ["attention_distance_ex", "head_kinds_ex", "mha_ex"]  # what a notebook uses

import math

import torch

from transformer_nb.exercises import MULTIHEAD, Exercise, gen
from transformer_nb.exercises.solutions import multihead as sol

NOTEBOOK = "03_multihead_attention"  # the notebook whose exercise cells use this module


def _mha(split="view_transpose", scale="d_k", out_proj=True, merge="transpose", softmax_dim=-1):
    """Multi-head attention with one step done another way (the typical mistakes)."""

    def fn(x, w_q, w_k, w_v, w_o, n_heads):
        B, T, d = x.shape
        d_k = d // n_heads

        def heads(t):
            return t.view(B, n_heads, T, d_k) if split == "view" else t.view(B, T, n_heads, d_k).transpose(1, 2)

        q, k, v = heads(x @ w_q), heads(x @ w_k), heads(x @ w_v)
        size = {"d_k": d_k, "d_model": d, "none": 1}[scale]
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(size), dim=softmax_dim)
        o = w @ v
        o = o.reshape(B, T, d) if merge == "reshape" else o.transpose(1, 2).reshape(B, T, d)
        return (o @ w_o if out_proj else o), w

    return fn


def _mha_case(seed, b, t, d, h):
    g = gen(seed)
    x = torch.randn(b, t, d, generator=g, dtype=torch.float64)
    ws = [torch.randn(d, d, generator=g, dtype=torch.float64) / math.sqrt(d) for _ in range(4)]
    return (x, *ws, h)


mha_ex = Exercise(
    "Exercise 8.6: multi-head attention",
    sol.multi_head_attention,
    name="mha_ex",
    ready_made=MULTIHEAD,
    cases=[
        ("the exercise's size: d_model=32, h=4, 7 tokens", lambda: _mha_case(61, 1, 7, 32, 4)),
        ("batch 2, d_model=24, h=3, 5 tokens", lambda: _mha_case(62, 2, 5, 24, 3)),
        ("one head (h=1): plain attention", lambda: _mha_case(63, 1, 4, 8, 1)),
    ],
    mistakes=[
        _mha(split="view"),
        _mha(split="view", merge="reshape"),
        _mha(scale="d_model"),
        _mha(scale="none"),
        _mha(out_proj=False),
        _mha(merge="reshape"),
        _mha(softmax_dim=-2),
    ],
    properties=[lambda a, o: tuple(o[1].shape) == (a[0].shape[0], a[5], a[0].shape[1], a[0].shape[1])],
)


def _distance(signed=False, weighted=True, reduce="mean", fraction=False):
    def fn(w):
        t = w.shape[-1]
        pos = torch.arange(t, dtype=w.dtype)
        gap = pos[:, None] - pos[None, :]
        gap = gap if signed else gap.abs()
        if not weighted:
            return gap.mean().expand(w.shape[:-2]).clone()
        per_query = (w * gap).sum(-1)
        out = per_query.mean(-1) if reduce == "mean" else per_query.sum(-1)
        return out / (t - 1) if fraction else out

    return fn


def _softmax_case(seed, h, t, sharp=2.0, causal=False):
    s = sharp * torch.randn(h, t, t, generator=gen(seed), dtype=torch.float64)
    if causal:
        s = s.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    return (torch.softmax(s, -1),)


def _known_heads():
    """(5, 7, 7): previous token, itself, soft local e^-|i-j|, uniform, a random focused head."""
    t = 7
    pos = torch.arange(t, dtype=torch.float64)
    prev = torch.zeros(t, t, dtype=torch.float64)
    prev[torch.arange(t), (torch.arange(t) - 1).clamp_min(0)] = 1.0
    soft = torch.softmax(-(pos[:, None] - pos[None, :]).abs(), -1)
    uniform = torch.full((t, t), 1 / t, dtype=torch.float64)
    focused = torch.softmax(6 * torch.randn(t, t, generator=gen(14), dtype=torch.float64), -1)
    return (torch.stack([prev, torch.eye(t, dtype=torch.float64), soft, uniform, focused]),)


attention_distance_ex = Exercise(
    "Exercise 8.6: mean attention distance per head",
    sol.mean_distance,
    name="attention_distance_ex",
    cases=[
        ("4 heads, 7 tokens, random weights", lambda: _softmax_case(11, 4, 7)),
        ("five heads whose behaviour is known", _known_heads),
        ("2 heads, 5 tokens, causal weights", lambda: _softmax_case(12, 2, 5, causal=True)),
    ],
    mistakes=[_distance(signed=True), _distance(weighted=False), _distance(reduce="sum"), _distance(fraction=True)],
    properties=[
        lambda args, out: bool((out >= -1e-9).all()),
        lambda args, out: bool((out <= args[0].shape[-1] - 1 + 1e-9).all()),
    ],
)


def _kinds(log=math.log, entropy_reduce="mean", signed=False, half=True, nan_safe=True):
    def fn(w):
        t, distance = w.shape[-1], _distance(signed=signed)(w)
        logs = (w.clamp_min(1e-12) if nan_safe else w).log() / math.log(math.e if log is math.log else 2)
        per_query = -(w * logs).sum(-1)
        entropy = per_query.mean(-1) if entropy_reduce == "mean" else per_query.sum(-1)
        uniform = (t * t - 1) / (3 * t)
        limit = uniform / 2 if half else uniform
        return [
            "local" if d < limit else "global" if h > 0.9 * math.log(t) else "focused"
            for d, h in zip(distance.tolist(), entropy.tolist())
        ]

    return fn


def _mixed_heads():
    """Heads chosen so that each typical slip changes at least one label."""
    t = 7
    pos = torch.arange(t, dtype=torch.float64)
    gap = (pos[:, None] - pos[None, :]).abs()
    wide_local = torch.softmax(-0.5 * gap, -1)  # distance between u/2 and u: 'local' only with the wrong limit
    future = torch.zeros(t, t, dtype=torch.float64)
    future[torch.arange(t), (torch.arange(t) + 2).clamp_max(t - 1)] = 0.5
    future[torch.arange(t), (torch.arange(t) - 2).clamp_min(0)] += 0.5  # looks 2 back and 2 ahead: signed ~ 0
    mid = torch.softmax(1.1 * torch.randn(t, t, generator=gen(15), dtype=torch.float64), -1)  # entropy ~ 0.8 ln T
    all_but_one = torch.full((t, t), 1 / (t - 1), dtype=torch.float64)
    all_but_one[torch.arange(t), (torch.arange(t) + 3) % t] = 0.0  # exact zeros, entropy ln 6 > 0.9 ln 7
    return (torch.stack([wide_local, future, mid, torch.eye(t, dtype=torch.float64), all_but_one]),)


head_kinds_ex = Exercise(
    "Exercise 8.6: local or global? (the description, checked)",
    sol.head_kinds,
    name="head_kinds_ex",
    cases=[
        ("five heads whose behaviour is known", _known_heads),
        ("heads near the thresholds", _mixed_heads),
        ("4 heads, 7 tokens, random weights", lambda: _softmax_case(11, 4, 7)),
    ],
    mistakes=[
        _kinds(log=math.log2),
        _kinds(entropy_reduce="sum"),
        _kinds(signed=True),
        _kinds(half=False),
        _kinds(nan_safe=False),
    ],
    properties=[
        lambda a, o: isinstance(o, (list, tuple)) and len(o) == a[0].shape[0],
        lambda a, o: all(k in ("local", "global", "focused") for k in o),
    ],
)
