"""Notebook 02's masking checkers, beyond each declared mistake (tests/test_exercise_checkers.py): other correct
answers pass; a float mask, a wrong shape, padding to max(lengths), a missing head axis and an unknown slip get
their own hints."""

import pytest
import torch

from transformer_nb.exercises import masks as M
from transformer_nb.exercises.solutions import masks as sol


def test_other_correct_answers_pass():
    assert M.causal_ex.check(lambda T: torch.tril(torch.ones(T, T)).bool(), quiet=True).passed
    assert M.causal_ex.check(lambda T: ~torch.ones(T, T, dtype=torch.bool).triu(1), quiet=True).passed
    assert M.padding_ex.check(lambda lengths, m: torch.stack([torch.arange(m) < n for n in lengths]), quiet=True).passed


def _leaks_one_future_key(keep):
    out = sol.my_decoder_mask(keep).clone()
    out[:, :, 0, 1] = keep[:, 1:2]
    return out


@pytest.mark.parametrize(
    "ex, wrong, words",
    [
        (M.causal_ex, lambda T: torch.tril(torch.ones(T, T)), ("bool tensor", "ADDED")),
        (M.causal_ex, lambda T: torch.triu(torch.ones(T, T)), ("bool tensor", "transpose")),  # float AND transposed
        (M.causal_ex, lambda T: torch.ones(T, T + 1, dtype=torch.bool).tril(), ("expected (4, 4)",)),
        (M.causal_ex, lambda T: [[True]], ("torch.Tensor",)),
        (M.padding_ex, lambda lengths, m: sol.my_padding_mask(lengths, m).T, ("swapped",)),
        (M.padding_ex, lambda lengths, m: sol.my_padding_mask(lengths, max(lengths)), ("max(lengths)",)),
        (
            M.combined_ex,
            lambda keep: keep[:, None, :] & torch.ones(keep.shape[1], keep.shape[1]).bool().tril(),
            ("head axis",),
        ),
        (M.combined_ex, _leaks_one_future_key, ("future keys",)),  # no declared mistake: a property's hint
    ],
)
def test_mistakes_beyond_the_declared_ones_get_their_hint(ex, wrong, words):
    r = ex.check(wrong, quiet=True)
    assert not r.passed and all(w in r.message for w in words), r.message
