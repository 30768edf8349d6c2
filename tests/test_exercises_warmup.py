"""Notebook 00's warm-up checkers accept the reference and name each typical mistake."""

import pytest
import torch

from transformer_nb.exercises import warmup as w


def test_references_pass():
    assert w.SOFTMAX.check(w.stable_softmax, quiet=True)
    assert w.SOFTMAX.check(lambda x: torch.softmax(x, dim=-1), quiet=True)
    assert w.SCORES.check(w.scores, quiet=True)


@pytest.mark.parametrize(
    "wrong, words",
    [
        (w._naive, "subtract each row's max"),
        (w._wrong_axis, "last axis"),
        (w._global_sum, "whole tensor"),
    ],
)
def test_softmax_mistakes_get_specific_hints(wrong, words):
    r = w.SOFTMAX.check(wrong, quiet=True)
    assert not r.passed and words in r.message


@pytest.mark.parametrize(
    "wrong, words",
    [
        (w._transposed, "K·Qᵀ"),
        (w._dims, "(B, d, d)"),
        (w._elementwise, "every query with every key"),
    ],
)
def test_scores_mistakes_get_specific_hints(wrong, words):
    r = w.SCORES.check(wrong, quiet=True)
    assert not r.passed and words in r.message


def test_hints_never_show_the_solution():
    for ex, wrongs in ((w.SOFTMAX, (w._naive, w._wrong_axis)), (w.SCORES, (w._transposed, w._dims))):
        for fn in wrongs:
            msg = ex.check(fn, quiet=True).message
            assert ex.solution_source() not in msg and "def " not in msg
