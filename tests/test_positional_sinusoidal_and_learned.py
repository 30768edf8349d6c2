"""Sinusoidal and learned positions: the formula, the properties the notebooks rely on, and clear
errors for bad input (odd d_model, sequences past the table, with and without an offset)."""

import math

import pytest
import torch

from transformer_nb.core.positional import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    sinusoid_frequencies,
    sinusoidal_encoding,
)


def test_sinusoidal_matches_the_formula():
    pe = sinusoidal_encoding(50, 16).double()
    for p in (0, 1, 7, 49):
        for i in range(8):
            angle = p / 10000 ** (2 * i / 16)
            assert math.isclose(pe[p, 2 * i].item(), math.sin(angle), abs_tol=1e-6)
            assert math.isclose(pe[p, 2 * i + 1].item(), math.cos(angle), abs_tol=1e-6)


def test_every_row_has_norm_sqrt_half_d():
    pe = sinusoidal_encoding(300, 64)
    assert torch.allclose(pe.norm(dim=1), torch.full((300,), math.sqrt(32)), atol=1e-5)


def test_cosine_similarity_depends_exactly_on_the_offset():
    pe = sinusoidal_encoding(128, 32).double()
    u = pe / pe.norm(dim=-1, keepdim=True)
    sim = u @ u.T
    for k in range(128):
        assert (sim.diagonal(k) - sim[0, k]).abs().max() < 1e-6


def test_modules_add_the_table_with_offset():
    x = torch.randn(2, 5, 8)
    spe = SinusoidalPositionalEncoding(8, max_len=20)
    assert torch.allclose(spe(x, offset=3), x + sinusoidal_encoding(20, 8)[3:8])
    lpe = LearnedPositionalEmbedding(20, 8)
    assert torch.allclose(lpe(x, offset=3), x + lpe.emb.weight[3:8])
    assert sum(p.numel() for p in lpe.parameters()) == 20 * 8
    assert sum(p.numel() for p in spe.parameters()) == 0


@pytest.mark.parametrize("d", [7, 1, 0, -4])
def test_odd_or_non_positive_d_model_is_refused(d):
    with pytest.raises(ValueError, match="even"):
        sinusoid_frequencies(d)
    if d % 2:
        with pytest.raises(ValueError, match="d_model must be a positive even integer"):
            sinusoidal_encoding(10, d)
        with pytest.raises(ValueError, match="d_model must be a positive even integer"):
            SinusoidalPositionalEncoding(d, max_len=10)


def test_negative_length_is_refused():
    with pytest.raises(ValueError, match="n_positions must be >= 0"):
        sinusoidal_encoding(-1, 8)


@pytest.mark.parametrize("module", [SinusoidalPositionalEncoding(8, max_len=16), LearnedPositionalEmbedding(16, 8)])
def test_length_beyond_the_table_raises(module):
    assert module(torch.zeros(1, 16, 8)).shape == (1, 16, 8)
    with pytest.raises(ValueError, match=r"positions 0\.\.16 exceed .* max_len=16"):
        module(torch.zeros(1, 17, 8))


@pytest.mark.parametrize("module", [SinusoidalPositionalEncoding(8, max_len=16), LearnedPositionalEmbedding(16, 8)])
def test_offset_past_the_table_raises(module):
    assert module(torch.zeros(1, 4, 8), offset=12).shape == (1, 4, 8)
    with pytest.raises(ValueError, match=r"positions 13\.\.16 exceed .* max_len=16"):
        module(torch.zeros(1, 4, 8), offset=13)
    with pytest.raises(ValueError, match=r"offset must be >= 0, got -1"):
        module(torch.zeros(1, 4, 8), offset=-1)


@pytest.mark.parametrize("module", [SinusoidalPositionalEncoding(8, max_len=16), LearnedPositionalEmbedding(16, 8)])
def test_wrong_input_shape_raises(module):
    with pytest.raises(ValueError, match=r"expects x of shape \(B, T, d_model=8\)"):
        module(torch.zeros(1, 4, 6))
    with pytest.raises(ValueError, match=r"expects x of shape"):
        module(torch.zeros(4, 8))
