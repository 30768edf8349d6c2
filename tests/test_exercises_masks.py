"""Notebook 02's masking checkers, beyond each declared mistake (tests/test_exercise_checkers.py): other correct
answers pass; a float mask, a wrong shape, padding to max(lengths), a missing head axis and an unknown slip get
their own hints."""

import torch

from transformer_nb.exercises import masks as M
from transformer_nb.exercises.solutions import masks as sol


def test_other_correct_answers_pass():
    assert M.causal_ex.check(lambda T: torch.tril(torch.ones(T, T)).bool(), quiet=True).passed
    assert M.causal_ex.check(lambda T: ~torch.ones(T, T, dtype=torch.bool).triu(1), quiet=True).passed
    assert M.padding_ex.check(lambda lengths, m: torch.stack([torch.arange(m) < n for n in lengths]), quiet=True).passed


# --- causal mask -----------------------------------------------------------------------------


def test_causal_float_mask_is_refused_with_its_own_hint():
    r = M.causal_ex.check(lambda T: torch.tril(torch.ones(T, T)), quiet=True)
    assert not r.passed and "bool tensor" in r.message and "ADDED" in r.message
    r = M.causal_ex.check(lambda T: torch.triu(torch.ones(T, T)), quiet=True)  # float AND transposed
    assert "bool tensor" in r.message and "transpose" in r.message


def test_causal_wrong_shape_and_type():
    r = M.causal_ex.check(lambda T: torch.ones(T, T + 1, dtype=torch.bool).tril(), quiet=True)
    assert not r.passed and "expected (4, 4)" in r.message
    r = M.causal_ex.check(lambda T: [[True]], quiet=True)
    assert not r.passed and "torch.Tensor" in r.message


# --- padding from lengths ----------------------------------------------------------------------


def test_padding_shape_mistakes():
    r = M.padding_ex.check(lambda lengths, m: (torch.arange(m)[None] < torch.tensor(lengths)[:, None]).T, quiet=True)
    assert not r.passed and "swapped" in r.message
    r = M.padding_ex.check(
        lambda lengths, m: torch.arange(max(lengths))[None] < torch.tensor(lengths)[:, None], quiet=True
    )
    assert not r.passed and "max(lengths)" in r.message


# --- padding + causal ---------------------------------------------------------------------------


def _tril(T):
    return torch.ones(T, T, dtype=torch.bool).tril()


def test_combined_missing_head_axis():
    r = M.combined_ex.check(lambda keep: keep[:, None, :] & _tril(keep.shape[1]), quiet=True)
    assert not r.passed and "head axis" in r.message


def test_combined_unknown_mistake_falls_back_to_a_property_hint():
    def leaks_one_future_key(keep):
        out = sol.my_decoder_mask(keep).clone()
        out[:, :, 0, 1] = keep[:, 1:2]
        return out

    r = M.combined_ex.check(leaks_one_future_key, quiet=True)
    assert not r.passed and "future keys" in r.message
