"""Bad input to the reference attention gets a clear error (type and message), never a
silent wrong answer or NaN."""

import math

import pytest
import torch

from transformer_nb.attention import scaled_dot_product_attention as sdpa


def qkv(b=2, t_q=4, t_k=5, d_k=8, d_v=3):
    return torch.randn(b, t_q, d_k), torch.randn(b, t_k, d_k), torch.randn(b, t_k, d_v)


def test_query_key_d_k_mismatch():
    q, _, v = qkv()
    with pytest.raises(ValueError, match=r"share the last dimension d_k.*d_k=8.*d_k=6"):
        sdpa(q, torch.randn(2, 5, 6), v)


def test_key_value_length_mismatch():
    q, k, _ = qkv()
    with pytest.raises(ValueError, match=r"key and value must have the same length T_k.*T_k=5.*has 6"):
        sdpa(q, k, torch.randn(2, 6, 3))


def test_batch_dims_do_not_broadcast():
    _, k, v = qkv()
    with pytest.raises(ValueError, match=r"batch dimensions do not broadcast.*\(3, 4, 8\)"):
        sdpa(torch.randn(3, 4, 8), k, v)


def test_mask_that_does_not_broadcast():
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"mask of shape \(4, 4\) does not broadcast.*\(2, 4, 5\)"):
        sdpa(q, k, v, torch.ones(4, 4, dtype=torch.bool))


def test_mask_with_more_batch_dims_than_the_scores():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="does not broadcast"):
        sdpa(q, k, v, torch.ones(3, 2, 4, 5, dtype=torch.bool))


@pytest.mark.parametrize("dtype", [torch.long, torch.int32, torch.uint8])
def test_integer_mask(dtype):
    q, k, v = qkv()
    with pytest.raises(TypeError, match=r"mask must be bool.*additive float mask.*mask\.bool\(\)"):
        sdpa(q, k, v, torch.ones(4, 5, dtype=dtype))


def test_float_mask_of_zeros_and_ones_is_not_additive():
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"only 0s and 1s.*multiplicative.*additive.*mask\.bool\(\)"):
        sdpa(q, k, v, torch.ones(4, 5).tril())


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_nan_or_plus_inf_in_float_mask(bad):
    q, k, v = qkv()
    mask = torch.zeros(4, 5)
    mask[1, 2] = bad
    with pytest.raises(ValueError, match="must not contain NaN or \\+inf"):
        sdpa(q, k, v, mask)


def test_float_mask_of_another_dtype():
    q, k, v = qkv()
    with pytest.raises(TypeError, match=r"float mask must have the dtype of the query \(torch.float32\).*float64"):
        sdpa(q, k, v, torch.zeros(4, 5, dtype=torch.float64))


@pytest.mark.parametrize("which", [0, 1, 2])
def test_non_tensor_input(which):
    args = list(qkv())
    args[which] = args[which].tolist()
    name = ["query", "key", "value"][which]
    with pytest.raises(TypeError, match=f"{name} must be a torch.Tensor, got list"):
        sdpa(*args)


def test_non_tensor_mask():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="mask must be a torch.Tensor, got list"):
        sdpa(q, k, v, [[True] * 5] * 4)


def test_one_dimensional_input():
    _, k, v = qkv()
    with pytest.raises(ValueError, match=r"query must have shape \(\.\.\., T, d\), got \(8,\)"):
        sdpa(torch.randn(8), k, v)


def test_integer_inputs():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="key must be a floating-point tensor, got dtype torch.int64"):
        sdpa(q, k.long(), v)


def test_mixed_dtypes():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="share one dtype"):
        sdpa(q.double(), k, v)


def test_valid_masks_still_accepted():
    """The checks do not reject good input: all-zero float mask, finite biases, -inf, bool."""
    q, k, v = qkv()
    for mask in (
        torch.zeros(4, 5),
        torch.full((4, 5), -0.5),
        torch.zeros(4, 5).masked_fill(torch.eye(4, 5) > 0, -math.inf),
        torch.ones(4, 5, dtype=torch.bool),
        torch.ones(5, dtype=torch.bool),
    ):
        out, w = sdpa(q, k, v, mask)
        assert torch.isfinite(out).all()
