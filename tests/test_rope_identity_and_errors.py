"""RoPE: the relative-position identity, norm preservation, the group property, the two pairings
(one rotation up to a permutation), agreement with the complex-number form, use inside the
package's attention (incl. a KV-cache step), and clear errors for bad input."""

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


def test_exercise_8_10_pairs_give_equal_scores():
    torch.manual_seed(1)
    mha = MultiHeadAttention(16, 2)
    x = torch.randn(1, 1, 16).expand(1, 32, 16).double()
    mha = mha.double()
    q, k = RoPE(8, max_len=32)(split_heads(mha.q_proj(x), 2), split_heads(mha.k_proj(x), 2))
    s = (q @ k.transpose(-2, -1))[0]
    assert torch.allclose(s[:, 5, 12], s[:, 10, 17], atol=1e-12)


def test_norms_are_preserved_and_rotations_form_a_group():
    x = torch.randn(10, 1, 32, dtype=torch.float64)
    assert torch.allclose(apply_rope(x, [777]).norm(dim=-1), x.norm(dim=-1), atol=1e-12)
    for m, n in ((3, 9), (100, 5), (0, 0)):
        Rm, Rn = rope_matrix(m, 32), rope_matrix(n, 32)
        assert torch.allclose(Rm.T @ Rn, rope_matrix(n - m, 32), atol=1e-12)
        assert torch.allclose(Rm.T @ Rm, torch.eye(32, dtype=torch.float64), atol=1e-12)


def test_half_pairing_is_interleaved_up_to_a_permutation():
    for d in (2, 8, 64):
        p = half_permutation(d)
        x = torch.randn(3, 11, d, dtype=torch.float64)
        assert torch.allclose(apply_rope(x[..., p], pairing="half"), apply_rope(x)[..., p], atol=1e-12)


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


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_module_matches_functional_in_float32_and_float64(pairing):
    rope = RoPE(16, max_len=100, pairing=pairing)
    x = torch.randn(2, 3, 10, 16)
    assert torch.allclose(rope.rotate(x, offset=40), apply_rope(x, torch.arange(40, 50), pairing=pairing), atol=1e-5)
    assert torch.allclose(rope.rotate(x.double(), 40), apply_rope(x.double(), torch.arange(40, 50), pairing=pairing))
    assert sum(p.numel() for p in rope.parameters()) == 0


def test_inside_attention_and_a_kv_cache_step():
    torch.manual_seed(2)
    mha = MultiHeadAttention(32, 4).eval()
    rope = RoPE(8, max_len=64)
    x = torch.randn(2, 9, 32)
    with torch.no_grad():
        out = mha(x, is_causal=True, rope=rope)
        q, k, v = (split_heads(p(x), 4) for p in (mha.q_proj, mha.k_proj, mha.v_proj))
        ref = mha.out_proj(merge_heads(F.scaled_dot_product_attention(apply_rope(q), apply_rope(k), v, is_causal=True)))
        step = mha(x[:, -1:], x, x, is_causal=True, rope=rope.at(q_offset=8))
    assert torch.allclose(out, ref, atol=1e-5)
    assert torch.allclose(step[:, 0], out[:, -1], atol=1e-5)


def test_encoder_layer_with_rope_is_shift_invariant():
    torch.manual_seed(3)
    layer = EncoderLayer(TransformerConfig(d_model=32, n_heads=4, d_ff=64)).eval()
    x = torch.randn(2, 6, 32)
    with torch.no_grad():
        a = layer(x, is_causal=True, rope=RoPE(8))
        b = layer(x, is_causal=True, rope=RoPE(8).at(q_offset=50, k_offset=50))
    assert a.shape == (2, 6, 32) and torch.allclose(a, b, atol=1e-4)


@pytest.mark.parametrize("d", [7, 0, -2])
def test_odd_or_non_positive_d_head_raises(d):
    with pytest.raises(ValueError, match="d_head must be a positive even integer"):
        RoPE(d)


