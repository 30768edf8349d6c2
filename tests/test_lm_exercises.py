"""Notebook 10's checkers accept the reference and name each typical mistake."""

import math

import pytest
import torch

from transformer_nb.exercises import lm as ex
from transformer_nb.exercises.lm import (
    _base_two,
    _forgot_new_key,
    _k_plus_one,
    _k_smallest,
    _mean_of_batch_perplexities,
    _no_exp,
    _not_renormalised,
    _only_new_token,
    _prepended,
    _sdpa_is_causal,
    _temperature_multiplied,
    _unweighted_mean_loss,
)

EXERCISES = [ex.perplexity_ex, ex.top_k_ex, ex.kv_step_ex]


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.title)
def test_reference_passes(exercise):
    assert exercise.check(exercise.reference, quiet=True).passed


@pytest.mark.parametrize(
    "exercise, wrong, words",
    [
        (ex.perplexity_ex, _mean_of_batch_perplexities, "exp of a mean is not a mean of exps"),
        (ex.perplexity_ex, _unweighted_mean_loss, "short last batch"),
        (ex.perplexity_ex, _no_exp, "its exponential"),
        (ex.perplexity_ex, _base_two, "2**loss"),
        (ex.top_k_ex, _k_smallest, "least"),
        (ex.top_k_ex, _temperature_multiplied, "you multiplied"),
        (ex.top_k_ex, _not_renormalised, "no longer sums to 1"),
        (ex.top_k_ex, _k_plus_one, "k + 1"),
        (ex.kv_step_ex, _sdpa_is_causal, "top-left"),
        (ex.kv_step_ex, _forgot_new_key, "attend to itself"),
        (ex.kv_step_ex, _prepended, "at the end of the cache"),
        (ex.kv_step_ex, _only_new_token, "softmax-weighted sum"),
    ],
)
def test_typical_mistake_gets_its_hint(exercise, wrong, words):
    r = exercise.check(wrong, quiet=True)
    assert not r.passed
    assert words in r.message


def test_unknown_wrong_answers_get_property_hints():
    r = ex.top_k_ex.check(lambda logits, k, t: torch.softmax(logits / t, -1), quiet=True)
    assert not r.passed and "exactly k words" in r.message
    r = ex.perplexity_ex.check(lambda s, n: -1.0, quiet=True)
    assert not r.passed and "at least 1" in r.message
    r = ex.kv_step_ex.check(lambda q, kn, vn, kc, vc: q, quiet=True)
    assert not r.passed and "shape(s)" in r.message and "(2, 4, 8, 8)" in r.message


def test_stub_is_reported_not_raised():
    def stub(*args):
        raise NotImplementedError

    for e in EXERCISES:
        assert "not attempted" in e.check(stub, quiet=True).message


def test_perplexity_reference_is_exp_of_token_mean():
    sums, counts = torch.tensor([10.0, 30.0]), torch.tensor([5.0, 5.0])
    assert math.isclose(ex.perplexity_ex.reference(sums, counts), math.exp(4.0))


def test_kv_step_matches_the_package_cache():
    """The exercise's reference is what TransformerLM.cached_hidden does inside each block."""
    q, kn, vn, kc, vc = (
        torch.randn(1, 2, n, 8, generator=torch.Generator().manual_seed(i)) for i, n in enumerate((1, 1, 1, 5, 5))
    )
    out, k_all, v_all = ex.kv_step_ex.reference(q, kn, vn, kc, vc)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k_all, v_all)  # no mask: all keys
    assert torch.allclose(out, expected, atol=1e-6)
