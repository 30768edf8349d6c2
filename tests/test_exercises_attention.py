"""Notebook 01's Exercise 8.5 checkers: the chapter's own hinted solution passes, the fully masked row is an
extension reported separately (with the d2l sentence corrected), attention scaled by the wrong dimension has
its own hint, and notebook 01's former demo cells (softmax over the queries, the causal off-by-one) are named."""

import math

import pytest
import torch

from transformer_nb.exercises.attention import attention_ex, causal_ex


def _attention(size=lambda q, k, v: math.sqrt(k.shape[-1]), fill=-math.inf, dim=-1):
    """000's hint, step by step: q @ kᵀ, divide by √d_k (``size``), masked_fill(mask == 0, ``fill``), softmax over
    ``dim``, @ v; the other arguments are the typical slips."""

    def fn(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / size(q, k, v)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, fill)
        weights = torch.softmax(scores, dim=dim)
        return weights @ v, weights

    return fn


def test_the_chapters_hinted_solution_passes_and_the_empty_row_is_an_extension():
    r = attention_ex.check(_attention(), quiet=True)
    assert r.passed, r.message
    assert r.extension and "beyond what the chapter asks" in r.extension and "NaN" in r.extension
    assert "d2l shipped this bug" not in r.message
    assert "uniform weights" in r.extension  # d2l's -1e6 fill: uniform, not NaN (notebook 01's own prose)
    r = attention_ex.check(_attention(fill=-1e6), quiet=True)  # that fill passes too, with the note
    assert r.passed and r.extension


def test_other_correct_answers_pass_without_extension_note():
    def einsum_attention(q, k, v, mask=None):
        s = torch.einsum("bqd,bkd->bqk", q.double(), k.double()) / q.shape[-1] ** 0.5
        if mask is not None:
            s = s.masked_fill(mask == 0, -math.inf)
        empty = ~torch.isfinite(s).any(-1, keepdim=True)
        w = torch.where(empty, 0.0, torch.softmax(torch.where(empty, 0.0, s), -1)).float()
        return w @ v, w

    def causal_via_triu(q, k, v):
        t = q.shape[-2]
        return einsum_attention(q, k, v, ~torch.ones(t, t, dtype=torch.bool).triu(1))

    r = attention_ex.check(einsum_attention, quiet=True)
    assert r.passed and r.extension is None
    assert causal_ex.check(causal_via_triu, quiet=True).passed


def _off_by_one(q, k, v):  # notebook 01's demo cell: hides the diagonal (and the first row gets NaN)
    return _attention()(q, k, v, torch.ones(q.shape[-2], q.shape[-2], dtype=torch.bool).tril(diagonal=-1))


@pytest.mark.parametrize(
    "ex, wrong, words",
    [
        (attention_ex, _attention(dim=1), "wrong axis"),  # notebook 01's demo cell: softmax over the queries
        (attention_ex, _attention(size=lambda q, k, v: math.sqrt(k.shape[-2])), "number of keys"),  # no nan_to_num
        (attention_ex, _attention(size=lambda q, k, v: 1.0), "not scaled"),
        (causal_ex, _off_by_one, "off by one"),
        (causal_ex, _off_by_one, "itself"),
    ],
)
def test_attention_mistakes_get_their_own_hint(ex, wrong, words):
    r = ex.check(wrong, quiet=True)
    assert not r.passed and words in r.message, r.message
