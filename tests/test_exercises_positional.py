"""Notebook 04's exercises (8.3 offset matrix, 8.7 offset similarity, ALiBi slopes): other correct answers pass
(nested lists, float32, the package's slopes); each declared mistake is tested in test_exercise_checkers."""

import math

import torch

from transformer_nb.core.positional import alibi_slopes
from transformer_nb.exercises.positional import alibi_slopes_ex, offset_matrix_ex


def test_offset_matrix_accepts_a_nested_list():
    def as_list(k, w):
        c, s = math.cos(k * w), math.sin(k * w)
        return [[c, s], [-s, c]]

    assert offset_matrix_ex.check(as_list, quiet=True).passed


def test_alibi_exercise_accepts_the_package():
    assert alibi_slopes_ex.check(alibi_slopes, quiet=True).passed


def test_offset_matrix_in_float32_passes():
    assert offset_matrix_ex.check(
        lambda k, w: torch.tensor([[math.cos(k * w), math.sin(k * w)], [-math.sin(k * w), math.cos(k * w)]]),
        quiet=True,
    ).passed
