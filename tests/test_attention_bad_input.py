"""Bad input to the reference attention gets a clear error (type and message), never a
silent wrong answer or NaN."""

import math

import pytest
import torch

from transformer_nb.core.attention import scaled_dot_product_attention as sdpa


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


# --------------------------------------------------------------------------- issue 18: NaN, inf, odd scales


@pytest.mark.parametrize("which", [0, 1, 2])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_or_inf_in_query_key_or_value(which, bad):
    """Before: a NaN output (or NaN weights) came back without a word."""
    args = list(qkv())
    args[which][0, 1, 0] = bad
    with pytest.raises(ValueError, match=f"{['query', 'key', 'value'][which]} contains NaN or inf"):
        sdpa(*args)


@pytest.mark.parametrize(
    "scale,exc",
    [(math.nan, ValueError), (math.inf, ValueError), ("0.5", TypeError), (True, TypeError), (1j, TypeError)],
)
def test_scale_must_be_a_finite_number(scale, exc):
    with pytest.raises(exc, match="scale must be a"):
        sdpa(*qkv(), scale=scale)


def test_zero_and_negative_scales_are_plain_arithmetic():
    q, k, v = qkv()
    out, w = sdpa(q, k, v, scale=0.0)  # every score 0: uniform weights, the mean of the values
    assert torch.allclose(w, torch.full_like(w, 1 / 5)) and torch.allclose(out, v.mean(-2, keepdim=True).expand_as(out))
    out, _ = sdpa(q, k, v, scale=-0.5)
    assert torch.allclose(out, torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=-0.5), atol=1e-6)


def test_d_k_zero_is_refused():
    """Before: ZeroDivisionError from 1/sqrt(0)."""
    with pytest.raises(ValueError, match="d_k >= 1"):
        sdpa(torch.zeros(2, 3, 0), torch.zeros(2, 4, 0), torch.zeros(2, 4, 5))


def test_float16_scores_that_overflow_are_refused():
    q = torch.full((1, 2, 64), 40.0, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"scores q·kᵀ·scale overflow torch.float16"):
        sdpa(q, q, q)


def test_no_keys_at_all_gives_zero_output():
    """T_k = 0: every query row is fully masked, so zero weights and a zero output (no NaN)."""
    out, w = sdpa(torch.randn(2, 3, 4), torch.zeros(2, 0, 4), torch.zeros(2, 0, 5))
    assert out.shape == (2, 3, 5) and w.shape == (2, 3, 0) and torch.equal(out, torch.zeros(2, 3, 5))


def test_check_mask_called_directly_refuses_a_mask_that_does_not_fit_the_scores():
    from transformer_nb.core.checks import check_mask

    with pytest.raises(ValueError, match=r"mask of shape \(3, 3\) does not broadcast"):
        check_mask(torch.ones(3, 3, dtype=torch.bool), (2, 4, 5))


def test_check_qkv_names_what_is_wrong_when_called_directly():
    from transformer_nb.core.checks import check_qkv

    q, k, v = qkv()
    assert check_qkv(q, k, v) == (2,)
    with pytest.raises(TypeError, match="value must be a torch.Tensor"):
        check_qkv(q, k, None)
    with pytest.raises(ValueError, match="query contains NaN or inf"):
        check_qkv(q / 0, k, v)
