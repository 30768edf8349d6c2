"""LayerNorm and RMSNorm written out (reference.layer_norm, reference.rms_norm) equal nn.LayerNorm and nn.RMSNorm."""

import pytest
import torch
import torch.nn as nn

from transformer_nb.core.block import make_norm
from transformer_nb.core.config import TransformerConfig
from transformer_nb.reference import layer_norm, rms_norm


@pytest.mark.parametrize("dtype,atol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize("eps", [1e-5, 1e-6, 1e-12, 0.1])
def test_layer_norm_equals_torch(dtype, atol, eps):
    g = torch.Generator().manual_seed(0)
    x = 3 + 2 * torch.randn(2, 5, 24, generator=g, dtype=dtype)
    ln = nn.LayerNorm(24, eps=eps, dtype=dtype)
    with torch.no_grad():
        ln.weight.copy_(1 + 0.3 * torch.randn(24, generator=g, dtype=dtype))
        ln.bias.copy_(0.3 * torch.randn(24, generator=g, dtype=dtype))
    assert torch.allclose(layer_norm(x, ln.weight, ln.bias, eps), ln(x), atol=atol)


@pytest.mark.parametrize("dtype,atol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize("eps", [None, 1e-6, 1e-5, 0.1])
def test_rms_norm_equals_torch(dtype, atol, eps):
    g = torch.Generator().manual_seed(1)
    x = 1 + torch.randn(3, 4, 16, generator=g, dtype=dtype)
    rms = nn.RMSNorm(16, eps=eps, dtype=dtype)
    with torch.no_grad():
        rms.weight.copy_(1 + 0.3 * torch.randn(16, generator=g, dtype=dtype))
    assert torch.allclose(rms_norm(x, rms.weight, eps), rms(x), atol=atol)


def test_norm_properties_and_counts():
    x = torch.randn(4, 8, 32, dtype=torch.float64)
    z = layer_norm(x)
    assert torch.allclose(z.mean(-1), torch.zeros(4, 8, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(z.var(-1, unbiased=False), torch.ones(4, 8, dtype=torch.float64), atol=1e-4)
    c = x - x.mean(-1, keepdim=True)
    assert torch.allclose(rms_norm(c, eps=1e-5), layer_norm(c, eps=1e-5), atol=1e-12)
    assert sum(p.numel() for p in make_norm(TransformerConfig(d_model=32)).parameters()) == 64
    assert sum(p.numel() for p in make_norm(TransformerConfig(d_model=32, norm="rms")).parameters()) == 32
    rms = make_norm(TransformerConfig(d_model=8, n_heads=1, norm="rms", eps=1e-6))
    assert isinstance(rms, nn.RMSNorm) and rms.eps == 1e-6
