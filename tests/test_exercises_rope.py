"""Notebook 05's exercises (8.10 RoPE scores, the pair-by-pair identity): each checker accepts the
reference and an independent package-based solution, rejects every typical wrong answer with that
mistake's own hint, says "not attempted" for the stub, and never prints the solution's source."""

import math

import pytest
import torch

from transformer_nb.exercises.rope import EXERCISES, relative_score_ex, rope_scores_ex
from transformer_nb.rope import apply_rope, rope_matrix


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_reference_passes(name):
    assert EXERCISES[name].check(EXERCISES[name].reference, quiet=True).passed


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_each_typical_mistake_gets_its_own_hint(name):
    ex = EXERCISES[name]
    assert len(ex.mistakes) >= 2
    for m in ex.mistakes:
        r = ex.check(m.fn, quiet=True)
        assert not r.passed
        assert m.hint in r.message, r.message


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_stub_is_not_attempted_and_messages_hide_the_solution(name):
    ex = EXERCISES[name]

    def stub(*args):
        raise NotImplementedError

    assert "not attempted" in ex.check(stub, quiet=True).message
    src_lines = [
        l.strip()
        for l in ex.solution_source().splitlines()[1:]
        if len(l.strip()) > 25 and not l.strip().startswith(('"""', "#")) and '"""' not in l
    ]
    for m in ex.mistakes:
        msg = ex.check(m.fn, quiet=True).message
        for line in src_lines:
            assert line not in msg


def test_rope_scores_accepts_a_solution_built_on_the_package():
    def with_package(x, w_q, w_k, n_heads):
        t, d = x.shape
        dk = d // n_heads
        q = apply_rope((x @ w_q).view(t, n_heads, dk).transpose(0, 1))
        k = apply_rope((x @ w_k).view(t, n_heads, dk).transpose(0, 1))
        return q @ k.transpose(-2, -1) / math.sqrt(dk)

    assert rope_scores_ex.check(with_package, quiet=True).passed


def test_relative_score_accepts_the_matrix_form():
    assert relative_score_ex.check(lambda q, k, delta: q @ rope_matrix(delta, q.shape[-1]) @ k, quiet=True).passed


def test_rope_scores_names_the_wrong_shape():
    r = rope_scores_ex.check(lambda x, wq, wk, h: torch.zeros(x.shape[0], x.shape[0]), quiet=True)
    assert not r.passed and "shape" in r.message
