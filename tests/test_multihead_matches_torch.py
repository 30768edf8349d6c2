"""The package's MultiHeadAttention computes the same function as nn.MultiheadAttention with copied
weights: self- and cross-attention, key padding and causal masks, float masks; outputs, per-head weights
and gradients; the KV-cache formula equals the module's tensor shapes. (Heads = a per-head reference, GQA
included, and parameters = numel(): tests/test_properties_multihead_rope.py.)"""

import math

import pytest
import torch
import torch.nn as nn

from transformer_nb.core.masks import causal_mask, key_padding, padding_mask
from transformer_nb.core.multihead import MultiHeadAttention
from transformer_nb.interop import copy_from_torch, copy_to_torch, to_torch, to_torch_attn_mask
from transformer_nb.params import TransformerConfig, attention_params, kv_cache_bytes
from transformer_nb.probes import head_stats, record_attention, uniform_distance

D, H, B = 32, 4, 2


def _pair(seed=0, bias=True):
    torch.manual_seed(seed)
    ours = MultiHeadAttention(D, H, bias=bias)
    return ours, to_torch(ours)


@pytest.mark.parametrize(
    "t_q,t_k,cross,lengths,causal",
    [
        (7, 7, False, None, False),
        (7, 7, False, [7, 3], False),
        (7, 7, False, None, True),
        (7, 7, False, [4, 7], True),
        (4, 9, True, None, False),
        (4, 9, True, [9, 5], False),
        (3, 8, True, [8, 6], True),  # causal cross-attention: bottom-right aligned, as with a KV cache
    ],
)
def test_matches_nn_multiheadattention(t_q, t_k, cross, lengths, causal):
    ours, theirs = _pair()
    g = torch.Generator().manual_seed(1)
    q = torch.randn(B, t_q, D, generator=g, requires_grad=True)
    kv = torch.randn(B, t_k, D, generator=g, requires_grad=True) if cross else q
    our_mask, kw = None, {}
    if lengths is not None:
        keep = padding_mask(lengths, t_k)
        our_mask = key_padding(keep, t_q)
        kw["key_padding_mask"] = ~keep  # torch: True = ignore
    if causal:
        c = causal_mask(t_q, t_k)
        our_mask = c if our_mask is None else our_mask & c
        kw["attn_mask"] = ~c  # torch: True = may NOT attend
    with record_attention(ours):
        y1 = ours(q, kv, kv, mask=our_mask)
    y2, w2 = theirs(q, kv, kv, average_attn_weights=False, **kw)
    assert torch.allclose(y1, y2, atol=1e-5)
    assert torch.allclose(ours(q, kv, kv, mask=our_mask), y2, atol=1e-5)  # the fast path (F.sdpa) too
    assert torch.allclose(ours.last_weights, w2, atol=1e-6)
    inputs = (q, kv) if cross else (q,)
    g1 = torch.autograd.grad(y1.square().sum(), inputs)
    g2 = torch.autograd.grad(y2.square().sum(), inputs)
    for a, b in zip(g1, g2):
        assert torch.allclose(a, b, atol=1e-4)


def test_float_mask_and_mask_conversion():
    ours, theirs = _pair(4)
    x = torch.randn(B, 5, D)
    bias = -0.5 * (torch.arange(5)[:, None] - torch.arange(5)[None, :]).abs().float()
    assert torch.allclose(ours(x, mask=bias), theirs(x, x, x, attn_mask=to_torch_attn_mask(bias, H))[0], atol=1e-5)
    per_batch = key_padding(padding_mask([5, 3], 5), 5) & causal_mask(5)  # (B, 1, T, T)
    tm = to_torch_attn_mask(per_batch, H)
    assert tm.shape == (B * H, 5, 5) and tm.dtype == torch.bool
    assert torch.allclose(ours(x, mask=per_batch), theirs(x, x, x, attn_mask=tm)[0], atol=1e-5)


def test_no_bias_and_copy_both_ways():
    ours, theirs = _pair(5, bias=False)
    assert theirs.in_proj_bias is None
    x = torch.randn(B, 5, D)
    assert torch.allclose(ours(x), theirs(x, x, x)[0], atol=1e-5)
    fresh = nn.MultiheadAttention(D, H, batch_first=True)
    back = copy_from_torch(MultiHeadAttention(D, H), fresh)
    assert torch.allclose(back(x), fresh(x, x, x)[0], atol=1e-5)
    again = copy_to_torch(back, nn.MultiheadAttention(D, H, batch_first=True))
    assert torch.equal(again.in_proj_weight, fresh.in_proj_weight)
    assert torch.equal(again.out_proj.bias, fresh.out_proj.bias)


def test_fully_masked_row_is_zero_not_nan():
    ours, theirs = _pair(6)
    x = torch.randn(B, 5, D)
    keep = padding_mask([5, 0], 5)
    y = ours(x, mask=key_padding(keep, 5))
    assert torch.isfinite(y).all()
    assert torch.equal(y[1], ours.out_proj.bias.detach().expand(5, -1))
    assert torch.isnan(theirs(x, x, x, key_padding_mask=~keep)[0][1]).all()  # torch's behaviour differs here


def test_kv_cache_formula_matches_module_shapes():
    for d, h, g, L, n in [(8192, 64, 8, 80, 4096), (4096, 32, 8, 32, 4096), (8192, 64, 64, 80, 4096)]:
        with torch.device("meta"):
            layer = MultiHeadAttention(d, h, g, bias=False).to(torch.float16)
            x = torch.empty(3, n, d, dtype=torch.float16)
            k, v = layer.kv_heads(x, x)
        assert k.shape == (3, g, n, d // h) == v.shape
        assert L * (k.numel() * k.element_size() + v.numel() * v.element_size()) == kv_cache_bytes(L, g, d // h, n, 3)
    mha = nn.MultiheadAttention(512, 8)  # the parameter formula (numel: test_properties_multihead_rope.py)
    assert sum(p.numel() for p in mha.parameters()) == attention_params(TransformerConfig(d_model=512, n_heads=8))
    assert kv_cache_bytes(80, 64, 128, 4096) == 10_737_418_240  # 002's "about 40 GB" is 10.7 GB
    assert kv_cache_bytes(80, 8, 128, 4096) == 1_342_177_280


def test_head_stats_on_known_heads():
    t = 7
    eye = torch.eye(t)[None]
    prev = torch.zeros(1, t, t)
    prev[0, 0, 0] = 1
    prev[0, torch.arange(1, t), torch.arange(t - 1)] = 1
    uniform = torch.full((1, t, t), 1 / t)
    s = head_stats(torch.cat([eye, prev, uniform]).double())
    assert torch.allclose(s["distance"], torch.tensor([0.0, 6 / 7, uniform_distance(t)], dtype=torch.float64))
    assert torch.allclose(s["entropy"], torch.tensor([0.0, 0.0, math.log(t)], dtype=torch.float64))
    assert uniform_distance(7) == 16 / 7
