"""The package's masks mean exactly what PyTorch's masks mean: same tensors, same attention outputs.

- ``additive(causal_mask(T))`` is ``nn.Transformer.generate_square_subsequent_mask(T)``;
  ``causal_mask(T_q, T_k)`` is ``torch.nn.attention.bias.causal_lower_right``.
- a padding mask (True = real token) gives the same outputs as ``nn.MultiheadAttention``'s
  ``key_padding_mask`` (True = padding) and as ``F.scaled_dot_product_attention``'s ``attn_mask``,
  for self-attention (with and without causal) and for cross-attention (T_q != T_k).
"""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from transformer_nb.core.attention import scaled_dot_product_attention
from transformer_nb.core.masks import (
    causal_mask,
    key_padding,
    padding_mask,
    padding_mask_from_ids,
    self_attention_mask,
)
from transformer_nb.interop import additive


@pytest.mark.parametrize("T", [1, 2, 5, 16, 33])
def test_causal_equals_generate_square_subsequent_mask(T):
    ref = nn.Transformer.generate_square_subsequent_mask(T)
    assert torch.equal(additive(causal_mask(T)), ref)
    assert torch.equal(causal_mask(T), ref == 0)  # bool: True exactly where torch adds 0


def test_causal_is_lower_triangular_and_empty_is_fine():
    assert torch.equal(causal_mask(6), torch.ones(6, 6, dtype=torch.bool).tril())
    assert causal_mask(0).shape == (0, 0)


@pytest.mark.parametrize("t_q,t_k", [(1, 1), (1, 7), (3, 5), (5, 5)])
def test_rectangular_causal_is_lower_right(t_q, t_k):
    g = torch.Generator().manual_seed(t_q * 10 + t_k)
    q, k, v = (torch.randn(2, n, 8, generator=g) for n in (t_q, t_k, t_k))
    ours = scaled_dot_product_attention(q, k, v, causal_mask(t_q, t_k))[0]
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(t_q, t_k))
    torch.testing.assert_close(ours, ref, atol=1e-6, rtol=0)


def test_bool_and_additive_give_identical_attention():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 7, 8, generator=g) for _ in range(3))
    m = key_padding(padding_mask([7, 4]), 7) & causal_mask(7)
    ob, wb = scaled_dot_product_attention(q, k, v, m)
    oa, wa = scaled_dot_product_attention(q, k, v, additive(m))
    assert torch.equal(wb, wa) and torch.equal(ob, oa)
    torch.testing.assert_close(
        F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        F.scaled_dot_product_attention(q, k, v, attn_mask=additive(m)),
        atol=1e-6,
        rtol=0,
    )
    torch.testing.assert_close(ob, F.scaled_dot_product_attention(q, k, v, attn_mask=m), atol=1e-6, rtol=0)


def _mha_and_one_head(d=8, seed=0):
    torch.manual_seed(seed)
    mha = nn.MultiheadAttention(d, num_heads=1, batch_first=True).eval()

    def one_head(xq, xkv, mask):
        wq, wk, wv = mha.in_proj_weight.chunk(3)
        bq, bk, bv = mha.in_proj_bias.chunk(3)
        out, _ = scaled_dot_product_attention(xq @ wq.T + bq, xkv @ wk.T + bk, xkv @ wv.T + bv, mask)
        return mha.out_proj(out)

    return mha, one_head


@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_padding_matches_key_padding_mask(causal):
    mha, one_head = _mha_and_one_head()
    lengths = [6, 2, 4]
    keep = padding_mask(lengths)
    x = torch.randn(3, 6, 8)
    with torch.no_grad():
        ours = one_head(x, x, self_attention_mask(keep, causal=causal)[:, 0])
        kw = dict(attn_mask=~causal_mask(6)) if causal else {}
        ref = mha(x, x, x, key_padding_mask=~keep, **kw)[0]
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=0)


def test_cross_attention_padding_matches_key_padding_mask():
    mha, one_head = _mha_and_one_head(seed=1)
    src_keep = padding_mask([4, 6, 1])
    dec, enc = torch.randn(3, 5, 8), torch.randn(3, 6, 8)
    mask = key_padding(src_keep, 5)  # cross-attention's mask: the source's padding
    assert mask.shape == (3, 1, 5, 6)
    with torch.no_grad():
        ours = one_head(dec, enc, mask[:, 0])
        ref = mha(dec, enc, enc, key_padding_mask=~src_keep)[0]
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=0)


def test_padding_masks_match_sdpa_over_heads():
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(3, 4, 6, 8, generator=g) for _ in range(3))
    m = self_attention_mask(padding_mask([6, 3, 1]), causal=True)  # (B, 1, T, T) broadcasts over 4 heads
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v, m)[0],
        F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        atol=1e-6,
        rtol=0,
    )


def test_padding_invariance():
    """Outputs at real positions equal those of each sequence run alone (the point of a padding mask)."""
    g = torch.Generator().manual_seed(3)
    lengths = [5, 2, 3]
    x = torch.randn(3, 5, 8, generator=g)
    for causal in (False, True):
        out = scaled_dot_product_attention(x, x, x, self_attention_mask(padding_mask(lengths), causal)[:, 0])[0]
        for b, n in enumerate(lengths):
            alone = scaled_dot_product_attention(x[b, :n], x[b, :n], x[b, :n], causal_mask(n) if causal else None)[0]
            torch.testing.assert_close(out[b, :n], alone, atol=1e-6, rtol=0)


def test_padding_from_ids_equals_from_lengths_and_max_len():
    ids = torch.tensor([[5, 3, 9, 0, 0], [1, 0, 0, 0, 0], [4, 4, 4, 4, 4]])
    assert torch.equal(padding_mask_from_ids(ids, 0), padding_mask([3, 1, 5]))
    assert torch.equal(padding_mask([3, 1], max_len=4), torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]]).bool())
    assert padding_mask(torch.tensor([0, 2])).tolist() == [[False, False], [True, True]]


def test_fully_masked_rows_are_zero_not_nan():
    keep = padding_mask([0, 3], max_len=3)  # a length-0 sequence
    q = torch.randn(2, 3, 8, requires_grad=True)
    out, w = scaled_dot_product_attention(q, q, q, self_attention_mask(keep, causal=True)[:, 0])
    assert torch.equal(w[0], torch.zeros(3, 3)) and torch.equal(out[0], torch.zeros(3, 8))
    out.sum().backward()
    assert torch.isfinite(q.grad).all()


def test_and_of_the_masks_is_multihead_attention_with_both_masks():
    """MHA applies key_padding_mask AND attn_mask; the & of the two package masks must do the same."""
    mha, one_head = _mha_and_one_head(seed=4)
    keep = padding_mask([5, 3])
    m = key_padding(keep, 5) & causal_mask(5)
    assert torch.equal(m, self_attention_mask(keep, causal=True))
    assert torch.equal(m[1, 0, 4], torch.tensor([True, True, True, False, False]))
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        ref = mha(x, x, x, key_padding_mask=~keep, attn_mask=~causal_mask(5))[0]
        torch.testing.assert_close(one_head(x, x, m[:, 0]), ref, atol=1e-5, rtol=0)