def test_odd_last_dimension_in_apply_rope_raises():
    with pytest.raises(ValueError, match="last dimension of x must be a positive even integer"):
        apply_rope(torch.zeros(4, 5))


def test_position_beyond_max_len_raises():
    rope = RoPE(8, max_len=16)
    rope.rotate(torch.zeros(1, 16, 8))
    with pytest.raises(ValueError, match=r"positions 0\.\.16 exceed RoPE's table of max_len=16"):
        rope.rotate(torch.zeros(1, 17, 8))
    with pytest.raises(ValueError, match=r"positions 15\.\.16 exceed .* max_len=16"):
        rope(torch.zeros(1, 1, 8), torch.zeros(1, 2, 8), k_offset=15)
    with pytest.raises(ValueError, match=r"offset must be >= 0, got -1"):
        rope.rotate(torch.zeros(1, 1, 8), offset=-1)


def test_unknown_pairing_raises():
    with pytest.raises(ValueError, match=r"pairing must be one of \('interleaved', 'half'\)"):
        RoPE(8, pairing="neox")
    with pytest.raises(ValueError, match="pairing must be one of"):
        apply_rope(torch.zeros(3, 8), pairing="rotate_half")


def test_wrong_head_size_and_positions_raise():
    with pytest.raises(ValueError, match=r"RoPE\(d_head=8\) expects x of shape \(\.\.\., T, 8\)"):
        RoPE(8).rotate(torch.zeros(2, 3, 6))
    with pytest.raises(ValueError, match=r"positions must have shape \(T,\) = \(4,\)"):
        apply_rope(torch.zeros(4, 8), torch.arange(5))


@pytest.mark.parametrize(
    "max_len,exc,words",
    [
        (0, ValueError, "max_len must be >= 1"),
        (-5, ValueError, "max_len must be >= 1"),
        (3.5, TypeError, "max_len must be an int"),
    ],
)
def test_bad_max_len_raises(max_len, exc, words):
    with pytest.raises(exc, match=words):
        RoPE(8, max_len=max_len)


def test_integer_tensors_are_refused_not_truncated():
    """Issue 18: RoPE on an integer tensor returned zeros (module) or truncated values (apply_rope)."""
    ids = torch.arange(16).view(2, 8)
    with pytest.raises(TypeError, match="x must be a floating-point tensor, got a torch.int64 tensor"):
        RoPE(8).rotate(ids)
    with pytest.raises(TypeError, match="q must be a floating-point tensor"):
        RoPE(8)(ids, ids.float())
    with pytest.raises(TypeError, match="x must be a floating-point tensor"):
        apply_rope(ids)


@pytest.mark.parametrize("offset", [1.5, 2.0, "3", None, True])
def test_a_fractional_or_non_int_offset_is_refused(offset):
    """Issue 18: a fractional offset crashed obscurely (slicing with a float)."""
    with pytest.raises(TypeError, match="offset must be an int"):
        RoPE(8).rotate(torch.zeros(1, 2, 8), offset=offset)


def test_bad_bases_are_refused():
    with pytest.raises(TypeError, match="base must be a real number"):
        rope_frequencies(4, base=None)
    with pytest.raises(ValueError, match="base must be a finite positive number"):
        rope_frequencies(4, base=-1.0)


def test_frequencies_larger_than_memory_are_refused_before_allocating():
    with pytest.raises(ValueError, match="500000000000 frequencies would need"):
        rope_frequencies(10**12)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_is_rotated_in_float32_and_returned_in_its_dtype(dtype):
    rope, x = RoPE(8, 64), torch.randn(2, 3, 5, 8)
    out = rope.rotate(x.to(dtype), offset=7)
    assert out.dtype == dtype
    assert torch.allclose(out.float(), rope.rotate(x.to(dtype).float(), offset=7), atol=1e-2)
