"""Notebook 03's checkers (Exercise 8.6, GQA, the KV cache): other correct answers pass, and answers no declared
mistake covers (weights averaged over the heads, a negative distance, one label for every head, a string instead
of a list) get a hint; each declared mistake is tested in test_exercise_checkers."""

import pytest
import torch

from transformer_nb.exercises.gqa import expand_kv_ex, kv_cache_ex
from transformer_nb.exercises.multihead import attention_distance_ex, head_kinds_ex, mha_ex
from transformer_nb.exercises.solutions import multihead as sol


def _gap(t):
    return (torch.arange(t)[:, None] - torch.arange(t)[None, :]).abs()


def test_other_correct_answers_pass():

    def distance_loop(w):
        h, t, _ = w.shape
        return torch.stack([sum(w[k, i, j] * abs(i - j) for i in range(t) for j in range(t)) / t for k in range(h)])

    assert attention_distance_ex.check(distance_loop, quiet=True).passed
    assert expand_kv_ex.check(lambda kv, h: kv[:, torch.arange(h) // (h // kv.shape[1])], quiet=True).passed
    assert kv_cache_ex.check(lambda L, h, g, d, n, b, nb: 2 * L * g * d * n * b * nb, quiet=True).passed


@pytest.mark.parametrize(
    "ex, wrong, words",
    [
        (mha_ex, lambda *a: (lambda o, w: (o, w.mean(1)))(*sol.multi_head_attention(*a)), "(B, h, T, T)"),
        (attention_distance_ex, lambda w: -(w * _gap(w.shape[-1])).sum(-1).mean(-1), "cannot be negative"),
        (head_kinds_ex, lambda w: ["global"] * w.shape[0], "local"),
        (head_kinds_ex, lambda w: "local", "list of 5 results"),
    ],
)
def test_mistakes_get_specific_hints(ex, wrong, words):
    r = ex.check(wrong, quiet=True)
    assert not r.passed and words in r.message, r.message


def test_head_kinds_rule_on_known_heads():
    from transformer_nb.exercises.multihead import _known_heads

    assert head_kinds_ex.reference(*_known_heads()) == ["local", "local", "local", "global", "focused"]
