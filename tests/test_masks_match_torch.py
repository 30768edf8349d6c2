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
    self_attention_mask,
)
from transformer_nb.interop import additive


@pytest.mark.parametrize("T", [1, 2, 5, 16, 33])
def test_causal_equals_generate_square_subsequent_mask(T):
    ref = nn.Transformer.generate_square_subsequent_mask(T)
    assert torch.equal(additive(causal_mask(T)), ref)
    assert torch.equal(causal_mask(T), ref == 0)  # bool: True exactly where torch adds 0


@pytest.mark.parametrize("t_q,t_k", [(1, 1), (1, 7), (3, 5), (5, 5)])
def test_rectangular_causal_is_lower_right(t_q, t_k):
    g = torch.Generator().manual_seed(t_q * 10 + t_k)
    q, k, v = (torch.randn(2, n, 8, generator=g) for n in (t_q, t_k, t_k))
    ours = scaled_dot_product_attention(q, k, v, causal_mask(t_q, t_k))[0]
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(t_q, t_k))
    torch.testing.assert_close(ours, ref, atol=1e-6, rtol=0)


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
