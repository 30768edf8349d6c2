"""Notebook 02's masking checkers name each typical wrong answer (notebook 02's former demo cells among
them: an off-by-one diagonal, the transposed triangle, the chapter's float tril, the inverted padding mask,
padding on the query axis, OR instead of AND) and accept other correct answers."""

import pytest
import torch

from transformer_nb.exercises import masks as M
from transformer_nb.exercises.solutions import masks as sol

EXERCISES = [M.causal_ex, M.padding_ex, M.combined_ex]


def test_other_correct_answers_pass():
    assert M.causal_ex.check(lambda T: torch.tril(torch.ones(T, T)).bool(), quiet=True).passed
    assert M.causal_ex.check(lambda T: ~torch.ones(T, T, dtype=torch.bool).triu(1), quiet=True).passed
    assert M.padding_ex.check(lambda lengths, m: torch.stack([torch.arange(m) < n for n in lengths]), quiet=True).passed


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
        out = sol.my_decoder_mask(keep).clone()
        out[:, :, 0, 1] = keep[:, 1:2]
        return out

    r = M.combined_ex.check(leaks_one_future_key, quiet=True)
    assert not r.passed and "future keys" in r.message


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.title)
def test_masks_on_another_device_or_meta_get_a_device_hint(ex):
    args = ex.cases[0][1]()
    r = ex.check(lambda *a: ex.reference(*args).to("meta"), quiet=True)
    assert not r.passed and "meta" in r.message
