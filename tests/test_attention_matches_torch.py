"""The package's reference attention gives the same result as F.scaled_dot_product_attention,
and fully masked query rows give zero weights, a zero output and finite gradients (never NaN)."""

import math

import pytest
import torch
import torch.nn.functional as F

from transformer_nb.core.attention import scaled_dot_product_attention as sdpa
from transformer_nb.core.masks import causal_mask, key_padding, padding_mask
from transformer_nb.interop import additive


def qkv(shape_q, shape_k, d_v, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*shape_q, generator=g, dtype=dtype)
    k = torch.randn(*shape_k, generator=g, dtype=dtype)
    return q, k, torch.randn(*shape_k[:-1], d_v, generator=g, dtype=dtype)


def random_keep(t_q, t_k, seed):
    keep = torch.rand(t_q, t_k, generator=torch.Generator().manual_seed(seed)) > 0.4
    keep[:, 0] = True  # no fully masked row: F.sdpa and we must agree on every entry
    return keep


# Shapes the property test (test_properties_attention.py) does not draw: the package's own masks on 4-D heads,
# and k, v broadcast over heads.
CASES = {
    "4-D heads, key padding (B,1,T_q,T_k)": (
        ((2, 4, 5, 8), (2, 4, 5, 8), 6),
        lambda: key_padding(padding_mask([5, 3]), 5),
    ),
    "4-D heads, padding & causal": (
        ((2, 4, 5, 8), (2, 4, 5, 8), 6),
        lambda: key_padding(padding_mask([5, 3]), 5) & causal_mask(5),
    ),
    "4-D heads, cross-attention T_q != T_k": (
        ((2, 4, 3, 8), (2, 4, 6, 8), 8),
        lambda: key_padding(padding_mask([6, 4]), 3),
    ),
    "batch broadcast: k, v shared over heads": (((2, 4, 5, 8), (2, 1, 5, 8), 8), lambda: causal_mask(5)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch_sdpa(name):
    (shape_q, shape_k, d_v), make_mask = CASES[name]
    q, k, v = qkv(shape_q, shape_k, d_v, seed=len(name))
    mask = make_mask()
    out, w = sdpa(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert out.shape == ref.shape == (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), shape_q[-2], d_v)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=1e-10)
    # the weights are a proper attention matrix: rows sum to 1, exact zeros where blocked
    torch.testing.assert_close(w.sum(-1), torch.ones_like(w.sum(-1)))
    if mask is not None:
        blocked = ~mask if mask.dtype == torch.bool else torch.isneginf(mask)
        assert (w.masked_select(blocked.expand_as(w)) == 0).all()


def test_weights_are_softmax_of_scaled_scores():
    q, k, v = qkv((2, 4, 8), (2, 6, 8), 3, seed=10)
    out, w = sdpa(q, k, v)
    torch.testing.assert_close(w, torch.softmax(q @ k.mT / math.sqrt(8), dim=-1))
    torch.testing.assert_close(out, w @ v)


@pytest.mark.parametrize("form", ["bool", "additive"])
def test_fully_masked_rows_give_zeros_not_nan(form):
    q, k, v = qkv((2, 4, 8), (2, 6, 8), 5, seed=11)
    q.requires_grad_()
    k.requires_grad_()
    keep = random_keep(4, 6, 11)
    keep[1] = False  # query 1 may attend to nothing
    mask = keep if form == "bool" else additive(keep, torch.float64)
    out, w = sdpa(q, k, v, mask)
    assert torch.equal(w[:, 1], torch.zeros(2, 6, dtype=w.dtype))
    assert torch.equal(out[:, 1], torch.zeros(2, 5, dtype=out.dtype))
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    # the other rows are exactly what F.sdpa gives
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out[:, [0, 2, 3]], ref[:, [0, 2, 3]])
    # ... and no NaN reaches the gradients (an additive -inf row used to give NaN here)
    out.sum().backward()
    assert torch.isfinite(q.grad).all() and torch.isfinite(k.grad).all()
    assert torch.equal(q.grad[:, 1], torch.zeros(2, 8, dtype=q.dtype))
