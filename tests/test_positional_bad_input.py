"""Bad input to transformer_nb.core.positional gets a clear error that names the argument (issue 18):
before, ``alibi_bias(2.5, 4)`` was accepted, an integer dtype truncated the bias to zeros, an integer
``x`` was shifted by a truncated table, and fractional sizes or offsets crashed deep inside torch."""

import math

import pytest
import torch

from transformer_nb.core.positional import (
    ALiBi,
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    alibi_bias,
    alibi_slopes,
    embedding_scale,
    sinusoid_frequencies,
    sinusoidal_encoding,
)

SPE = SinusoidalPositionalEncoding(8, max_len=16)
LPE = LearnedPositionalEmbedding(16, 8)
X = torch.zeros(1, 4, 8)


@pytest.mark.parametrize(
    "fn,exc,words",
    [
        (lambda: alibi_bias(2.5, 4), TypeError, "T_q must be an int"),
        (lambda: alibi_bias(3, 4, t_k=4.5), TypeError, "T_k must be an int"),
        (lambda: alibi_bias(True, 4), TypeError, "T_q must be an int"),
        (lambda: alibi_bias(-1, 4), ValueError, "T_q must be >= 0"),
        (lambda: alibi_bias(3, 4, dtype=torch.int64), TypeError, "dtype must be a floating torch.dtype"),
        (lambda: alibi_bias(3, 4, dtype=torch.bool), TypeError, "dtype must be a floating torch.dtype"),
        (lambda: alibi_bias(3, 4, device="nowhere"), ValueError, "device must be one of"),
        (lambda: alibi_bias(10**6, 8), ValueError, "an ALiBi bias of n_heads=8"),
        (lambda: alibi_bias(3, 2.0), TypeError, "n_heads must be an int"),
        (lambda: alibi_slopes(10**12), ValueError, "ALiBi slopes for n_heads"),
        (lambda: alibi_slopes(0), ValueError, "n_heads must be >= 1"),
        (lambda: ALiBi(True), TypeError, "n_heads must be an int"),
        (lambda: ALiBi(4)(1.5), TypeError, "T_q must be an int"),
        (lambda: sinusoidal_encoding(2.5, 4), TypeError, "n_positions must be an int"),
        (lambda: sinusoidal_encoding(-1, 4), ValueError, "n_positions must be >= 0"),
        (lambda: sinusoidal_encoding(3, 4, base=True), TypeError, "base must be a real number"),
        (lambda: sinusoidal_encoding(3, 4, base="1e4"), TypeError, "base must be a real number"),
        (lambda: sinusoidal_encoding(3, 4, base=math.nan), ValueError, "base must be a finite positive number"),
        (lambda: sinusoidal_encoding(3, 4, base=math.inf), ValueError, "base must be a finite positive number"),
        (lambda: sinusoidal_encoding(3, 4, base=0), ValueError, "base must be a finite positive number"),
        (lambda: sinusoidal_encoding(10**12, 512), ValueError, "a sinusoidal table of n_positions"),
        (lambda: sinusoid_frequencies(4.0), ValueError, "d_model must be a positive even integer"),
        (lambda: sinusoid_frequencies(True), ValueError, "d_model must be a positive even integer"),
        (lambda: sinusoid_frequencies(10**12), ValueError, "500000000000 frequencies would need"),
        (lambda: SinusoidalPositionalEncoding(8, max_len=0), ValueError, "max_len must be >= 1"),
        (lambda: SinusoidalPositionalEncoding(8, max_len=10.0), TypeError, "max_len must be an int"),
        (lambda: SinusoidalPositionalEncoding(7), ValueError, "d_model must be a positive even integer"),
        (lambda: SPE(X, offset=1.5), TypeError, "offset must be an int"),
        (lambda: SPE(X, offset=True), TypeError, "offset must be an int"),
        (lambda: SPE(X, offset=-1), ValueError, "offset must be >= 0"),
        (lambda: SPE(X.long()), TypeError, "x must be a floating-point tensor"),
        (lambda: SPE(X.tolist()), TypeError, "expects x as a torch.Tensor"),
        (lambda: SPE(torch.zeros(4, 8)), ValueError, "expects x of shape (B, T, d_model=8)"),
        (lambda: LearnedPositionalEmbedding(2.5, 4), TypeError, "max_len must be an int"),
        (lambda: LearnedPositionalEmbedding(16, 0), ValueError, "d_model must be >= 1"),
        (lambda: LPE(X, offset=0.5), TypeError, "offset must be an int"),
        (lambda: LPE(X.int()), TypeError, "x must be a floating-point tensor"),
        (lambda: LPE(torch.zeros(1, 17, 8)), ValueError, "exceed the learned position table of max_len=16"),
        (lambda: embedding_scale(-1), ValueError, "d_model must be >= 1"),
        (lambda: embedding_scale(64.0), TypeError, "d_model must be an int"),
    ],
)
def test_bad_input_raises_clear_error(fn, exc, words):
    with pytest.raises(exc) as info:
        fn()
    assert words in str(info.value)


def test_valid_edge_cases_give_correct_results():
    assert alibi_bias(0, 2).shape == (2, 0, 0)
    assert alibi_bias(torch.tensor(3), 2).shape == (2, 3, 3)  # a 0-d int tensor is an int
    assert sinusoidal_encoding(0, 4).shape == (0, 4)
    assert SPE(X, offset=torch.tensor(2)).shape == X.shape
    half = LPE(X.to(torch.bfloat16))
    assert half.dtype == torch.bfloat16  # the output keeps x's dtype (before: float32)
    assert embedding_scale(64) == 8.0


def test_an_empty_alibi_bias_with_a_huge_key_length_is_refused_before_allocating():
    """Found by the deep property profile: T_q = 0 made the bias empty, but the key positions
    (T_k of them) were still allocated: 8 TB for T_k = 10**12, a crash in the allocator."""
    with pytest.raises(ValueError, match="T_k=1000000000000"):
        alibi_bias(0, 1, 10**12)
