"""The masking exercises accept their reference, reject typical wrong answers with the specific hint,
say 'not attempted' for a stub, and never print the reference solution."""

import pytest
import torch

from transformer_nb.exercises import masks as M

EXERCISES = [M.causal_ex, M.padding_ex, M.combined_ex]


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.title)
def test_accepts_reference(ex):
    assert ex.check(ex.reference, quiet=True).passed


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.title)
def test_every_listed_mistake_is_named(ex):
    for mistake in ex.mistakes:
        r = ex.check(mistake.fn, quiet=True)
        assert not r.passed and mistake.hint in r.message, (mistake.fn.__name__, r.message)


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.title)
def test_stub_is_not_attempted_and_never_raises(ex):
    def stub(*args):
        raise NotImplementedError

    r = ex.check(stub, quiet=True)
    assert not r.passed and "not attempted" in r.message
    r = ex.check(lambda *args: 1 / 0, quiet=True)
    assert not r.passed and "ZeroDivisionError" in r.message


# --- causal mask -----------------------------------------------------------------------------


def test_causal_off_by_one_diagonal():
    r = M.causal_ex.check(lambda T: torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1), quiet=True)
    assert not r.passed and "diagonal is blocked" in r.message


def test_causal_transposed_upper_triangle():
    r = M.causal_ex.check(lambda T: torch.ones(T, T, dtype=torch.bool).triu(), quiet=True)
    assert not r.passed and "transpose" in r.message


def test_causal_wrong_polarity():
    r = M.causal_ex.check(lambda T: torch.ones(T, T, dtype=torch.bool).triu(1), quiet=True)
    assert not r.passed and "BLOCKED" in r.message and "Invert" in r.message


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


def test_padding_off_by_one():
    r = M.padding_ex.check(lambda lengths, m: torch.arange(m)[None] <= torch.tensor(lengths)[:, None], quiet=True)
    assert not r.passed and "t < length" in r.message


def test_padding_inverted_polarity():
    r = M.padding_ex.check(lambda lengths, m: torch.arange(m)[None] >= torch.tensor(lengths)[:, None], quiet=True)
    assert not r.passed and "key_padding_mask" in r.message


def test_padding_left_aligned():
    r = M.padding_ex.check(
        lambda lengths, m: (torch.arange(m)[None] < torch.tensor(lengths)[:, None]).flip(-1), quiet=True
    )
    assert not r.passed and "left padding" in r.message


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


def test_combined_forgot_causal():
    r = M.combined_ex.check(lambda keep: keep[:, None, None, :].expand(-1, 1, keep.shape[1], -1), quiet=True)
    assert not r.passed and "sees the future" in r.message


def test_combined_forgot_padding():
    r = M.combined_ex.check(lambda keep: _tril(keep.shape[1]).expand(keep.shape[0], 1, -1, -1), quiet=True)
    assert not r.passed and "padded keys are still visible" in r.message


def test_combined_padding_on_query_axis():
    r = M.combined_ex.check(lambda keep: keep[:, None, :, None] & _tril(keep.shape[1]), quiet=True)
    assert not r.passed and "ROWS of padded queries" in r.message


def test_combined_or_instead_of_and():
    r = M.combined_ex.check(lambda keep: keep[:, None, None, :] | _tril(keep.shape[1]), quiet=True)
    assert not r.passed and "(AND)" in r.message


def test_combined_missing_head_axis():
    r = M.combined_ex.check(lambda keep: keep[:, None, :] & _tril(keep.shape[1]), quiet=True)
    assert not r.passed and "head axis" in r.message


def test_combined_unknown_mistake_falls_back_to_a_property_hint():
    def leaks_one_future_key(keep):
        out = M._combined_solution(keep).clone()
        out[:, :, 0, 1] = keep[:, 1:2]
        return out

    r = M.combined_ex.check(leaks_one_future_key, quiet=True)
    assert not r.passed and "future keys" in r.message


# --- never leak the solution ---------------------------------------------------------------------


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.title)
def test_messages_never_contain_the_solution(ex):
    src = ex.solution_source()
    body = [line.strip() for line in src.splitlines()[1:] if line.strip() and not line.strip().startswith(('"', "#"))]
    wrong = [m.fn for m in ex.mistakes] + [lambda *a: torch.zeros(1, dtype=torch.bool)]
    for fn in wrong:
        msg = ex.check(fn, quiet=True).message
        assert src not in msg
        for line in body:
            if len(line) > 20:
                assert line not in msg, line
