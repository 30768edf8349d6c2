"""Property-based tests of ``block``, ``stack``, ``params`` and ``transformer`` (modules of the ``stacks`` helper):
generated widths, head counts, lengths, activations, norms and padding. Good input gives the defining
property (the norms = torch's, shapes kept, the parameter formulas = numel on the meta device, causal
layers blind to the future; the causal LM: tests/test_lm_causal_masking.py); bad input a
``ValueError``/``TypeError`` naming the argument."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import example, given
from hypothesis import strategies as st
from property_helpers import (
    NOT_INT,
    NOT_REAL,
    Arg,
    bad,
    call,
    expect_refusal,
    float_tensors,
    good,
    heavy,
    int_tensors,
    size,
)

from transformer_nb import params, reference
from transformer_nb.core import block
from transformer_nb.core.transformer import Transformer


@given(
    shape=st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 8)),
    affine=st.booleans(),
    eps=st.one_of(st.floats(1e-12, 0.1), st.none()),
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_layer_norm_and_rms_norm_match_torch(shape, affine, eps, dtype):
    """(``eps=None``: RMSNorm's default, the dtype's machine epsilon; LayerNorm's 1e-5.)"""
    g = torch.Generator().manual_seed(sum(shape))
    x = 3 + 2 * torch.randn(shape, generator=g, dtype=dtype)
    d, atol = shape[-1], {torch.float32: 1e-5, torch.float64: 1e-10}[dtype]
    w, b = (
        (torch.randn(d, generator=g, dtype=dtype), torch.randn(d, generator=g, dtype=dtype)) if affine else (None, None)
    )
    ln_eps = 1e-5 if eps is None else eps
    assert torch.allclose(reference.layer_norm(x, w, b, ln_eps), F.layer_norm(x, (d,), w, b, ln_eps), atol=atol)
    assert torch.allclose(reference.rms_norm(x, w, eps), F.rms_norm(x, (d,), w, eps), atol=atol)


def one_head(**fields) -> params.TransformerConfig:
    """A configuration with one head (a norm or an FFN has none) and these fields."""
    return params.TransformerConfig(n_heads=1, **fields)


@given(
    kind=st.one_of(good(st.sampled_from(["layer", "rms"])), bad(st.sampled_from(["batch", "", None, 3]))),
    d_model=size(1, 32, huge=False),
)
def test_make_norm(kind, d_model):
    norm = call(
        lambda norm, d_model: block.make_norm(one_head(norm=norm, d_model=d_model)), {"norm": kind, "d_model": d_model}
    )
    if norm is not None:
        expected = {"layer": 2, "rms": 1}[kind.value] * d_model.value
        cfg = one_head(norm=kind.value, d_model=d_model.value)
        assert sum(p.numel() for p in norm.parameters()) == expected == params.norm_params(cfg)


@given(d_model=st.integers(1, 8192), multiple_of=st.integers(1, 512))
def test_swiglu_hidden_size_rounds_up_to_the_multiple(d_model, multiple_of):
    h, base = params.swiglu_hidden_size(d_model, multiple_of), int(2 * 4 * d_model / 3)  # truncated, rounded up
    assert h % multiple_of == 0 and base <= h < base + multiple_of


ACTIVATIONS = ["relu", "gelu", "swiglu"]


@pytest.mark.parametrize(
    "build,name",
    [
        (lambda: block.make_norm(one_head(d_model=10**12)), "d_model"),
        (lambda: block.FeedForward(one_head(d_model=1, d_ff=10**12)), "d_ff"),
    ],
)
def test_norms_and_ffns_refuse_sizes_beyond_memory(build, name):
    expect_refusal(build, [name])


@given(
    d_model=size(1, 8, huge=False),
    d_ff=size(1, 16, huge=False, none_ok=True),  # None: the default, 4·d_model
    activation=st.one_of(good(st.sampled_from(ACTIVATIONS)), bad(st.sampled_from(["tanh", "", None]))),
    bias=st.booleans(),
)
def test_feed_forward_shapes_and_parameter_formula(d_model, d_ff, activation, bias):
    ff = call(
        lambda **fields: block.FeedForward(one_head(**fields)),
        {"d_model": d_model, "d_ff": d_ff, "activation": activation, "bias": bias},
    )
    if ff is None:
        return
    x = torch.randn(2, 3, d_model.value)
    width = 4 * d_model.value if d_ff.value is None else d_ff.value
    assert ff(x).shape == x.shape
    cfg = one_head(d_model=d_model.value, d_ff=width, activation=activation.value, bias=bias)
    assert sum(p.numel() for p in ff.parameters()) == params.ffn_params(cfg)


@st.composite
def layer_config(draw):
    d_head, n_heads = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    return {
        "d_model": d_head * n_heads,
        "n_heads": n_heads,
        "d_ff": draw(st.integers(1, 12)),
        "norm_first": draw(st.booleans()),
        "activation": draw(st.sampled_from(ACTIVATIONS)),
        "norm": draw(st.sampled_from(["layer", "rms"])),
    }


@given(cfg=layer_config(), t=st.integers(1, 5), cut=st.integers(0, 4))
@heavy
def test_causal_encoder_layer_never_reads_the_future(cfg, t, cut):
    torch.manual_seed(0)
    layer = block.EncoderLayer(params.TransformerConfig(**cfg)).eval()
    x = torch.randn(1, t, cfg["d_model"])
    y = x.clone()
    cut = min(cut, t - 1)
    y[:, cut + 1 :] = torch.randn_like(y[:, cut + 1 :])  # change only the future of position `cut`
    a, b = layer(x, is_causal=True), layer(y, is_causal=True)
    assert a.shape == x.shape and torch.allclose(a[:, : cut + 1], b[:, : cut + 1], atol=1e-5)
    assert sum(p.numel() for p in layer.parameters()) == params.encoder_layer_params(params.TransformerConfig(**cfg))


BAD_X = [torch.zeros(2, 3, 4, dtype=torch.long), torch.zeros(2, 3, 5), torch.zeros(3, 4), [[0.0] * 4]]


@given(x=st.one_of(good(float_tensors((2, 3, 4))), bad(st.sampled_from(BAD_X))))
def test_encoder_layer_refuses_bad_hidden_states(x):
    layer = block.EncoderLayer(params.TransformerConfig(d_model=4, n_heads=2, d_ff=8))
    call(layer, {"x": x}, {"x": ["d_model", "input"]})


# --------------------------------------------------------------------------- params: formulas = numel


@st.composite
def transformer_configs(draw):
    d_head, n_heads = 2 * draw(st.integers(1, 4)), draw(st.sampled_from([1, 2, 4]))  # sinusoids need an even width
    arch = draw(st.sampled_from(["encoder", "decoder", "encoder-decoder"]))
    return params.TransformerConfig(
        arch=arch,
        d_model=d_head * n_heads,
        n_heads=n_heads,
        n_layers=draw(st.integers(1, 3)),
        d_ff=draw(st.one_of(st.none(), st.integers(1, 64))),
        n_kv_heads=draw(st.sampled_from([None, *[k for k in (1, 2, 4) if n_heads % k == 0]])),
        vocab=draw(st.integers(2, 100)),
        activation=draw(st.sampled_from(ACTIVATIONS)),
        norm=draw(st.sampled_from(["layer", "rms"])),
        bias=draw(st.booleans()),
    )


@given(cfg=transformer_configs())
@heavy
def test_param_breakdown_equals_numel_breakdown_on_the_meta_device(cfg):
    model = params.build_transformer(cfg)  # meta: shapes only
    assert params.param_breakdown(cfg) == params.numel_breakdown(model)
    assert params.numel_breakdown(model)["total"] == params.numel(model)


@given(n=st.one_of(good(st.integers(0, 10**15)), good(st.floats(0, 1e15)), bad(NOT_REAL), bad(st.integers(-100, -1))))
def test_bytes_human(n):
    text = call(params.bytes_human, {"n": n})
    if text is not None:
        assert text.endswith("B") and text[0].isdigit()


@given(which=st.sampled_from(["d_model", "n_heads", "vocab", "n_layers"]), value=st.one_of(NOT_INT, st.integers(-3, 0)))
@example(which="d_model", value=True)
def test_transformer_config_refuses_bad_sizes(which, value):
    def build(**kw):
        return params.param_breakdown(params.TransformerConfig(**kw))["total"]

    call(build, {which: Arg(value, False)})


# --------------------------------------------------------------------------- models


@given(
    ids=st.one_of(
        good(int_tensors((2, 3), 0, 10)),
        bad(int_tensors((2, 3), 10, 20)),  # beyond the vocabulary
        bad(st.sampled_from([torch.zeros(2, 3), torch.zeros(3, dtype=torch.long), torch.full((2, 3), -1), [[1, 2]]])),
    )
)
@heavy
def test_models_refuse_bad_ids(ids):
    m = Transformer(vocab=10, d_model=8, n_heads=2, n_layers=1, d_ff=16, max_len=8).eval()
    out = call(m, {"ids": ids}, {"ids": ["id", "token"]})
    if out is not None:
        assert out[0].shape == (2, 3, 10)


@given(src_len=st.integers(1, 5), tgt_len=st.integers(1, 5), tie=st.booleans(), share=st.booleans())
@heavy
def test_encoder_decoder_shapes(src_len, tgt_len, tie, share):
    shape = dict(vocab=9, d_model=8, n_heads=2, n_layers=1, n_dec_layers=1, d_ff=16, max_len=8)
    options = dict(tie_output=tie, share_embeddings=share, scale_embeddings=True, output_bias=True)
    pad = None if tie else 0  # a tied output layer refuses a padding row
    m = Transformer(arch="encoder-decoder", **shape, **options, pad_id=pad).eval()
    src, tgt = torch.randint(1, 9, (2, src_len)), torch.randint(1, 9, (2, tgt_len))
    out, loss = m(src, tgt=tgt)
    assert out.shape == (2, tgt_len, 9) and torch.isfinite(out).all() and loss is None
    assert params.numel(m) == sum(p.numel() for p in m.parameters())
    tables = 2 - share - tie  # token tables outside the head: tying moves the target table into it
    assert sum(t is not None for t in (m.tok, m.tgt_tok)) == tables
