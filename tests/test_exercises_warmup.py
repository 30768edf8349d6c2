"""Notebook 00's warm-up checkers: other correct answers pass, typical wrong ones get their own hint,
including notebook 00's former demo cells (a naive softmax; the score matrix the wrong way round)."""

import pytest
import torch

from transformer_nb.exercises.warmup import scores_ex, softmax_ex


def test_other_correct_answers_pass():
    assert softmax_ex.check(lambda x: torch.softmax(x, dim=-1), quiet=True).passed
    assert softmax_ex.check(lambda x: (x - x.logsumexp(-1, keepdim=True)).exp(), quiet=True).passed
    assert scores_ex.check(lambda q, k: torch.einsum("bid,bjd->bij", q, k), quiet=True).passed


def naive_softmax(x):  # notebook 00's demo: forgets the max subtraction
    return x.exp() / x.exp().sum(dim=-1, keepdim=True)


@pytest.mark.parametrize(
    "ex, wrong, words",
    [
        (softmax_ex, naive_softmax, "overflows to inf"),
        (softmax_ex, lambda x: torch.softmax(x, dim=0), "columns sum to 1"),
        (softmax_ex, lambda x: (x - x.max()).exp() / (x - x.max()).exp().sum(), "whole tensor"),
        (softmax_ex, lambda x: (x - x.max()).exp() / (x - x.max()).exp().sum(-1, keepdim=True), "each row's own"),
        (scores_ex, lambda q, k: k @ q.transpose(-2, -1), "K·Qᵀ"),  # notebook 00's second demo
        (scores_ex, lambda q, k: q.transpose(-2, -1) @ k, "(B, d, d)"),
        (scores_ex, lambda q, k: (q * k).sum(-1), "every query with every key"),
    ],
)
def test_mistakes_get_specific_hints(ex, wrong, words):
    r = ex.check(wrong, quiet=True)
    assert not r.passed and words in r.message, r.message


def test_a_correct_float16_softmax_is_told_about_its_dtype_not_about_row_sums():
    r = softmax_ex.check(lambda x: torch.softmax(x.half(), dim=-1), quiet=True)
    assert not r.passed and "float16" in r.message and "sum to 1" not in r.message
