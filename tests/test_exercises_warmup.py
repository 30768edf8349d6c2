"""Notebook 00's warm-up checkers: other correct answers pass, and a correct softmax in float16 is told about its
dtype (each declared mistake is tested in test_exercise_checkers)."""

import torch

from transformer_nb.exercises.warmup import scores_ex, softmax_ex


def test_other_correct_answers_pass():
    assert softmax_ex.check(lambda x: torch.softmax(x, dim=-1), quiet=True).passed
    assert softmax_ex.check(lambda x: (x - x.logsumexp(-1, keepdim=True)).exp(), quiet=True).passed
    assert scores_ex.check(lambda q, k: torch.einsum("bid,bjd->bij", q, k), quiet=True).passed


def test_a_correct_float16_softmax_is_told_about_its_dtype_not_about_row_sums():
    r = softmax_ex.check(lambda x: torch.softmax(x.half(), dim=-1), quiet=True)
    assert not r.passed and "float16" in r.message and "sum to 1" not in r.message
