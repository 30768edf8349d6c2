"""Pre-LN and Post-LN encoder blocks equal nn.TransformerEncoderLayer with copied weights, outputs and gradients
(the decoder block and both copying directions: tests/test_models_match_torch_transformer.py, a stack of them)."""

import pytest
import torch
import torch.nn as nn

from transformer_nb.core.block import EncoderLayer
from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.masks import causal_mask, key_padding, padding_mask
from transformer_nb.interop import copy_from_torch, to_torch

D, H, FF, T = 32, 4, 64, 7
CFG = TransformerConfig(d_model=D, n_heads=H, d_ff=FF, activation="relu")  # torch's layers default to ReLU


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("masks", ["none", "padding", "causal", "both"])
def test_encoder_layer_equals_torch(norm_first, activation, masks):
    torch.manual_seed(0)
    theirs = nn.TransformerEncoderLayer(
        D, H, FF, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    )
    ours = copy_from_torch(EncoderLayer(CFG.with_(norm_first=norm_first, activation=activation)), theirs)
    x = torch.randn(2, T, D)
    keep = padding_mask([T, 4], T)
    mask, kw = None, {}
    if masks in ("padding", "both"):
        mask, kw["src_key_padding_mask"] = key_padding(keep, T), ~keep
    if masks in ("causal", "both"):
        c = causal_mask(T)
        mask = c if mask is None else mask & c
        kw["src_mask"], kw["is_causal"] = ~c, True
    real = keep[..., None] if masks in ("padding", "both") else torch.ones(2, T, 1, dtype=torch.bool)
    y_ours = ours(x, mask=mask, is_causal=masks in ("causal", "both"))
    y_theirs = theirs(x, **kw)
    assert torch.allclose(y_ours * real, y_theirs * real, atol=1e-5)
    # gradients agree too (train mode, dropout 0)
    g_ours = torch.autograd.grad((ours(x) ** 2).sum(), ours.ff.linear1.weight)[0]
    g_theirs = torch.autograd.grad((theirs(x) ** 2).sum(), theirs.linear1.weight)[0]
    assert torch.allclose(g_ours, g_theirs, atol=1e-4)


def test_eps_is_carried_by_to_torch():
    ours = EncoderLayer(CFG.with_(eps=1e-6))
    assert to_torch(ours).norm1.eps == 1e-6
