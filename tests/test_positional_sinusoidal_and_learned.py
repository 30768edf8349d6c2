"""Sinusoidal and learned positions: the properties the notebooks rely on (every row the same norm, similarity
a function of the offset) and the parameter counts."""

import math

import torch

from transformer_nb.core.positional import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    sinusoidal_encoding,
)


def test_every_row_has_norm_sqrt_half_d():
    pe = sinusoidal_encoding(300, 64)
    assert torch.allclose(pe.norm(dim=1), torch.full((300,), math.sqrt(32)), atol=1e-5)


def test_cosine_similarity_depends_exactly_on_the_offset():
    pe = sinusoidal_encoding(128, 32).double()
    u = pe / pe.norm(dim=-1, keepdim=True)
    sim = u @ u.T
    for k in range(128):
        assert (sim.diagonal(k) - sim[0, k]).abs().max() < 1e-6


def test_only_the_learned_table_has_parameters():
    """(The formula, the offset and every refusal: tests/test_properties_positional.py, tests/test_badinput_core.py.)"""
    assert sum(p.numel() for p in LearnedPositionalEmbedding(20, 8).parameters()) == 20 * 8
    assert sum(p.numel() for p in SinusoidalPositionalEncoding(8, max_len=20).parameters()) == 0
