"""Bad input to multi-head attention gets a clear error (type and message), never a silent wrong answer."""

import pytest
import torch
import torch.nn as nn

from transformer_nb.core import checks
from transformer_nb.core.multihead import MultiHeadAttention, merge_heads, split_heads
from transformer_nb.interop import copy_from_torch, copy_to_torch, to_torch, to_torch_attn_mask
from transformer_nb.params import attention_params, kv_cache_bytes
from transformer_nb.probes import head_stats

M = MultiHeadAttention(32, 4)
Q, K = torch.randn(2, 5, 32), torch.randn(2, 6, 32)


def test_heads_must_divide_d_model():
    with pytest.raises(ValueError, match=r"n_heads=5 must divide d_model=32"):
        MultiHeadAttention(32, 5)
    with pytest.raises(ValueError, match="n_heads must be >= 1, got 0"):
        MultiHeadAttention(32, 0)


def test_kv_heads_must_divide_heads():
    with pytest.raises(ValueError, match=r"n_kv_heads=3 must divide n_heads=8"):
        MultiHeadAttention(32, 8, n_kv_heads=3)
    with pytest.raises(ValueError, match="n_kv_heads must be >= 1, got 0"):
        MultiHeadAttention(32, 8, n_kv_heads=0)


def test_bad_d_model_and_dropout():
    with pytest.raises(ValueError, match="d_model must be >= 1"):
        MultiHeadAttention(0, 1)
    with pytest.raises(TypeError, match="d_model must be an int, got NoneType"):
        MultiHeadAttention(None, 4)
    with pytest.raises(TypeError, match="n_kv_heads must be an int, got str"):
        MultiHeadAttention(8, 2, n_kv_heads="2")
    with pytest.raises(ValueError, match="d_model=1000000 would need"):
        MultiHeadAttention(10**6, 4)
    with pytest.raises(ValueError, match=r"dropout is a probability in \[0, 1\)"):
        MultiHeadAttention(32, 4, dropout=1.5)


def test_key_and_value_lengths_differ():
    with pytest.raises(ValueError, match=r"key and value must have the same length: key has T_k=6, value has 7"):
        M(Q, K, torch.randn(2, 7, 32))


def test_wrong_d_model_in_inputs():
    with pytest.raises(ValueError, match=r"query must have shape \(B, T, d_model=32\), got \(2, 5, 24\)"):
        M(torch.randn(2, 5, 24))
    with pytest.raises(ValueError, match=r"key must have shape \(B, T, d_model=32\), got \(2, 6, 16\)"):
        M(Q, torch.randn(2, 6, 16))
    with pytest.raises(ValueError, match=r"query must have shape \(B, T, d_model=32\), got \(5, 32\)"):
        M(torch.randn(5, 32))  # a missing batch axis


def test_batch_mismatch():
    with pytest.raises(ValueError, match="batch sizes differ: query 2, key 3, value 3"):
        M(Q, torch.randn(3, 6, 32))


def test_mask_that_does_not_broadcast():
    with pytest.raises(ValueError, match=r"mask of shape \(3, 5, 5\) does not broadcast"):
        M(Q, mask=torch.ones(3, 5, 5, dtype=torch.bool))


def test_key_padding_mask_passed_as_attention_mask_gets_a_hint():
    with pytest.raises(ValueError, match=r"looks like a \(B, T_k\) key-padding mask.*masks.key_padding"):
        M(Q, K, mask=torch.ones(2, 6, dtype=torch.bool))


def test_integer_and_multiplicative_masks_rejected():
    with pytest.raises(TypeError, match="mask must be bool"):
        M(Q, mask=torch.ones(5, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="looks multiplicative"):
        M(Q, mask=torch.ones(5, 5))


def test_non_tensor_input():
    with pytest.raises(TypeError, match=r"query must be a torch.Tensor .* got list"):
        M([[0.0] * 32])


def test_causal_cross_attention_needs_t_q_le_t_k():
    with pytest.raises(ValueError, match="causal mask needs 0 <= T_q <= T_k"):
        M(K, Q, is_causal=True)  # 6 queries, 5 keys


def test_split_and_merge_heads_bad_shapes():
    with pytest.raises(ValueError, match=r"cannot split 30 features into n_heads=4"):
        split_heads(torch.randn(2, 5, 30), 4)
    with pytest.raises(ValueError, match=r"split_heads expects a \(B, T, n_heads·d_head\) tensor, got \(5, 32\)"):
        split_heads(torch.randn(5, 32), 4)
    with pytest.raises(ValueError, match=r"merge_heads expects a \(B, h, T, d_head\) tensor, got \(2, 5, 32\)"):
        merge_heads(torch.randn(2, 5, 32))


def test_torch_interop_refuses_mismatches():
    with pytest.raises(ValueError, match="no shared key/value heads"):
        to_torch(MultiHeadAttention(32, 4, n_kv_heads=2))
    with pytest.raises(ValueError, match=r"shapes differ: nn.MultiheadAttention\(embed_dim=32, num_heads=8\)"):
        copy_to_torch(M, nn.MultiheadAttention(32, 8))
    with pytest.raises(ValueError, match="bias settings differ"):
        copy_from_torch(M, nn.MultiheadAttention(32, 4, bias=False))
    with pytest.raises(ValueError, match="kdim = vdim = embed_dim"):
        copy_to_torch(M, nn.MultiheadAttention(32, 4, kdim=16, vdim=16))
    with pytest.raises(TypeError, match=r"nn\.MultiheadAttention, got Linear"):
        copy_to_torch(M, nn.Linear(32, 32))
    with pytest.raises(ValueError, match=r"mask has 3 heads; expected 1 or n_heads=4"):
        to_torch_attn_mask(torch.ones(2, 3, 5, 5, dtype=torch.bool), 4)


def test_counting_helpers_reject_bad_arguments():
    with pytest.raises(TypeError, match="expected a TransformerConfig"):
        attention_params(30)
    with pytest.raises(ValueError, match="seq_len must be >= 0, got -1"):
        kv_cache_bytes(2, 4, 16, -1)
    with pytest.raises(TypeError, match="n_layers must be an int, got False"):
        kv_cache_bytes(False, 4, 16, 8)
    with pytest.raises(TypeError, match="n_heads must be an int"):
        split_heads(torch.zeros(2, 3, 6), 2.0)
    with pytest.raises(ValueError, match=r"head_stats expects self-attention weights of shape \(..., T, T\)"):
        head_stats(torch.rand(4, 3, 5))


def test_check_mask_called_by_a_block_refuses_a_mask_that_does_not_fit_the_scores():
    with pytest.raises(ValueError, match=r"mask of shape \(3, 5, 5\) does not broadcast .* \(2, 4, 5, 7\)"):
        checks.attention_mask(M, torch.ones(3, 5, 5, dtype=torch.bool), 2, 5, 7)
