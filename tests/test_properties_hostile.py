"""Hostile tensors into the public functions: integer, float16, bfloat16 and complex dtypes, the meta device,
empty tensors, NaN and inf, and a tensor subclass that fakes its comparisons.

Each function's table says which kinds it accepts and what the result must then satisfy; every other kind
must be refused with a ``ValueError``/``TypeError`` that names the argument. Hypothesis draws the function,
the kind, the values and where the NaN or inf goes.

A module (attention, a block, a stack, a position encoding) lets NaN and inf through, as torch's own layers
do: checking every activation would cost a reduction per call. The property there is that the NaN is not
hidden (a position-wise layer keeps it at its position); the teaching function ``scaled_dot_product_attention``
refuses it.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from property_helpers import expect_refusal

import transformer_nb.reversal as rv
from transformer_nb import checks
from transformer_nb.core.attention import scaled_dot_product_attention
from transformer_nb.core.block import FeedForward
from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.masks import padding_mask
from transformer_nb.core.multihead import MultiHeadAttention
from transformer_nb.core.positional import SinusoidalPositionalEncoding
from transformer_nb.core.rope import RoPE, apply_rope
from transformer_nb.core.stack import Encoder
from transformer_nb.objectives import lm_loss
from transformer_nb.perplexity import unigram_perplexity
from transformer_nb.probes import head_stats
from transformer_nb.wikitext import Vocab, batchify

KINDS = ("int", "float16", "bfloat16", "complex", "meta", "empty", "nan", "inf", "subclass")


class FakeEq(torch.Tensor):
    """A tensor whose comparisons all answer True; every other operation is honest."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.equal, torch.allclose, torch.isclose, torch.eq, torch.Tensor.__eq__, torch.Tensor.eq):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


def plain(x):
    return x.as_subclass(torch.Tensor) if isinstance(x, torch.Tensor) else x


def hostile(base: torch.Tensor, kind: str, where: int, empty_dim: int) -> torch.Tensor:
    """``base`` turned into ``kind``; ``where`` picks the element a NaN or inf replaces."""
    if kind == "int":
        return base.int() if not base.is_floating_point() else base.round().long()
    if kind in ("float16", "bfloat16"):
        return base.to(getattr(torch, kind))
    if kind == "complex":
        return base.to(torch.complex64)
    if kind == "meta":
        return base.to("meta")
    if kind == "empty":
        return base.narrow(empty_dim, 0, 0)
    if kind in ("nan", "inf"):
        out = base.double() if not base.is_floating_point() else base.clone()
        out.view(-1)[where % out.numel()] = math.nan if kind == "nan" else math.inf
        return out
    return base.clone().as_subclass(FakeEq)


def nonfinite_stays(out, x) -> None:
    """A NaN or inf that went in is not hidden: the output is not all finite."""
    assert not torch.isfinite(plain(out).float()).all()


def close_to(reference, atol):
    def prop(out, x):
        assert torch.allclose(plain(out).double(), reference(plain(x).double()).double(), atol=atol)

    return prop


def same_as(reference):
    def prop(out, x):
        assert torch.equal(plain(out), reference(plain(x)))

    return prop


def shape_is(shape_of):
    def prop(out, x):
        assert tuple(out.shape) == shape_of(x)

    return prop


def fails_check(out, x) -> None:
    assert out == "AssertionError"


X = torch.randn(2, 3, 8, generator=torch.Generator().manual_seed(0))
K = torch.randn(2, 4, 8, generator=torch.Generator().manual_seed(1))
LOGITS = torch.randn(2, 6, generator=torch.Generator().manual_seed(2))
WEIGHTS = torch.softmax(torch.randn(2, 4, 4, generator=torch.Generator().manual_seed(3)), -1)
IDS = torch.tensor([3, 5, 7, 4, 6, 3, 5, 8])
torch.manual_seed(0)
SMALL = TransformerConfig(d_model=8, n_heads=2, d_ff=16, n_layers=1)
MHA, ENC, FFN = MultiHeadAttention(8, 2).eval(), Encoder(SMALL).eval(), FeedForward(SMALL).eval()
SIN, ROPE = SinusoidalPositionalEncoding(8, 16), RoPE(8, 16)
VOCAB = Vocab([str(i) for i in range(10)])


def sdpa(q):
    kv = K.to(q.dtype) if q.is_floating_point() else K
    return scaled_dot_product_attention(q, kv, kv)[0]


def ffn_keeps_nan_at_its_position(out, x):
    bad = ~torch.isfinite(x).all(-1)  # (B, T) positions holding the NaN or inf
    assert not torch.isfinite(out[bad]).all() and torch.isfinite(out[~bad]).all()


