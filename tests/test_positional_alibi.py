"""ALiBi: the slopes equal Press et al.'s definition (their released get_slopes) for 1..32 heads,
it works as an additive mask in the package's attention (the bias -m·|i-j| and bad input:
tests/test_properties_positional.py)."""

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
    assert not torch.signbit(mod(6).diagonal(dim1=1, dim2=2)).any()  # zeros, not -0.0
