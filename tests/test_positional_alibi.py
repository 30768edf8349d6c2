"""ALiBi: the slopes equal Press et al.'s definition (their released get_slopes) for 1..32 heads,
the bias is -m·|i-j|, it works as an additive mask in the package's attention, and bad head counts
raise clear errors."""

import math

import pytest
import torch

from transformer_nb.core.multihead import MultiHeadAttention, merge_heads, split_heads
from transformer_nb.core.positional import ALiBi, alibi_bias, alibi_slopes


def _paper_slopes(n):
    """The released reference algorithm (Press et al., 2022), written independently here."""

    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + _paper_slopes(2 * closest)[0::2][: n - closest]


@pytest.mark.parametrize("n", range(1, 33))
def test_slopes_equal_the_papers_definition(n):
    assert torch.allclose(alibi_slopes(n), torch.tensor(_paper_slopes(n), dtype=torch.float64), rtol=1e-12, atol=0)


@pytest.mark.parametrize("n", [1, 2, 4, 8, 16, 32])
def test_power_of_two_slopes_are_geometric_from_2_to_the_minus_8_over_n(n):
    s = alibi_slopes(n)
    assert math.isclose(s[0].item(), 2 ** (-8 / n))
    assert math.isclose(s[-1].item(), 2**-8)  # the last head is 1/256, never 0.5
    assert torch.allclose(s[1:] / s[:-1], torch.full((n - 1,), 2 ** (-8 / n), dtype=torch.float64))


def test_bias_is_minus_slope_times_distance():
    b = alibi_bias(6, 4)
    s = alibi_slopes(4)
    assert b.shape == (4, 6, 6)
    for h in range(4):
        for i in range(6):
            for j in range(6):
                assert math.isclose(b[h, i, j].item(), -s[h].item() * abs(i - j), rel_tol=1e-6, abs_tol=1e-7)
    assert not torch.signbit(b.diagonal(dim1=1, dim2=2)).any()  # zeros, not -0.0


def test_bias_for_a_kv_cache_step_uses_the_last_positions():
    assert torch.allclose(alibi_bias(2, 3, t_k=7), alibi_bias(7, 3)[:, 5:])


def test_bias_as_attention_mask_matches_the_formula():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 7, 16)
    with torch.no_grad():
        out = mha(x, mask=alibi_bias(7, 4), is_causal=True)
        q, k, v = (split_heads(p(x), 4) for p in (mha.q_proj, mha.k_proj, mha.v_proj))
        s = q @ k.transpose(-2, -1) / 2.0 + alibi_bias(7, 4)
        s = s.masked_fill(~torch.ones(7, 7, dtype=torch.bool).tril(), float("-inf"))
        ref = mha.out_proj(merge_heads(s.softmax(-1) @ v))
    assert torch.allclose(out, ref, atol=1e-5)


def test_alibi_module_has_no_parameters():
    mod = ALiBi(8)
    assert sum(p.numel() for p in mod.parameters()) == 0
    assert torch.allclose(mod(5), alibi_bias(5, 8))


@pytest.mark.parametrize("n", [0, -3])
def test_non_positive_head_count_raises(n):
    with pytest.raises(ValueError, match="n_heads must be >= 1"):
        alibi_slopes(n)
    with pytest.raises(ValueError, match="n_heads must be >= 1"):
        alibi_bias(4, n)


@pytest.mark.parametrize("n", [4.0, "8", True])
def test_non_integer_head_count_raises(n):
    with pytest.raises(TypeError, match="n_heads must be an int"):
        alibi_slopes(n)


def test_more_queries_than_keys_raises():
    with pytest.raises(ValueError, match="0 <= T_q <= T_k"):
        alibi_bias(5, 2, t_k=3)
