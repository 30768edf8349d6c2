"""The block's residual switch, shape tracing, SwiGLU widths and notebook 06's experiments behave as it says."""

import pytest
import torch

from transformer_nb.core.block import EncoderLayer
from transformer_nb.core.config import TransformerConfig
from transformer_nb.experiments import layer_grad_norms, markov_batches, stream_stats, token_diversity, train_toy_lm
from transformer_nb.params import swiglu_hidden_size

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def test_swiglu_widths_of_published_models():
    assert swiglu_hidden_size(4096) == 11008  # LLaMA-7B
    assert swiglu_hidden_size(8192, 4096, 1.3) == 28672  # LLaMA-2-70B
    assert swiglu_hidden_size(5120) == 13824  # LLaMA-13B


def test_residual_switch():
    torch.manual_seed(0)
    cfg = TransformerConfig(d_model=16, n_heads=2, d_ff=32)
    on, off = EncoderLayer(cfg), EncoderLayer(cfg, residual=False)
    off.load_state_dict(on.state_dict())
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        # Pre-LN: out = x + a + f(x + a); without the residual: out = f'(a) with a = attn(LN(x))
        a = on.self_attn(on.norm1(x))
        assert torch.allclose(off(x), on.ff(on.norm2(a)), atol=1e-6)
        h = x + a
        assert torch.allclose(on(x), h + on.ff(on.norm2(h)), atol=1e-6)


def test_depth_experiment_directions():
    g = {(nf, res): layer_grad_norms(12, nf, res, seeds=(0, 1)) for nf in (True, False) for res in (True, False)}
    post, pre = g[False, True]["param"], g[True, True]["param"]
    assert post.shape == (12,) and g[True, True]["input"].shape == (12,)
    assert post[-1] > post[0]  # Post-LN: largest gradients next to the output
    assert pre[-1] < pre[0]  # Pre-LN: the opposite
    nores = g[True, False]["param"]
    assert nores[0] > 0.5 * nores[-1]  # no vanishing at initialisation
    s = {(nf, res): stream_stats(12, nf, res) for nf in (True, False) for res in (True, False)}
    assert s[True, False]["diversity"][-1] < 1e-4 and s[True, True]["diversity"][-1] > 0.1
    assert abs(float(s[False, True]["rms"][-1]) - 1.0) < 1e-3


def test_token_diversity_extremes():
    x = torch.randn(1, 5, 8)
    assert abs(token_diversity(x.mean(1, keepdim=True).expand(1, 5, 8))) < 1e-12
    assert token_diversity(x - x.mean(1, keepdim=True)) > 0.999


def test_toy_training_runs_and_learns_with_pre_ln():
    data = markov_batches(30, batch=8, seq_len=8, vocab=16)
    losses = train_toy_lm(2, True, 3e-3, 0, 30, data=data)
    assert len(losses) == 30 and all(v == v for v in losses)
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5
    assert 0 < data[2] < torch.log(torch.tensor(16.0))
