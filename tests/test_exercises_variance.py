"""Notebook 01's Exercise 8.1 checkers: E[q·k] and Var(q·k) in general (a spurious (m_q·m_k)² term has its own
hint), the sample variance of the scores (notebook 01's former demo: every pair), and the softmax Jacobian."""

import math

import pytest
import torch

from transformer_nb.exercises.variance import empirical_ex, jacobian_ex, moments_ex


def test_other_correct_answers_pass():
    assert moments_ex.check(
        lambda d, vq, vk, mq=0.0, mk=0.0: (d * mq * mk, d * ((vq + mq**2) * (vk + mk**2) - mq**2 * mk**2)), quiet=True
    ).passed
    assert empirical_ex.check(
        lambda q, k, scaled: float(((q * k).sum(-1) / (q.shape[-1] ** 0.5 if scaled else 1)).var(unbiased=False)),
        quiet=True,
    ).passed
    jac = torch.func.vmap(torch.func.jacrev(lambda row: row.softmax(-1)))
    assert jacobian_ex.check(jac, quiet=True).passed


@pytest.mark.parametrize(
    "wrong, words",
    [
        (lambda d, vq, vk, mq=0.0, mk=0.0: d * vq * vk, "tuple of 2 results"),  # one number instead of two
    ],
)
def test_moments_mistakes(wrong, words):
    r = moments_ex.check(wrong, quiet=True)
    assert not r.passed and words in r.message, r.message


def all_pairs(q, k, scaled):  # notebook 01's demo cell: every pair q_n · k_m
    s = q @ k.T
    return (s / math.sqrt(q.shape[-1]) if scaled else s).var()


def test_empirical_mistakes():
    assert "row n with row n" in empirical_ex.check(all_pairs, quiet=True).message
    r = empirical_ex.check(lambda q, k, scaled: (q * k).sum(-1).var(), quiet=True)
    assert not r.passed and "divided first" in r.message


def test_jacobian_mistakes():
    r = jacobian_ex.check(lambda s: torch.diag_embed(s.softmax(-1)), quiet=True)
    assert not r.passed and "normalisation" in r.message
    r = jacobian_ex.check(lambda s: s.softmax(-1)[..., None] * s.softmax(-1)[..., None, :], quiet=True)
    assert not r.passed


def test_saturated_rows_have_a_vanishing_jacobian():
    """The point of the exercise: at a saturated softmax almost no gradient reaches the scores."""
    s = torch.tensor([[30.0, 0.0, -5.0, 1.0]], dtype=torch.float64)
    j = jacobian_ex.reference(s)
    assert j.abs().max() < 1e-12 and jacobian_ex.reference(s / 30).abs().max() > 0.05
