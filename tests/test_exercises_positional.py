"""Notebook 04's exercises (8.3 offset matrix, 8.7 offset similarity, ALiBi slopes): other correct answers
pass (nested lists, float32, the package), and notebook 04's former demo cells (the rotation the wrong way
round, dividing by T, the slopes as the text states them) get their own hint."""

import math

import pytest
import torch

from transformer_nb.core.positional import alibi_slopes
from transformer_nb.exercises.positional import alibi_slopes_ex, offset_matrix_ex, offset_similarity_ex


def test_offset_matrix_accepts_a_nested_list_and_catches_a_reflection():
    def as_list(k, w):
        c, s = math.cos(k * w), math.sin(k * w)
        return [[c, s], [-s, c]]

    assert offset_matrix_ex.check(as_list, quiet=True).passed

    def reflection(k, w):
        c, s = math.cos(k * w), math.sin(k * w)
        return torch.tensor([[c, s], [s, -c]], dtype=torch.float64)

    assert "determinant -1" in offset_matrix_ex.check(reflection, quiet=True).message


def test_offset_similarity_rejects_similarity_to_row_zero_only():
    r = offset_similarity_ex.check(lambda pe: torch.nn.functional.cosine_similarity(pe[:1], pe, dim=-1), quiet=True)
    assert not r.passed and "ALL T - k pairs" in r.message and "random" in r.case


def test_alibi_exercise_accepts_the_package_and_flags_the_texts_order():
    assert alibi_slopes_ex.check(alibi_slopes, quiet=True).passed
    r = alibi_slopes_ex.check(lambda n: alibi_slopes(n).flip(0), quiet=True)
    assert "backwards" in r.message


def offset_matrix_backwards(k, omega):  # notebook 04's demo cell: maps PE(pos) to PE(pos - k)
    c, s = math.cos(k * omega), math.sin(k * omega)
    return torch.tensor([[c, -s], [s, c]], dtype=torch.float64)


def offset_average_divided_by_T(pe):  # notebook 04's demo cell
    unit = pe / pe.norm(dim=-1, keepdim=True)
    s = unit @ unit.T
    return torch.stack([s.diagonal(k).sum() / pe.shape[0] for k in range(pe.shape[0])])


def slopes_as_the_text_says(n_heads):  # notebook 04's demo cell: 000 §8.4.5's order
    return torch.tensor([2.0 ** (-8 * (n_heads - h + 1) / n_heads) for h in range(1, n_heads + 1)], dtype=torch.float64)


@pytest.mark.parametrize(
    "ex, wrong, words",
    [
        (offset_matrix_ex, offset_matrix_backwards, "BACK by k"),
        (offset_similarity_ex, offset_average_divided_by_T, "divide the sum by T - k"),
        (alibi_slopes_ex, slopes_as_the_text_says, "run backwards"),
    ],
)
def test_notebook_demo_mistakes_are_named(ex, wrong, words):
    r = ex.check(wrong, quiet=True)
    assert not r.passed and words in r.message, r.message


def test_offset_matrix_in_float32_passes():
    assert offset_matrix_ex.check(
        lambda k, w: torch.tensor([[math.cos(k * w), math.sin(k * w)], [-math.sin(k * w), math.cos(k * w)]]),
        quiet=True,
    ).passed
