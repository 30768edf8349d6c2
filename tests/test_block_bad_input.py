"""Bad input to the block module raises a clear error (type and message).

The blocks are built from a ``TransformerConfig``, which refuses impossible sizes, norms, activations, dropout
and eps when it is made; a block refuses what is not a configuration, and bad inputs to ``forward``."""

import pytest
import torch
import torch.nn as nn

from transformer_nb.core.block import (
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    make_norm,
)
from transformer_nb.core.config import TransformerConfig
from transformer_nb.experiments import build_stack, layer_grad_norms, markov_batches, token_diversity, train_toy_lm
from transformer_nb.interop import copy_from_torch, to_torch
from transformer_nb.params import swiglu_hidden_size
from transformer_nb.probes import trace_shapes
from transformer_nb.reference import layer_norm, rms_norm


def cfg(d_model=16, n_heads=2, d_ff=32, **fields) -> TransformerConfig:
    return TransformerConfig(d_model=d_model, n_heads=n_heads, d_ff=d_ff, **fields)


@pytest.mark.parametrize("build", [make_norm, FeedForward, EncoderLayer, DecoderLayer])
def test_blocks_take_a_config_not_sizes(build):
    with pytest.raises(TypeError, match="expected a TransformerConfig .* got int"):
        build(16)


def test_unknown_norm():
    with pytest.raises(ValueError, match=r"norm must be one of \('layer', 'rms'\), got 'batch'"):
        cfg(norm="batch")


def test_norm_width_must_be_positive():
    with pytest.raises(ValueError, match="d_model must be >= 1, got 0"):
        cfg(d_model=0)


def test_unknown_activation():
    with pytest.raises(ValueError, match=r"activation must be one of \('relu', 'gelu', 'swiglu'\), got 'tanh'"):
        cfg(activation="tanh")


@pytest.mark.parametrize("d_ff", [0, -4, 2.5, True])
def test_ffn_width_must_be_positive_int(d_ff):
    with pytest.raises(ValueError, match="d_ff .* must be a positive integer"):
        cfg(d_ff=d_ff)


def test_copy_from_torch_mismatches():
    t = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)  # Post-LN, relu, eps 1e-5
    post = cfg(norm_first=False, activation="relu")  # torch's layer: each case below differs from it in one setting
    with pytest.raises(ValueError, match="norm placement differs"):
        copy_from_torch(EncoderLayer(cfg(activation="relu")), t)
    with pytest.raises(ValueError, match="activation differs"):
        copy_from_torch(EncoderLayer(post.with_(activation="gelu")), t)
    with pytest.raises(ValueError, match="eps differs"):
        copy_from_torch(EncoderLayer(post.with_(eps=1e-6)), t)
    with pytest.raises(ValueError, match="FFN shapes differ"):
        copy_from_torch(EncoderLayer(post.with_(d_ff=64)), t)
    with pytest.raises(ValueError, match="uses RMSNorm"):
        copy_from_torch(EncoderLayer(post.with_(norm="rms")), t)
    with pytest.raises(ValueError, match="residual=False"):
        copy_from_torch(EncoderLayer(post, residual=False), t)
    with pytest.raises(TypeError, match="pairs with an nn.TransformerDecoderLayer"):
        copy_from_torch(DecoderLayer(post), t)
    with pytest.raises(TypeError, match="expected one of MultiHeadAttention, EncoderLayer"):
        copy_from_torch(nn.Linear(2, 2), t)


def test_to_torch_refuses_what_torch_cannot_express():
    with pytest.raises(ValueError, match="no SwiGLU"):
        to_torch(EncoderLayer(cfg(activation="swiglu")))
    with pytest.raises(ValueError, match="uses RMSNorm"):
        to_torch(EncoderLayer(cfg(norm="rms")))
    with pytest.raises(ValueError, match="GQA/MQA"):
        to_torch(EncoderLayer(cfg(n_heads=4, n_kv_heads=2)))
    with pytest.raises(TypeError, match="expected one of MultiHeadAttention, EncoderLayer"):
        to_torch(nn.Linear(2, 2))


