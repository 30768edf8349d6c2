"""RoPE: the relative-position identity, norm preservation, the group property, the two pairings
(one rotation up to a permutation), agreement with the complex-number form, use inside the package's
attention and in half precision (a KV-cache step: tests/test_lm_kv_cache_equivalence.py; bad input:
tests/test_badinput_core.py)."""

import pytest
import torch
import torch.nn.functional as F

from transformer_nb.core.block import EncoderLayer
from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.multihead import MultiHeadAttention, merge_heads, split_heads
from transformer_nb.core.rope import RoPE, _turn, apply_rope, rope_frequencies
from transformer_nb.reference import half_permutation, rope_matrix


def test_score_depends_only_on_the_offset():
    g = torch.Generator().manual_seed(0)
    for _ in range(200):
        d = int(torch.randint(1, 33, (1,), generator=g)) * 2
        q, k = torch.randn(2, 1, d, generator=g, dtype=torch.float64)
        m, n, s = (int(v) for v in torch.randint(0, 5000, (3,), generator=g))
        a = apply_rope(q, [m]) @ apply_rope(k, [n]).T
        b = apply_rope(q, [m + s]) @ apply_rope(k, [n + s]).T
        c = q[0] @ rope_matrix(n - m, d) @ k[0]
        assert abs(a - b).item() < 1e-9 and abs(a - c).item() < 1e-9


def test_norms_are_preserved_and_rotations_form_a_group():
    x = torch.randn(10, 1, 32, dtype=torch.float64)
    assert torch.allclose(apply_rope(x, [777]).norm(dim=-1), x.norm(dim=-1), atol=1e-12)
    for m, n in ((3, 9), (100, 5), (0, 0)):
        Rm, Rn = rope_matrix(m, 32), rope_matrix(n, 32)
        assert torch.allclose(Rm.T @ Rn, rope_matrix(n - m, 32), atol=1e-12)
        assert torch.allclose(Rm.T @ Rm, torch.eye(32, dtype=torch.float64), atol=1e-12)


def test_matches_the_complex_number_form():
    x = torch.randn(20, 16, dtype=torch.float64)
    z = torch.view_as_complex(x.reshape(20, 8, 2).contiguous())
    turn = torch.polar(torch.ones(20, 8, dtype=torch.float64), torch.arange(20)[:, None] * rope_frequencies(16))
    assert torch.allclose(apply_rope(x), torch.view_as_real(z * turn).reshape(20, 16), atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_matches_the_real_rotation_formula(dtype):
    """_turn (a complex product) against (x1 cos - x2 sin, x1 sin + x2 cos) written out."""
    x = torch.randn(3, 7, 16, dtype=torch.float64)
    ang = torch.rand(7, 8, dtype=torch.float64) * 6
    x1, x2 = x[..., 0::2], x[..., 1::2]
    ref = torch.stack((x1 * ang.cos() - x2 * ang.sin(), x1 * ang.sin() + x2 * ang.cos()), -1).flatten(-2)
    turn = torch.polar(torch.ones_like(ang), ang).to(torch.complex128 if dtype == torch.float64 else torch.complex64)
    out = _turn(x.to(dtype), turn, "interleaved")
    assert out.dtype == dtype
    assert torch.allclose(out.double(), ref, atol={torch.bfloat16: 3e-2, torch.float32: 1e-5}.get(dtype, 1e-12))
    half = _turn(x[..., half_permutation(16)].to(dtype), turn, "half")
    assert torch.allclose(half.double(), ref[..., half_permutation(16)], atol={torch.bfloat16: 3e-2}.get(dtype, 1e-5))


def test_inside_attention_and_a_kv_cache_step():
    torch.manual_seed(2)
    mha = MultiHeadAttention(32, 4).eval()
    rope = RoPE(8, max_len=64)
    x = torch.randn(2, 9, 32)
    with torch.no_grad():
        out = mha(x, is_causal=True, rope=rope)
        q, k, v = (split_heads(p(x), 4) for p in (mha.q_proj, mha.k_proj, mha.v_proj))
        ref = mha.out_proj(merge_heads(F.scaled_dot_product_attention(apply_rope(q), apply_rope(k), v, is_causal=True)))
    assert torch.allclose(out, ref, atol=1e-5)


def test_encoder_layer_with_rope_is_shift_invariant():
    torch.manual_seed(3)
    layer = EncoderLayer(TransformerConfig(d_model=32, n_heads=4, d_ff=64)).eval()
    x = torch.randn(2, 6, 32)
    with torch.no_grad():
        a = layer(x, is_causal=True, rope=RoPE(8))
        b = layer(x, is_causal=True, rope=RoPE(8).at(q_offset=50, k_offset=50))
    assert a.shape == (2, 6, 32) and torch.allclose(a, b, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_is_rotated_in_float32_and_returned_in_its_dtype(dtype):
    rope, x = RoPE(8, 64), torch.randn(2, 3, 5, 8)
    out = rope.rotate(x.to(dtype), offset=7)
    assert out.dtype == dtype and not list(rope.parameters())
    assert torch.allclose(out.float(), rope.rotate(x.to(dtype).float(), offset=7), atol=1e-2)
