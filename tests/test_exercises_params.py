"""Notebook 07's exercises, 8.2 and 8.4 in full (memory, FLOPs, the crossover and its interpretation): other
correct answers pass, typical mistakes (notebook 07's former demo cells among them) get their own hint."""

import pytest

from transformer_nb.exercises.complexity import (
    _SETTINGS,
    attention_flops_ex,
    attention_memory_ex,
    crossover_ex,
    interpretation_ex,
)
from transformer_nb.exercises.params import breakdown_ex
from transformer_nb.exercises.solutions.params import my_interpretation


def attention_flops(t, d, h):
    dk = d // h
    return {"projections": 8 * t * d * d, "scores": 2 * h * t * t * dk, "weighted_sum": 2 * h * t * t * dk}


def _no_leak(ex, message):
    src = ex.solution_source()
    assert src not in message
    assert not any(len(s) > 20 and s in message for s in (line.strip() for line in src.splitlines()))


def _count(d, h, f, n, v, att=None, ffn=None, norms=None, emb=None, untied=False):
    parts = {
        "embedding": emb if emb is not None else v * d,
        "attention_per_layer": att if att is not None else 4 * d * d,
        "ffn_per_layer": ffn if ffn is not None else 2 * d * f,
        "norm_per_layer": norms if norms is not None else 4 * d,
    }
    parts["total"] = (
        parts["embedding"]
        + n * (parts["attention_per_layer"] + parts["ffn_per_layer"] + parts["norm_per_layer"])
        + (v * d if untied else 0)
    )
    return parts


def _search(d, h):
    first = lambda cond: next(t for t in range(1, 1 << 16) if cond(t))
    f = lambda t: attention_flops(t, d, h)
    return {
        "text": first(lambda t: t * t > d * t),
        "flops": first(lambda t: f(t)["scores"] + f(t)["weighted_sum"] > f(t)["projections"]),
        "memory": first(lambda t: h * t * t > t * d),
    }


def test_other_correct_answers_pass():
    assert _count(512, 8, 2048, 6, 32000)["total"] == 35_270_656
    assert breakdown_ex.check(lambda d, h, f, n, v: _count(d, h, f, n, v), quiet=True).passed
    assert attention_memory_ex.check(lambda t, h, b: h * t * t * b, quiet=True).passed
    assert attention_flops_ex.check(attention_flops, quiet=True).passed
    assert crossover_ex.check(lambda d, h: {"text": d + 1, "flops": 2 * d + 1, "memory": int(d / h) + 1}, quiet=True)
    assert crossover_ex.check(_search, quiet=True).passed


@pytest.mark.parametrize(
    "ex, wrong, words",
    [  # notebook 07's former demo cells, and answers of the wrong kind
        (breakdown_ex, lambda d, h, f, n, v: _count(d, h, f, n, v, att=h * 4 * d * d), "number of heads"),
        (breakdown_ex, lambda d, h, f, n, v: 123, "the keys"),
        (attention_memory_ex, lambda t, h, b: h * t * t * b / 1e9, "not gigabytes"),
        (attention_flops_ex, lambda t, d, h: {**attention_flops(t, d, h), "projections": 6 * t * d * d}, "W_O"),
        (attention_flops_ex, lambda t, d, h: {"projections": 1}, "lacks the key"),
        (crossover_ex, lambda d, h: {"text": d + 1}, "lacks the key"),
    ],
)
def test_mistakes_get_their_hint_and_never_the_solution(ex, wrong, words):
    r = ex.check(wrong, quiet=True)
    assert not r.passed and words in r.message, r.message
    _no_leak(ex, r.message)


def test_exercise_8_4_interpretation():
    assert interpretation_ex.check(my_interpretation, quiet=True).passed
    assert interpretation_ex.check({k.upper(): v for k, v in my_interpretation.items()}, quiet=True).passed is False
    all_projections = dict.fromkeys(_SETTINGS, "projections")
    r = interpretation_ex.check(all_projections, quiet=True)
    assert not r.passed and "compare 4T²d" in r.message
    r = interpretation_ex.check({**my_interpretation, "GPT-3: T=2048, d=12288, h=96": "quadratic"}, quiet=True)
    assert not r.passed and "'GPT-3: T=2048, d=12288, h=96': compare 4T²d" in r.message
    r = interpretation_ex.check(dict.fromkeys(_SETTINGS), quiet=True)
    assert not r.passed and "not attempted" in r.message
    assert "attention" in interpretation_ex.reference(_SETTINGS).values()  # not every answer is the same
