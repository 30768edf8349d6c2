"""Notebook 01's Exercise 8.5 checkers: the chapter's own hinted solution passes, the fully masked row is an
extension reported separately (with the d2l sentence corrected), attention scaled by the wrong dimension has
its own hint, and notebook 01's former demo cells (softmax over the queries, the causal off-by-one) are named."""

import math

import pytest
import torch

from transformer_nb.exercises.attention import attention_ex, causal_ex


def _scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def chapter_solution(q, k, v, mask=None):
    """000's hint, word for word: matmul, divide by sqrt(d_k), masked_fill(mask == 0, -inf), softmax, @ v."""
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(k.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


def test_the_chapters_hinted_solution_passes_and_the_empty_row_is_an_extension():
    r = attention_ex.check(chapter_solution, quiet=True)
    assert r.passed, r.message
    assert r.extension and "beyond what the chapter asks" in r.extension and "NaN" in r.extension
    assert "d2l shipped this bug" not in r.message
    assert "uniform weights" in r.extension  # d2l's -1e6 fill: uniform, not NaN (notebook 01's own prose)


def test_a_large_negative_fill_passes_the_exercise_and_gets_the_extension_note():
    def minus_a_million(q, k, v, mask=None):
        s = _scores(q, k)
        if mask is not None:
            s = s.masked_fill(mask == 0, -1e6)
        w = torch.softmax(s, -1)
        return w @ v, w

    r = attention_ex.check(minus_a_million, quiet=True)
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


def softmax_over_queries(q, k, v, mask=None):  # notebook 01's demo cell
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask.bool(), -math.inf)
    weights = torch.softmax(scores, dim=1)
    return weights @ v, weights


def scaled_by(size):
    def fn(q, k, v, mask=None):
        s = q @ k.transpose(-2, -1) / size(q, k, v)
        if mask is not None:
            s = s.masked_fill(mask == 0, -math.inf)
        w = torch.softmax(s, -1)
        return w @ v, w

    return fn


@pytest.mark.parametrize(
    "wrong, words",
    [
        (softmax_over_queries, "wrong axis"),
        (scaled_by(lambda q, k, v: math.sqrt(k.shape[-2])), "number of keys"),  # written without nan_to_num
        (scaled_by(lambda q, k, v: 1.0), "not scaled"),
    ],
)
def test_attention_mistakes_get_their_own_hint(wrong, words):
    r = attention_ex.check(wrong, quiet=True)
    assert not r.passed and words in r.message, r.message


def off_by_one(q, k, v):  # notebook 01's demo cell: hides the diagonal
    t = q.shape[-2]
    allowed = torch.ones(t, t, dtype=torch.bool).tril(diagonal=-1)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~allowed, -math.inf)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def test_causal_off_by_one_with_nan_is_named():
    r = causal_ex.check(off_by_one, quiet=True)
    assert not r.passed and "off by one" in r.message and "itself" in r.message
