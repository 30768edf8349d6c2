"""Notebook 07's exercises, 8.2 and 8.4 in full (memory, FLOPs, the crossover and its interpretation): other
correct answers pass, typical mistakes (notebook 07's former demo cells among them) get their own hint."""

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


def _stub(*args):
    raise NotImplementedError


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


def test_exercise_8_2():
    assert breakdown_ex.check(lambda d, h, f, n, v: _count(d, h, f, n, v), quiet=True).passed
    assert _count(512, 8, 2048, 6, 32000)["total"] == 35_270_656
    assert "not attempted" in breakdown_ex.check(_stub, quiet=True).message
    cases = {
        "number of heads": lambda d, h, f, n, v: _count(d, h, f, n, v, att=h * 4 * d * d),  # notebook 07's demo
        "output projection W_O": lambda d, h, f, n, v: _count(d, h, f, n, v, att=3 * d * d),
        "counts one LayerNorm": lambda d, h, f, n, v: _count(d, h, f, n, v, norms=2 * d),
        "one FFN matrix": lambda d, h, f, n, v: _count(d, h, f, n, v, ffn=d * f),
        "embedding matrix twice": lambda d, h, f, n, v: _count(d, h, f, n, v, untied=True),
        "the keys": lambda d, h, f, n, v: 123,
    }
    for words, fn in cases.items():
        r = breakdown_ex.check(fn, quiet=True)
        assert not r.passed and words in r.message, (words, r.message)
        _no_leak(breakdown_ex, r.message)


def test_exercise_8_4_memory():
    assert attention_memory_ex.check(lambda t, h, b: h * t * t * b, quiet=True).passed
    cases = {
        "every head": lambda t, h, b: t * t * b,
        "number of values": lambda t, h, b: h * t * t,
        "not gigabytes": lambda t, h, b: h * t * t * b / 1e9,  # notebook 07's demo
        "grows with T²": lambda t, h, b: h * t * b,
    }
    for words, fn in cases.items():
        r = attention_memory_ex.check(fn, quiet=True)
        assert not r.passed and words in r.message, (words, r.message)
        _no_leak(attention_memory_ex, r.message)


def test_exercise_8_4_flops():
    ok = attention_flops
    assert attention_flops_ex.check(ok, quiet=True).passed
    cases = {
        "2 FLOPs": lambda t, d, h: {k: v // 2 for k, v in ok(t, d, h).items()},
        "W_O": lambda t, d, h: {**ok(t, d, h), "projections": 6 * t * d * d},  # notebook 07's demo
        "that is one head": lambda t, d, h: {  # notebook 07's demo
            **ok(t, d, h),
            "scores": 2 * t * t * (d // h),
            "weighted_sum": 2 * t * t * (d // h),
        },
        "lacks the key": lambda t, d, h: {"projections": 1},
    }
    for words, fn in cases.items():
        r = attention_flops_ex.check(fn, quiet=True)
        assert not r.passed and words in r.message, (words, r.message)
        _no_leak(attention_flops_ex, r.message)


def test_exercise_8_4_crossover():
    assert crossover_ex.check(lambda d, h: {"text": d + 1, "flops": 2 * d + 1, "memory": int(d / h) + 1}, quiet=True)

    def search(d, h):
        first = lambda cond: next(t for t in range(1, 1 << 16) if cond(t))
        f = lambda t: attention_flops(t, d, h)
        return {
            "text": first(lambda t: t * t > d * t),
            "flops": first(lambda t: f(t)["scores"] + f(t)["weighted_sum"] > f(t)["projections"]),
            "memory": first(lambda t: h * t * t > t * d),
        }

    assert crossover_ex.check(search, quiet=True).passed
    cases = {
        "the hint's T > d/h": lambda d, h: {"text": d + 1, "flops": d // h + 1, "memory": d // h + 1},
        "off by one": lambda d, h: {"text": d, "flops": 2 * d, "memory": d // h},
        "lacks the key": lambda d, h: {"text": d + 1},
    }
    for words, fn in cases.items():
        r = crossover_ex.check(fn, quiet=True)
        assert not r.passed and words in r.message, (words, r.message)
        _no_leak(crossover_ex, r.message)


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
