"""LayerNorm and RMSNorm written out (reference.layer_norm, reference.rms_norm) equal nn.LayerNorm and nn.RMSNorm."""

import torch
import torch.nn as nn

from transformer_nb.core.block import make_norm
from transformer_nb.core.config import TransformerConfig
from transformer_nb.reference import layer_norm, rms_norm


def test_norm_properties_and_counts():
    x = torch.randn(4, 8, 32, dtype=torch.float64)
    z = layer_norm(x)
    assert torch.allclose(z.mean(-1), torch.zeros(4, 8, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(z.var(-1, unbiased=False), torch.ones(4, 8, dtype=torch.float64), atol=1e-4)
    c = x - x.mean(-1, keepdim=True)
    assert torch.allclose(rms_norm(c, eps=1e-5), layer_norm(c, eps=1e-5), atol=1e-12)
    rms = make_norm(TransformerConfig(d_model=8, n_heads=1, norm="rms", eps=1e-6))
    assert isinstance(rms, nn.RMSNorm) and rms.eps == 1e-6
