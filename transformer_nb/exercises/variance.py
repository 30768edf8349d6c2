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

from transformer_nb.exercises import Exercise, Mistake, Property
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
        Mistake(
            _moments(_true_term, count=lambda d: 1),
            "that is the mean and variance of ONE term q_i k_i. q·k adds d_k independent terms.",
        ),
        Mistake(
            _moments(lambda vq, vk, mq, mk: math.sqrt(_true_term(vq, vk, mq, mk) / 1)),
            "the second number looks like a standard deviation; the question asks for the variance.",
        ),
        Mistake(
            _moments(_true_term, count=lambda d: d * d),
            "d_k appears squared: variances of independent terms add, one factor d_k; d_k² needs perfectly "
            "correlated terms.",
        ),
        Mistake(_moments(lambda vq, vk, mq, mk: vq + vk), "the variance of a product is not the sum of the variances."),
        Mistake(
            _moments(lambda vq, vk, mq, mk: _true_term(vq, vk, mq, mk) + mq**2 * mk**2),
            "your variance has an extra (E[q_i] E[k_i])² term: that is E[(q_i k_i)²], the second moment. The "
            "variance subtracts the squared mean of the term.",
        ),
        Mistake(
            _moments(lambda vq, vk, mq, mk: vq * vk),
            "right for zero means; with non-zero means one term's variance has two more parts. Expand "
            "E[q_i² k_i²] with E[x²] = Var(x) + E[x]².",
        ),
        Mistake(
            _moments(lambda vq, vk, mq, mk: vq * vk + vq * mq**2 + vk * mk**2),
            "the mean terms are paired the wrong way round: which variance multiplies which mean?",
        ),
        Mistake(
            _moments(_true_term, term_mean=lambda mq, mk: 0.0),
            "the mean of q·k is 0 only when the components have mean 0; here they need not.",
        ),
    ],
    properties=[
        Property(lambda a, o: abs(float(o[0]) - a[0] * a[3] * a[4]) < 1e-9, "the mean is wrong."),
    ],
    answers={},
)


def _score_var(pairs=False, scale=math.sqrt, reduce="sum", std=False):
    def fn(q, k, scaled):
        if pairs:
            s = q @ k.T
        else:
            s = (q * k).sum(-1) if reduce == "sum" else (q * k).mean(-1)
        if scaled:
            s = s / scale(q.shape[-1])
        return s.std() if std else s.var()

    return fn


def _emp_case(n, d, scaled, seed):
    def make():
        g = torch.Generator().manual_seed(seed)
        return torch.randn(n, d, generator=g), torch.randn(n, d, generator=g), scaled

    return make


empirical_ex = Exercise(
    "Exercise 8.1 (numeric): variance of the (scaled) scores",
    sol.score_variance,
    name="empirical_ex",
    cases=[
        ("N=2000 samples, d_k=64, unscaled", _emp_case(2000, 64, False, 11)),
        ("N=2000 samples, d_k=64, scaled", _emp_case(2000, 64, True, 12)),
        ("N=2000 samples, d_k=256, scaled", _emp_case(2000, 256, True, 13)),
    ],
    mistakes=[
        Mistake(_score_var(pairs=True), "you took every pair q_n · k_m (N² scores); pair row n with row n only."),
        Mistake(_score_var(scale=lambda d: 1.0), "when scaled is true, the dot products must be divided first."),
        Mistake(_score_var(scale=lambda d: d), "you divided by d_k; the scaled score divides by something smaller."),
        Mistake(_score_var(std=True), "that is the standard deviation; return the variance."),
        Mistake(_score_var(reduce="mean"), "a dot product is a SUM over the d_k components, not a mean."),
        Mistake(lambda q, k, scaled: (q * k).var(), "that is the variance of the single products q_i k_i."),
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
    return lambda: (torch.randn(rows, 5, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * scale,)


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
        Mistake(_jac(diag=False), "only the -p_i p_j part: the diagonal also has the p_i from ∂p_i/∂s_i."),
        Mistake(_jac(outer=False), "only diag(p): changing s_j also lowers every other p_i (the normalisation)."),
        Mistake(_jac(sign=-1.0), "the sign is flipped: raising s_i raises p_i, so the diagonal is positive."),
        Mistake(_jac(fn_p=lambda s: s), "you built the matrix from the scores; it is made of the probabilities."),
        Mistake(_jac(fn_p=lambda s: torch.softmax(s, 0)), "the softmax runs over the wrong axis."),
    ],
    properties=[
        Property(lambda a, o: tuple(o.shape) == tuple(a[0].shape) + (a[0].shape[-1],), "return shape (..., n, n)."),
        Property(lambda a, o: torch.allclose(o, o.transpose(-2, -1)), "the softmax Jacobian is symmetric."),
        Property(
            lambda a, o: torch.allclose(o.sum(-1), torch.zeros_like(o.sum(-1)), atol=1e-9),
            "each row must sum to 0: adding the same number to every score changes no probability.",
        ),
    ],
)
