"""Exercise 8.1 (000) for notebook 01: why the scores are divided by √d_k.

- :data:`moments_ex` -- ``dot_product_moments(d_k, var_q, var_k, mean_q=0, mean_k=0) -> (mean, variance)``
  of ``q·k`` for independent components with the given means and variances.
- :data:`empirical_ex` -- ``score_variance(q, k, scaled)``: the sample variance of the row-wise (scaled)
  dot products of sampled vectors.
- :data:`jacobian_ex` -- ``softmax_jacobian(s)``: why saturation hurts. At a saturated softmax (one weight
  near 1) the Jacobian is near 0, so almost no gradient flows back to the scores.
"""

__all__ = ["empirical_ex", "jacobian_ex", "moments_ex"]  # what a notebook uses

import math

import torch

from transformer_nb.exercises import Exercise, gen, randn
from transformer_nb.exercises.compare import allclose
from transformer_nb.exercises.solutions import attention as sol

NOTEBOOK = "01_scaled_attention"  # the notebook whose exercise cells use this module


def _moments(term_var, term_mean=lambda mq, mk: mq * mk, count=lambda d: d):
    def fn(d_k, var_q, var_k, mean_q=0.0, mean_k=0.0):
        return count(d_k) * term_mean(mean_q, mean_k), count(d_k) * term_var(var_q, var_k, mean_q, mean_k)

    return fn


def _true_term(vq, vk, mq, mk):
    return vq * vk + vq * mk**2 + vk * mq**2


moments_ex = Exercise(
    "Exercise 8.1: E[q·k] and Var(q·k)",
    sol.dot_product_moments,
    name="moments_ex",
    cases=[
        ("d_k=64, unit variances, zero means", lambda: (64, 1.0, 1.0, 0.0, 0.0)),
        ("d_k=16, var_q=2, var_k=3, zero means", lambda: (16, 2.0, 3.0, 0.0, 0.0)),
        ("d_k=10, var_q=4, var_k=0.25, mean_q=1.5, mean_k=-1", lambda: (10, 4.0, 0.25, 1.5, -1.0)),
        ("d_k=3, var_q=1, var_k=2, mean_q=2, mean_k=3", lambda: (3, 1.0, 2.0, 2.0, 3.0)),
    ],
    mistakes=[
        _moments(_true_term, count=lambda d: 1),
        _moments(lambda vq, vk, mq, mk: math.sqrt(_true_term(vq, vk, mq, mk) / 1)),
        _moments(_true_term, count=lambda d: d * d),
        _moments(lambda vq, vk, mq, mk: vq + vk),
        _moments(lambda vq, vk, mq, mk: _true_term(vq, vk, mq, mk) + mq**2 * mk**2),
        _moments(lambda vq, vk, mq, mk: vq * vk),
        _moments(lambda vq, vk, mq, mk: vq * vk + vq * mq**2 + vk * mk**2),
        _moments(_true_term, term_mean=lambda mq, mk: 0.0),
    ],
    properties=[lambda a, o: abs(float(o[0]) - a[0] * a[3] * a[4]) < 1e-9],
)


def _score_var(pairs=False, scale=math.sqrt, reduce="sum", std=False):
    def fn(q, k, scaled):
        s = q @ k.T if pairs else (q * k).sum(-1) if reduce == "sum" else (q * k).mean(-1)
        if scaled:
            s = s / scale(q.shape[-1])
        return s.std() if std else s.var()

    return fn


empirical_ex = Exercise(
    "Exercise 8.1 (numeric): variance of the (scaled) scores",
    sol.score_variance,
    name="empirical_ex",
    cases=[
        ("N=2000 samples, d_k=64, unscaled", lambda: (*randn(11, (2000, 64), (2000, 64)), False)),
        ("N=2000 samples, d_k=64, scaled", lambda: (*randn(12, (2000, 64), (2000, 64)), True)),
        ("N=2000 samples, d_k=256, scaled", lambda: (*randn(13, (2000, 256), (2000, 256)), True)),
    ],
    mistakes=[
        _score_var(pairs=True),
        _score_var(scale=lambda d: 1.0),
        _score_var(scale=lambda d: d),
        _score_var(std=True),
        _score_var(reduce="mean"),
        lambda q, k, scaled: (q * k).var(),
    ],
    # unbiased (N-1) or biased (N) variance are both fine: they differ by 1/N = 5e-4 relative
    compare=lambda out, ref: allclose(out, ref, atol=1e-6, rtol=2e-3),
)


def _jac(fn_p=lambda s: torch.softmax(s, -1), diag=True, outer=True, sign=1.0):
    def fn(s):
        p = fn_p(s)
        d = torch.diag_embed(p) if diag else 0.0
        o = p.unsqueeze(-1) * p.unsqueeze(-2) if outer else 0.0
        return sign * (d - o)

    return fn


def _jac_case(rows, scale, seed):
    return lambda: (torch.randn(rows, 5, generator=gen(seed), dtype=torch.float64) * scale,)


jacobian_ex = Exercise(
    "Exercise 8.1 (saturation): the softmax Jacobian",
    sol.softmax_jacobian,
    name="jacobian_ex",
    cases=[
        ("one row of 5 scores", _jac_case(1, 1.0, 21)),
        ("3 rows of 5 scores", _jac_case(3, 2.0, 22)),
        ("saturated rows (scores × 30)", _jac_case(2, 30.0, 23)),
    ],
    mistakes=[
        _jac(diag=False),
        _jac(outer=False),
        _jac(sign=-1.0),
        _jac(fn_p=lambda s: s),
        _jac(fn_p=lambda s: torch.softmax(s, 0)),
    ],
    properties=[
        lambda a, o: tuple(o.shape) == tuple(a[0].shape) + (a[0].shape[-1],),
        lambda a, o: torch.allclose(o, o.transpose(-2, -1)),
        lambda a, o: torch.allclose(o.sum(-1), torch.zeros_like(o.sum(-1)), atol=1e-9),
    ],
)