def rope_keeps_nan_in_its_pair(out, x):
    bad = ~torch.isfinite(x.unflatten(-1, (-1, 2))).all(-1)  # (..., T, d/2) pairs holding the NaN or inf
    assert torch.isfinite(out.unflatten(-1, (-1, 2))[~bad]).all()


def check_close_of(x):
    try:
        checks.check_close("x", x, torch.ones(2, 3), atol=1e-2)
    except AssertionError:
        return "AssertionError"
    return "passed"


def check_passes_if_equal(out, x):
    assert out == ("passed" if torch.equal(plain(x).float(), torch.ones(2, 3)) else "AssertionError")


ONE = lambda x: x.shape


def floats(f):  # float16 and bfloat16 give the float64 answer to their precision
    return {"float16": close_to(f, 2e-2), "bfloat16": close_to(f, 6e-2)}


def nonfinite(prop):
    return {"nan": prop, "inf": prop}


def on_x(fn, arg, accepted):  # a function of X that takes an empty batch and a subclass
    return fn, X, [arg], {"empty": shape_is(ONE), "subclass": same_as(fn), **accepted}, 1


def on_ids(fn, arg, accepted):  # a function of the token ids IDS
    return fn, IDS, [arg], accepted, 0


entropy = lambda w: head_stats(w)["entropy"]
loss = lambda x: lm_loss(x[None], torch.tensor([[0, 5]]))
batch2 = lambda d: batchify(d, 2)
decoded = lambda out, x: out == "3 5 7 4 6 3 5 8"
ppl = lambda out, x: math.isclose(out, unigram_perplexity(IDS, IDS[:3], 10))

# name -> (call, base tensor, argument names a refusal may use, {accepted kind: property}, dim to empty)
SPECS = {
    "scaled_dot_product_attention": on_x(sdpa, "query", floats(sdpa)),
    "MultiHeadAttention": on_x(MHA, "query", nonfinite(nonfinite_stays)),
    "Encoder": on_x(ENC, "x", nonfinite(nonfinite_stays)),
    "FeedForward": on_x(FFN, "x", nonfinite(ffn_keeps_nan_at_its_position)),
    "SinusoidalPositionalEncoding": on_x(SIN, "x", floats(SIN) | nonfinite(ffn_keeps_nan_at_its_position)),
    "RoPE.rotate": on_x(ROPE.rotate, "x", floats(ROPE.rotate) | nonfinite(rope_keeps_nan_in_its_pair)),
    "apply_rope": on_x(
        apply_rope, "x", floats(apply_rope) | nonfinite(rope_keeps_nan_in_its_pair) | {"meta": shape_is(ONE)}
    ),
    "head_stats": (
        entropy,
        WEIGHTS,
        ["weights"],
        floats(entropy) | nonfinite(nonfinite_stays) | {"meta": shape_is(lambda w: (2,)), "subclass": same_as(entropy)},
        1,
    ),
    "check_close": (
        check_close_of,
        torch.ones(2, 3),
        ["actual"],
        dict.fromkeys(("int", "float16", "bfloat16"), check_passes_if_equal)
        | dict.fromkeys(("nan", "inf", "empty"), fails_check),
        1,
    ),
    "lm_loss": (loss, LOGITS, ["logits"], floats(loss) | nonfinite(nonfinite_stays) | {"subclass": same_as(loss)}, 1),
    "padding_mask": (
        padding_mask,
        torch.tensor([2, 3, 1]),
        ["lengths"],
        dict.fromkeys(("int", "subclass"), same_as(padding_mask)),
        0,
    ),
    "batchify": on_ids(
        batch2, "data", {"int": same_as(batch2), "meta": shape_is(lambda d: (2, 4)), "subclass": same_as(batch2)}
    ),
    "unigram_perplexity": on_ids(
        lambda t: unigram_perplexity(t, IDS[:3], 10), "train_ids", {"int": ppl, "subclass": ppl}
    ),
    "Vocab.decode": on_ids(
        VOCAB.decode, "ids", dict.fromkeys(("int", "subclass"), decoded) | {"empty": lambda out, x: out == ""}
    ),
    "reversal.score": on_ids(
        lambda p: rv.score(p[None], IDS[None]),
        "pred",
        {"int": lambda out, x: out["exact_match"] == 1.0, "empty": lambda out, x: out["exact_match"] == 0.0},
    ),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(SPECS))
@given(where=st.integers(0, 10**6))
@settings(max_examples=max(3, settings().max_examples // 10))  # only where the NaN or inf goes varies
def test_a_hostile_tensor_gets_a_clear_error_or_a_correct_result(name, kind, where):
    fn, base, arg_names, accepted, empty_dim = SPECS[name]
    x = hostile(base, kind, where, empty_dim)
    if kind in accepted:
        assert accepted[kind](fn(x), x) in (None, True)  # a property asserts or answers True
    else:
        expect_refusal(fn, arg_names, x)