def test_swiglu_hidden_size_bad_args():
    with pytest.raises(ValueError, match="multiple_of must be >= 1"):
        swiglu_hidden_size(512, 0)
    with pytest.raises(ValueError, match="ffn_dim_multiplier must be positive"):
        swiglu_hidden_size(512, 256, -1.0)


def test_experiment_helpers_bad_args():
    with pytest.raises(ValueError, match="depth must be >= 1, got 0"):
        build_stack(0)
    with pytest.raises(ValueError, match="seeds must name at least one seed"):
        layer_grad_norms(2, seeds=())
    with pytest.raises(ValueError, match="warmup must be >= 0, got -5"):
        train_toy_lm(2, True, 1e-3, -5, 3)
    with pytest.raises(ValueError, match="fewer than steps=5"):
        train_toy_lm(2, True, 1e-3, 0, 5, data=markov_batches(2))
    with pytest.raises(ValueError, match="vocab must be >= 1"):
        markov_batches(2, vocab=0)
    with pytest.raises(TypeError, match="must be an nn.Module"):
        trace_shapes(lambda x: x, 1)


def test_written_out_norms_check_their_arguments():
    x = torch.randn(2, 3, 8)
    with pytest.raises(TypeError, match="floating-point tensor"):
        layer_norm(torch.ones(2, 3, dtype=torch.long))
    with pytest.raises(TypeError, match="floating-point tensor"):
        rms_norm([1.0, 2.0])
    with pytest.raises(ValueError, match=r"weight must have shape \(d,\) = \(8,\), got \(3,\)"):
        layer_norm(x, torch.ones(3))
    with pytest.raises(ValueError, match="bias must have shape"):
        layer_norm(x, torch.ones(8), torch.ones(8, 1))
    with pytest.raises(ValueError, match="eps must be a positive finite number"):
        layer_norm(x, eps=0.0)
    with pytest.raises(ValueError, match="eps must be a positive finite number"):
        rms_norm(x, eps=float("nan"))


@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan"), float("inf"), "1e-5"])
def test_norm_eps_must_be_positive_and_finite(eps):
    with pytest.raises(ValueError, match="eps must be a positive finite number"):
        cfg(eps=eps)


def test_blocks_check_their_input():
    with pytest.raises(ValueError, match=r"FeedForward input x must have shape \(\.\.\., d_model=16\)"):
        FeedForward(cfg())(torch.randn(2, 3, 8))
    with pytest.raises(TypeError, match="floating-point"):
        FeedForward(cfg())(torch.ones(2, 3, 16, dtype=torch.long))
    with pytest.raises(ValueError, match="dropout is a probability"):
        cfg(dropout=1.5)
    with pytest.raises(ValueError, match=r"EncoderLayer input x must have shape \(B, T, d_model=16\), got \(2, 5, 8\)"):
        EncoderLayer(cfg())(torch.randn(2, 5, 8))
    with pytest.raises(ValueError, match=r"got \(5, 16\)"):
        EncoderLayer(cfg())(torch.randn(5, 16))
    with pytest.raises(ValueError, match=r"memory \(the encoder output\) must have shape"):
        DecoderLayer(cfg())(torch.randn(2, 5, 16), torch.randn(2, 4, 8))
    with pytest.raises(ValueError, match="ffn_dim_multiplier must be positive and finite"):
        swiglu_hidden_size(64, 8, float("inf"))


def test_experiments_check_their_data():
    with pytest.raises(ValueError, match="data must be what markov_batches returns"):
        train_toy_lm(1, True, 1e-3, 0, 2, data=(1, 2, 3))
    with pytest.raises(ValueError, match="lr must be a positive finite number"):
        train_toy_lm(1, True, float("nan"), 0, 2)
    with pytest.raises(ValueError, match="sharpness must be a finite number"):
        markov_batches(2, sharpness=float("inf"))
    with pytest.raises(ValueError, match="floating-point"):
        token_diversity(torch.ones(2, 3, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="NaN or inf"):
        token_diversity(torch.full((2, 3, 4), float("nan")))
