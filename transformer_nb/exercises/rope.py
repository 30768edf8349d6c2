"""Exercises for notebook 05 (rotary position embeddings).

- :data:`rope_scores_ex` -- Exercise 8.10 (000): ``rope_scores(x, w_q, w_k, n_heads)``, the scaled
  attention scores of a multi-head attention whose queries and keys are rotated by RoPE.
- :data:`relative_score_ex` -- the identity behind RoPE, written out: ``relative_score(q, k, delta)``
  returns ``qᵀ R_delta k`` as a sum over the d/2 pairs, without building a matrix.

Each exercise knows the typical wrong answers and replies with a hint aimed at that mistake.
"""

__all__ = ["relative_score_ex", "rope_scores_ex"]  # what a notebook uses

import math

import torch

from transformer_nb.exercises import ROPE, Exercise, gen, randn
from transformer_nb.exercises.compare import allclose
from transformer_nb.exercises.solutions import rope as sol

NOTEBOOK = "05_rope"  # the notebook whose exercise cells use this module


def _thetas(d, base=10000.0, one_based=False, no_two=False):
    i = torch.arange(d // 2, dtype=torch.float64) + (1 if one_based else 0)
    return base ** (-(i if no_two else 2 * i) / d)


def _rotate(x, thetas, sign=1.0, half=False):
    """x: (..., T, d) rotated at positions 0..T-1 with the given pair frequencies."""
    t, d = x.shape[-2], x.shape[-1]
    ang = torch.arange(t, dtype=torch.float64)[:, None] * thetas * sign
    c, s = torch.cos(ang), torch.sin(ang)
    if half:
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return torch.cat((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2)


# ----------------------------------------------------------------------------------------
# Exercise 8.10: rope_scores(x, w_q, w_k, n_heads) -> (n_heads, T, T)
# ----------------------------------------------------------------------------------------


def _scores_with(freq_d=False, scale=True, rotate_k=True, sign=1.0, half=False, one_based=False, kq=False, whole=False):
    def fn(x, w_q, w_k, n_heads):
        t, d_model = x.shape
        d_k = d_model // n_heads
        q, k = x @ w_q, x @ w_k  # (T, d_model)
        if whole:  # RoPE over the whole d_model vector, before the split into heads
            th = _thetas(d_model, one_based=one_based)
            q, k = _rotate(q, th, sign, half), (_rotate(k, th, sign, half) if rotate_k else k)
        q = q.view(t, n_heads, d_k).transpose(0, 1)
        k = k.view(t, n_heads, d_k).transpose(0, 1)
        if not whole:
            th = _thetas(d_model if freq_d else d_k, one_based=one_based)[: d_k // 2]
            q = _rotate(q, th, sign, half)
            k = _rotate(k, th, sign, half) if rotate_k else k
        s = (k @ q.transpose(-2, -1)) if kq else (q @ k.transpose(-2, -1))
        return s / math.sqrt(d_k) if scale else s

    return fn


def _toeplitz_if_repeated(args, out):
    """For a sequence of ONE repeated token, S[h, m, n] must depend on n - m only."""
    x = args[0]
    if not torch.allclose(x, x[:1].expand_as(x)):
        return True
    s = out if isinstance(out, torch.Tensor) else torch.as_tensor(out)
    t = s.shape[-1]
    for off in range(-t + 1, t):
        diag = s.diagonal(off, dim1=-2, dim2=-1)
        if not torch.allclose(diag, diag[..., :1].expand_as(diag), atol=1e-6):
            return False
    return True


def _scores_case(seed, t, d, n_heads, scale, repeated=False):
    """``(x (T, d), w_q, w_k (d, d), n_heads)``; ``repeated``: one token T times, so only the positions differ."""
    g = gen(seed)
    x = torch.randn(1 if repeated else t, d, generator=g, dtype=torch.float64).expand(t, d).clone()
    return (x, *(torch.randn(d, d, generator=g, dtype=torch.float64) / scale for _ in range(2)), n_heads)


rope_scores_ex = Exercise(
    title="Exercise 8.10: RoPE scores of a two-head attention",
    name="rope_scores_ex",
    ready_made=ROPE,
    reference=sol.rope_scores,
    cases=[
        ("the exercise: T=32, d_model=16, 2 heads (d_k=8)", lambda: _scores_case(810, 32, 16, 2, 4)),
        ("one token repeated 32 times", lambda: _scores_case(811, 32, 16, 2, 4, repeated=True)),
        ("T=12, d_model=24, 3 heads (d_k=8)", lambda: _scores_case(812, 12, 24, 3, 5)),
    ],
    mistakes=[
        _scores_with(whole=True),
        _scores_with(freq_d=True),  # frequencies of d_model, not d_k
        _scores_with(scale=False),
        _scores_with(rotate_k=False),
        _scores_with(sign=-1.0),
        _scores_with(half=True),
        _scores_with(one_based=True),
        _scores_with(kq=True),  # k @ qᵀ
    ],
    properties=[
        lambda a, o: tuple(torch.as_tensor(o).shape) == (a[3], a[0].shape[0], a[0].shape[0]),
        _toeplitz_if_repeated,
    ],
    compare=lambda out, ref: allclose(out, ref, atol=1e-8, rtol=1e-6),
)

# ----------------------------------------------------------------------------------------
# relative_score(q, k, delta) -> qᵀ R_delta k, pair by pair
# ----------------------------------------------------------------------------------------


def _rs_with(*, sign=1.0, sine=True, one_based=False, no_two=False, half=False):
    def fn(q, k, delta):
        d = q.shape[-1]
        a = delta * _thetas(d, one_based=one_based, no_two=no_two)
        if half:  # the rotate_half pairing: dimension i with i + d/2
            q1, q2, k1, k2 = q[: d // 2], q[d // 2 :], k[: d // 2], k[d // 2 :]
        else:
            q1, q2, k1, k2 = q[0::2], q[1::2], k[0::2], k[1::2]
        s = (q2 * k1 - q1 * k2) * torch.sin(a) * sign if sine else 0.0
        return ((q1 * k1 + q2 * k2) * torch.cos(a) + s).sum()

    return fn


relative_score_ex = Exercise(
    title="Exercise 8.10 (the identity): qᵀ R_Δ k pair by pair",
    name="relative_score_ex",
    ready_made=ROPE,
    reference=sol.relative_score,
    cases=[
        ("d=8, Δ = 7 (Exercise 8.10's offset)", lambda: (*randn(820, (8,), (8,), dtype=torch.float64), 7)),
        ("d=16, Δ = -5", lambda: (*randn(821, (16,), (16,), dtype=torch.float64), -5)),
        ("d=64, Δ = 1000", lambda: (*randn(822, (64,), (64,), dtype=torch.float64), 1000)),
        ("d=8, Δ = 0", lambda: (*randn(823, (8,), (8,), dtype=torch.float64), 0)),
    ],
    mistakes=[
        _rs_with(sign=-1.0),
        _rs_with(half=True),
        _rs_with(sine=False),
        _rs_with(one_based=True),
        _rs_with(no_two=True),
    ],
    properties=[lambda a, o: a[2] != 0 or abs(float(o) - float(a[0] @ a[1])) < 1e-9],
    compare=lambda out, ref: allclose(out, ref, atol=1e-9, rtol=1e-9),
)
