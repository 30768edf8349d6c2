"""Notebook 05's exercises (8.10 RoPE scores, the pair-by-pair identity): a result of the wrong shape is named
(each declared mistake, the rotate-half pairing among them, is tested in test_exercise_checkers)."""

import torch

from transformer_nb.exercises.rope import rope_scores_ex


def test_rope_scores_names_the_wrong_shape():
    r = rope_scores_ex.check(lambda x, wq, wk, h: torch.zeros(x.shape[0], x.shape[0]), quiet=True)
    assert not r.passed and "shape" in r.message
