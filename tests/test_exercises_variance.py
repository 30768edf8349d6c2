"""Notebook 01's Exercise 8.1 checkers: E[q·k] and Var(q·k) in general (a spurious (m_q·m_k)² term has its own
hint), the sample variance of the scores (notebook 01's former demo: every pair), and the softmax Jacobian."""

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
    "ex, wrong, words",
    [  # notebook 01's former demo (every pair q_n · k_m) is a declared mistake
        (moments_ex, lambda d, vq, vk, mq=0.0, mk=0.0: d * vq * vk, "tuple of 2 results"),  # one number, not two
        (empirical_ex, lambda q, k, scaled: (q * k).sum(-1).var(), "divided first"),
        (jacobian_ex, lambda s: torch.diag_embed(s.softmax(-1)), "normalisation"),
        (jacobian_ex, lambda s: s.softmax(-1)[..., None] * s.softmax(-1)[..., None, :], "✗"),
    ],
)
def test_mistakes_beyond_the_declared_ones_get_a_hint(ex, wrong, words):
    r = ex.check(wrong, quiet=True)
    assert not r.passed and words in r.message, r.message


def test_saturated_rows_have_a_vanishing_jacobian():
    """The point of the exercise: at a saturated softmax almost no gradient reaches the scores."""
    s = torch.tensor([[30.0, 0.0, -5.0, 1.0]], dtype=torch.float64)
    j = jacobian_ex.reference(s)
    assert j.abs().max() < 1e-12 and jacobian_ex.reference(s / 30).abs().max() > 0.05
