"""Notebook 07's exercises (8.2 and 8.4) accept the reference, name typical mistakes, and never leak the solution."""

from transformer_nb.exercises.params import attention_flops_ex, attention_memory_ex, breakdown_ex
from transformer_nb.params import attention_flops


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
        "number of heads": lambda d, h, f, n, v: _count(d, h, f, n, v, att=h * 4 * d * d),
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
        "bytes per value": lambda t, h, b: h * t * t,
        "not gigabytes": lambda t, h, b: h * t * t * b / 1e9,
        "grows with T²": lambda t, h, b: h * t * b,
    }
    for words, fn in cases.items():
        r = attention_memory_ex.check(fn, quiet=True)
        assert not r.passed and words in r.message, (words, r.message)
        _no_leak(attention_memory_ex, r.message)


def test_exercise_8_4_flops():
    ok = lambda t, d, h: {k: v for k, v in attention_flops(t, d, h).items() if k != "total"}
    assert attention_flops_ex.check(ok, quiet=True).passed
    cases = {
        "2 FLOPs": lambda t, d, h: {k: v // 2 for k, v in ok(t, d, h).items()},
        "W_O": lambda t, d, h: {**ok(t, d, h), "projections": 6 * t * d * d},
        "that is one head": lambda t, d, h: {
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
