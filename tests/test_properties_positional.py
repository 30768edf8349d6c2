"""Property-based tests of every public function and class of ``transformer_nb.core.positional``: generated
lengths, widths, bases, offsets, head counts and dtypes, good or bad. Good input gives the closed form
(sin/cos, ALiBi's -m·|i-j|, a table row per position) and keeps the input's dtype; bad input raises a
``ValueError``/``TypeError`` that names the argument."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from property_helpers import NOT_INT, NOT_REAL, bad, call, expect_refusal, float_tensors, good, size

from transformer_nb.core import positional as P

ALIASES = {"t_q": ["T_q"], "t_k": ["T_k"]}
D_MODEL = st.one_of(good(st.integers(1, 6).map(lambda h: 2 * h)), bad(st.sampled_from([3, 7, 0, -2])), bad(NOT_INT))
BASE = st.one_of(good(st.floats(1.5, 1e5)), good(st.just(10000.0)), bad(NOT_REAL), bad(st.floats(-10, 0)))


@given(d_model=D_MODEL, base=BASE)
def test_sinusoid_frequencies(d_model, base):
    freqs = call(P.sinusoid_frequencies, {"d_model": d_model, "base": base})
    if freqs is None:
        return
    d, b = d_model.value, base.value
    assert freqs.shape == (d // 2,) and freqs.dtype == torch.float64
    expected = torch.tensor([b ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)
    assert torch.allclose(freqs, expected, rtol=1e-12) and freqs[0] == 1.0
    assert bool((freqs[1:] < freqs[:-1]).all())  # base > 1: each pair turns slower than the last


@given(n_positions=size(0, 12), d_model=D_MODEL, base=BASE)
def test_sinusoidal_encoding(n_positions, d_model, base):
    pe = call(P.sinusoidal_encoding, {"n_positions": n_positions, "d_model": d_model, "base": base})
    if pe is None:
        return
    n, d, b = n_positions.value, d_model.value, base.value
    assert pe.shape == (n, d) and pe.dtype == torch.float32
    for p in range(n):
        for i in range(d // 2):
            angle = p / b ** (2 * i / d)
            assert math.isclose(pe[p, 2 * i], math.sin(angle), abs_tol=1e-6)
            assert math.isclose(pe[p, 2 * i + 1], math.cos(angle), abs_tol=1e-6)


def is_index(v) -> bool:
    """A non-negative int: a Python int (not a bool) or a 0-d integer tensor."""
    if isinstance(v, torch.Tensor):
        return v.dim() == 0 and not v.is_floating_point() and v.dtype != torch.bool and int(v) >= 0
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


@st.composite
def inputs(draw, d_model: int, max_len: int):
    """(x, offset, which argument is bad or None) for a module of width d_model and table max_len."""
    t = draw(st.integers(0, 5))
    dtype = draw(st.sampled_from([torch.float32, torch.float64, torch.bfloat16]))
    x = draw(float_tensors((draw(st.integers(1, 3)), t, d_model), dtype))
    offset = draw(st.one_of(st.integers(0, max_len), st.integers(-3, -1), NOT_INT, st.just(torch.tensor(1))))
    spoil = draw(st.sampled_from([None, None, "int", "list", "2d", "width"]))
    if spoil == "int":
        x = x.long()
    elif spoil == "list":
        x = x.tolist()
    elif spoil == "2d":
        x = x[0]
    elif spoil == "width":
        x = torch.zeros(1, t, d_model + 2)
    return x, offset, spoil, is_index(offset)


@pytest.mark.parametrize("kind", ["sinusoidal", "learned"])
@given(data=st.data())
def test_positional_modules_add_one_table_row_per_position(kind, data):
    d_model, max_len = data.draw(st.integers(1, 4).map(lambda h: 2 * h)), data.draw(st.integers(1, 8))
    module = (
        P.SinusoidalPositionalEncoding(d_model, max_len)
        if kind == "sinusoidal"
        else P.LearnedPositionalEmbedding(max_len, d_model)
    )
    x, offset, spoil, offset_ok = data.draw(inputs(d_model, max_len))
    blame = {"int": ["x"], "list": ["x"], "2d": ["x"], "width": ["x", "d_model"]}.get(spoil, [])
    if not offset_ok:
        blame += ["offset"]
    elif spoil is None and int(offset) + x.shape[1] > max_len:
        blame += ["max_len"]
    if blame:
        expect_refusal(module, blame, x, offset=offset)
        return
    out = module(x, offset=offset)
    table = module.pe if kind == "sinusoidal" else module.emb.weight.detach()
    o = int(offset)
    assert out.shape == x.shape and out.dtype == x.dtype
    expected = x.double() + table[o : o + x.shape[1]].double()
    assert torch.allclose(out.double(), expected, atol=0.02 if x.dtype == torch.bfloat16 else 1e-6)


@given(max_len=size(1, 20), d_model=st.one_of(good(st.integers(1, 6).map(lambda h: 2 * h)), bad(NOT_INT)))
def test_module_constructors(max_len, d_model):
    values = {"d_model": d_model, "max_len": max_len}
    for build in (
        lambda d_model, max_len: P.SinusoidalPositionalEncoding(d_model, max_len),
        lambda d_model, max_len: P.LearnedPositionalEmbedding(max_len, d_model),
    ):
        module = call(build, values)
        if module is not None:
            assert module.max_len == max_len.value and module.d_model == d_model.value


HEADS = size(1, 16)


@given(n_heads=HEADS)
def test_alibi_slopes(n_heads):
    slopes = call(P.alibi_slopes, {"n_heads": n_heads})
    if slopes is None:
        return
    n = n_heads.value
    n0 = 1 << (n.bit_length() - 1)
    assert slopes.shape == (n,) and bool(((slopes > 0) & (slopes < 1)).all())
    assert torch.allclose(
        slopes[:n0], torch.tensor([2 ** (-8 * h / n0) for h in range(1, n0 + 1)], dtype=torch.float64)
    )
    assert len(set(slopes.tolist())) == n  # every head its own slope


@given(
    t_q=size(0, 6),
    n_heads=HEADS,
    t_k=size(0, 8, none_ok=True),
    dtype=st.one_of(
        good(st.sampled_from([torch.float32, torch.float64])),
        bad(st.sampled_from([torch.int64, torch.bool, "float32"])),
    ),
)
def test_alibi_bias_and_module(t_q, n_heads, t_k, dtype):
    relation_bad = t_q.ok and t_k.ok and t_k.value is not None and t_k.value < t_q.value
    args = {"t_q": t_q, "n_heads": n_heads, "t_k": t_k, "dtype": dtype}
    bias = call(P.alibi_bias, args, ALIASES, ["t_q", "t_k"] if relation_bad else None)
    if bias is None:
        return
    n, tq = n_heads.value, t_q.value
    tk = tq if t_k.value is None else t_k.value
    slopes = P.alibi_slopes(n)
    assert bias.shape == (n, tq, tk) and bias.dtype == dtype.value
    for i in range(tq):
        dist = torch.tensor([abs(tk - tq + i - j) for j in range(tk)], dtype=torch.float64)
        assert torch.allclose(bias[:, i].double(), -slopes[:, None] * dist, atol=1e-6)
    if dtype.value == torch.float32:
        assert torch.equal(P.ALiBi(n)(tq, t_k.value), bias)


@given(t_q=st.one_of(bad(NOT_INT), bad(st.integers(-3, -1))))
def test_alibi_module_forward_refuses_bad_lengths(t_q):
    expect_refusal(P.ALiBi(2), ["T_q"], t_q.value)
