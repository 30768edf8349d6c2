"""Notebook 04's exercises (8.3 offset matrix, 8.7 offset similarity, ALiBi slopes): each checker
accepts the reference, rejects every typical wrong answer with that mistake's own hint, says
"not attempted" for the stub, and never prints the solution's source."""

import math

import pytest
import torch

from transformer_nb.exercises.positional import EXERCISES, alibi_slopes_ex, offset_matrix_ex, offset_similarity_ex
from transformer_nb.positional import alibi_slopes


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
        assert m.hint in r.message, (m.fn.__name__, r.message)


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
