"""Notebook 03's exercise checkers accept the reference, reject typical wrong answers with their specific
hint, say 'not attempted' for the stub, and never print the solution's source."""

import pytest
import torch

from transformer_nb.exercises.multihead import EXERCISES, attention_distance_ex, expand_kv_ex, kv_cache_ex


def _stub(*args):
    raise NotImplementedError


def _gap(t):
    return (torch.arange(t)[:, None] - torch.arange(t)[None, :]).abs()


WRONG = {
    "attention_distance": [
        (
            lambda w: (w * (torch.arange(w.shape[-1])[:, None] - torch.arange(w.shape[-1])[None, :])).sum(-1).mean(-1),
            "|i - j|",
        ),  # signed offsets
        (lambda w: _gap(w.shape[-1]).double().mean().expand(w.shape[0]).clone(), "without weighting"),
        (lambda w: (w * _gap(w.shape[-1])).sum(-1).sum(-1), "Average them over the queries"),
        (lambda w: (w * _gap(w.shape[-1])).sum(-1).mean(-1) / (w.shape[-1] - 1), "do not divide by T - 1"),
    ],
    "expand_kv": [
        (lambda kv, h: kv.repeat(1, h // kv.shape[1], 1, 1), "i mod n_kv_heads"),
        (lambda kv, h: kv.repeat_interleave(h // kv.shape[1], dim=2), "shape"),  # repeated the time axis
    ],
    "kv_cache": [
        (lambda L, h, g, d, n, b, nb: L * g * d * n * b * nb, "keys AND values"),
        (lambda L, h, g, d, n, b, nb: 2 * L * h * d * n * b * nb, "query heads"),
        (lambda L, h, g, d, n, b, nb: 2 * L * g * d * n * nb, "batch size"),
        (lambda L, h, g, d, n, b, nb: 16 * L * g * d * n * b * nb, "not bits"),
        (lambda L, h, g, d, n, b, nb: 2 * L * g * d * n * b, "multiply by bytes_per_value"),
    ],
}


@pytest.mark.parametrize("name", list(EXERCISES))
def test_accepts_reference_and_stub_is_not_attempted(name):
    ex = EXERCISES[name]
    assert ex.check(ex.reference, quiet=True).passed
    r = ex.check(_stub, quiet=True)
    assert not r.passed and "not attempted" in r.message


@pytest.mark.parametrize("name,fn,hint", [(n, f, h) for n, cases in WRONG.items() for f, h in cases])
def test_rejects_typical_mistakes_with_specific_hint(name, fn, hint):
    ex = EXERCISES[name]
    r = ex.check(fn, quiet=True)
    assert not r.passed
    assert hint in r.message, r.message
    src = ex.solution_source()
    assert src not in r.message
    body = [line.strip() for line in src.splitlines()[1:] if line.strip()]
    assert not any(line in r.message for line in body), r.message


def test_negative_distance_property():
    r = attention_distance_ex.check(lambda w: -(w * _gap(w.shape[-1])).sum(-1).mean(-1), quiet=True)
    assert not r.passed and "cannot be negative" in r.message


def test_alternative_correct_answers_pass():
    def distance_loop(w):
        h, t, _ = w.shape
        return torch.stack([sum(w[k, i, j] * abs(i - j) for i in range(t) for j in range(t)) / t for k in range(h)])

    assert attention_distance_ex.check(distance_loop, quiet=True).passed
    expand_index = lambda kv, h: kv[:, torch.arange(h) // (h // kv.shape[1])]
    assert expand_kv_ex.check(expand_index, quiet=True).passed
    assert kv_cache_ex.check(lambda L, h, g, d, n, b, nb: float(2 * L * g * d * n * b * nb), quiet=True).passed
