"""The notebook-01 exercise checkers accept the reference, reject typical wrong answers with
the hint specific to each, never raise, and never leak the solution's source."""

import inspect
import math

import pytest
import torch

from transformer_nb.exercises.attention import EXERCISES, attention_ex, causal_ex, empirical_ex, variance_ex

ALL = list(EXERCISES.items())
MISTAKES = [(name, i) for name, ex in ALL for i in range(len(ex.mistakes))]


def source_lines(ex):
    """Lines of the reference's code (not its docstring) long enough to be recognisable."""
    src = inspect.getsource(ex.reference)
    body = src.split('"""')[-1] if '"""' in src else src
    return [ln.strip() for ln in body.splitlines() if len(ln.strip()) > 12]


@pytest.mark.parametrize("name,ex", ALL)
def test_reference_passes(name, ex):
    r = ex.check(ex.reference, quiet=True)
    assert r.passed, r.message


@pytest.mark.parametrize("name,ex", ALL)
def test_each_exercise_knows_at_least_two_mistakes(name, ex):
    assert len(ex.mistakes) >= 2


@pytest.mark.parametrize("name,i", MISTAKES)
def test_mistake_is_rejected_with_its_own_hint(name, i):
    ex = EXERCISES[name]
    m = ex.mistakes[i]
    r = ex.check(m.fn, quiet=True)
    assert not r.passed
    assert m.hint in r.message, f"expected hint {m.hint!r}, got {r.message!r}"
    for line in source_lines(ex):
        assert line not in r.message


@pytest.mark.parametrize("name,ex", ALL)
def test_stub_is_not_attempted_and_never_raises(name, ex):
    def stub(*args):
        raise NotImplementedError

    r = ex.check(stub, quiet=True)
    assert not r.passed and "not attempted yet" in r.message


@pytest.mark.parametrize("name,ex", ALL)
def test_crashing_answer_is_reported_not_raised(name, ex):
    def crashes(*args):
        return args[0] @ torch.zeros(3, 7, 11)

    r = ex.check(crashes, quiet=True)
    assert not r.passed and "your function raised" in r.message


def _scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def test_naive_attention_gets_the_nan_hint():
    """Right in every way except a fully masked row (d2l's bug): the hint names that row."""

    def naive(q, k, v, mask=None):
        s = _scores(q, k)
        if mask is not None:
            s = s.masked_fill(~mask, -math.inf)
        w = torch.softmax(s, -1)
        return w @ v, w

    r = attention_ex.check(naive, quiet=True)
    assert not r.passed and "ALL masked gets NaN" in r.message and "first row blocks every key" in r.message


def test_inverted_mask_with_nan_still_gets_the_polarity_hint():
    def inverted(q, k, v, mask=None):
        s = _scores(q, k)
        if mask is not None:
            s = s.masked_fill(mask, -math.inf)  # wrong polarity, and the last row becomes all -inf
        w = torch.softmax(s, -1)
        return w @ v, w

    r = attention_ex.check(inverted, quiet=True)
    assert not r.passed and "wrong polarity" in r.message and "NaN" in r.message


def test_large_negative_instead_of_minus_inf_is_caught():
    def big_negative(q, k, v, mask=None):
        s = _scores(q, k)
        if mask is not None:
            s = s.masked_fill(~mask, -1e4)
        w = torch.softmax(s, -1)
        return w @ v, w

    r = attention_ex.check(big_negative, quiet=True)
    assert not r.passed  # the fully masked row becomes uniform instead of zero


def test_causal_off_by_one_with_nan_is_named():
    def hides_diagonal(q, k, v):
        t = q.shape[-2]
        allowed = torch.ones(t, t, dtype=torch.bool).tril(-1)
        w = torch.softmax(_scores(q, k).masked_fill(~allowed, -math.inf), -1)
        return w @ v, w

    r = causal_ex.check(hides_diagonal, quiet=True)
    assert not r.passed and "off by one" in r.message and "itself" in r.message


def test_other_correct_answers_pass():
    """Different but correct code is accepted: einsum, float64 detour, biased variance, numpy floats."""

    def einsum_attention(q, k, v, mask=None):
        s = torch.einsum("bqd,bkd->bqk", q.double(), k.double()) / q.shape[-1] ** 0.5
        if mask is not None:
            s = s.masked_fill(~mask, -math.inf)
        empty = ~torch.isfinite(s).any(-1, keepdim=True)
        w = torch.where(empty, 0.0, torch.softmax(torch.where(empty, 0.0, s), -1)).float()
        return w @ v, w

    def causal_via_triu(q, k, v):
        t = q.shape[-2]
        return einsum_attention(q, k, v, ~torch.ones(t, t, dtype=torch.bool).triu(1))

    assert attention_ex.check(einsum_attention, quiet=True).passed
    assert causal_ex.check(causal_via_triu, quiet=True).passed
    assert empirical_ex.check(
        lambda q, k, scaled: float(((q * k).sum(-1) / (q.shape[-1] ** 0.5 if scaled else 1)).var(unbiased=False)),
        quiet=True,
    ).passed
    assert variance_ex.check(
        lambda d, vq, vk, mq=0.0, mk=0.0: d * ((vq + mq**2) * (vk + mk**2) - mq**2 * mk**2), quiet=True
    ).passed
