"""Property-based tests of ``transformer_nb.core.multihead`` and ``transformer_nb.core.rope`` (modules of the ``lm``
helper): generated widths, head counts, lengths, positions and dtypes. Good input gives the defining
property (heads round-trip, MHA = per-head reference attention, the parameter formula = numel, RoPE is
a rotation whose scores depend only on the relative position); bad input a ``ValueError``/``TypeError``
that names the argument. (Five bad-argument properties failed here first; lm fixed them while this suite
was being written.)"""

import torch
from hypothesis import given
from hypothesis import strategies as st
from property_helpers import NOT_INT, NOT_REAL, bad, call, expect_refusal, float_tensors, good, size

from transformer_nb import params, reference
from transformer_nb.core import multihead as mh
from transformer_nb.core import rope as rp
from transformer_nb.core.attention import scaled_dot_product_attention
from transformer_nb.core.positional import sinusoid_frequencies


@st.composite
def mha_shapes(draw):
    d_head, n_heads = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    n_kv = draw(st.sampled_from([d for d in range(1, n_heads + 1) if n_heads % d == 0]))
    return d_head * n_heads, n_heads, n_kv, draw(st.booleans())


@given(
    x=st.tuples(st.integers(1, 3), st.integers(0, 4), st.integers(1, 4), st.integers(1, 4)).flatmap(
        lambda s: float_tensors((s[0], s[1], s[2] * s[3])).map(lambda t: (t, s[2]))
    )
)
def test_split_and_merge_heads_round_trip(x):
    t, n_heads = x
    heads = mh.split_heads(t, n_heads)
    b, n, d = t.shape
    assert heads.shape == (b, n_heads, n, d // n_heads)
    assert torch.equal(
        heads[:, 1 % n_heads, :, :], t[..., (1 % n_heads) * (d // n_heads) : (1 % n_heads + 1) * (d // n_heads)]
    )
    assert torch.equal(mh.merge_heads(heads), t)


@given(n_heads=st.one_of(good(st.integers(1, 3)), bad(NOT_INT), bad(st.integers(-2, 0)), bad(st.just(5))))
def test_split_heads_refuses_bad_head_counts(n_heads):
    call(mh.split_heads, {"x": torch.zeros(2, 3, 6), "n_heads": n_heads}, {"n_heads": ["heads", "d_model"]})


@given(shape=mha_shapes(), t=st.integers(1, 5), causal=st.booleans())
def test_mha_equals_the_reference_per_head(shape, t, causal):
    d, n_heads, n_kv, bias = shape
    torch.manual_seed(d * 31 + n_heads)
    m = mh.MultiHeadAttention(d, n_heads, n_kv_heads=n_kv, bias=bias).eval()
    x = torch.randn(2, t, d)
    y = m(x, is_causal=causal)
    assert y.shape == x.shape and torch.isfinite(y).all()
    # the reference, head by head, with shared key/value heads repeated
    q = m.q_proj(x).view(2, t, n_heads, -1).transpose(1, 2)
    k = m.k_proj(x).view(2, t, n_kv, -1).transpose(1, 2).repeat_interleave(n_heads // n_kv, dim=1)
    v = m.v_proj(x).view(2, t, n_kv, -1).transpose(1, 2).repeat_interleave(n_heads // n_kv, dim=1)
    mask = torch.ones(t, t, dtype=torch.bool).tril() if causal else None
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    ref = m.out_proj(out.transpose(1, 2).reshape(2, t, d))
    assert torch.allclose(y, ref, atol=1e-5)


@given(shape=mha_shapes())
def test_attention_params_is_numel(shape):
    d, n_heads, n_kv, bias = shape
    m = mh.MultiHeadAttention(d, n_heads, n_kv_heads=n_kv, bias=bias)
    cfg = params.TransformerConfig(d_model=d, n_heads=n_heads, n_kv_heads=n_kv, bias=bias)
    assert params.attention_params(cfg) == sum(p.numel() for p in m.parameters())


@given(
    d_model=size(1, 16),
    n_heads=size(1, 4),
    n_kv_heads=size(1, 4, none_ok=True),
)
def test_mha_constructor_refuses_what_does_not_divide(d_model, n_heads, n_kv_heads):
    divides = d_model.ok and n_heads.ok and d_model.value % n_heads.value == 0
    kv_ok = n_kv_heads.value is None or (n_kv_heads.ok and n_heads.ok and n_heads.value % n_kv_heads.value == 0)
    extra = [] if divides or not (d_model.ok and n_heads.ok) else ["n_heads", "d_model"]
    if not kv_ok and n_kv_heads.ok:
        extra += ["n_kv_heads", "n_heads"]
    call(mh.MultiHeadAttention, {"d_model": d_model, "n_heads": n_heads, "n_kv_heads": n_kv_heads}, extra_bad=extra)


@given(bad_value=st.one_of(NOT_INT, st.integers(-5, -1)), which=st.integers(0, 5))
def test_kv_cache_bytes_refuses_bad_sizes(bad_value, which):
    names = ["n_layers", "n_kv_heads", "d_head", "seq_len", "batch", "bytes_per_value"]
    args = [2, 2, 8, 16, 1, 2]
    args[which] = bad_value
    expect_refusal(params.kv_cache_bytes, [names[which]], *args)


# --------------------------------------------------------------------------- rope

D_EVEN = st.integers(1, 4).map(lambda h: 2 * h)


@given(
    d=st.one_of(good(D_EVEN), bad(st.sampled_from([3, 0, -2])), bad(NOT_INT)),
    base=st.one_of(good(st.floats(2, 1e5)), bad(NOT_REAL)),
)
def test_rope_frequencies_are_the_sinusoids_and_refuse_bad_arguments(d, base):
    """(The sinusoids' closed form: tests/test_properties_positional.py.)"""
    freqs = call(rp.rope_frequencies, {"d": d, "base": base}, {"d": ["d_head", "d_model", "dimension"]})
    if freqs is not None:
        assert torch.equal(freqs, sinusoid_frequencies(d.value, base.value))


@given(d=D_EVEN, seed=st.integers(0, 999))
def test_half_permutation_maps_interleaved_to_half(d, seed):
    x = torch.randn(3, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    perm = reference.half_permutation(d)
    assert sorted(perm.tolist()) == list(range(d))
    assert torch.allclose(
        rp.apply_rope(x[..., perm], pairing="half"), rp.apply_rope(x, pairing="interleaved")[..., perm]
    )


@given(
    d=D_EVEN,
    max_len=st.integers(1, 8),
    t=st.integers(0, 8),
    offset=st.one_of(st.integers(0, 8), st.integers(-2, -1), NOT_INT),
)
def test_rope_module_matches_apply_rope_and_guards_its_table(d, max_len, t, offset):
    r = rp.RoPE(d, max_len=max_len)
    x = torch.randn(1, t, d, generator=torch.Generator().manual_seed(t))
    offset_ok = isinstance(offset, int) and not isinstance(offset, bool) and offset >= 0
    if not offset_ok:
        expect_refusal(r.rotate, ["offset"], x, offset)
    elif offset + t > max_len:
        expect_refusal(r.rotate, ["max_len"], x, offset)
    else:
        got = r.rotate(x, offset)
        want = rp.apply_rope(x.double(), torch.arange(offset, offset + t, dtype=torch.float64)).float()
        assert got.dtype == x.dtype and torch.allclose(got, want, atol=1e-5)


@given(dtype=st.sampled_from([torch.int64, torch.int32, torch.bool]))
def test_rope_refuses_integer_input(dtype):
    """Issue 18: RoPE on an integer tensor returned zeros or truncated values."""
    x = torch.ones(1, 3, 4, dtype=dtype)
    expect_refusal(rp.apply_rope, ["x"], x)
    expect_refusal(rp.RoPE(4, 8).rotate, ["x"], x)
