"""Where an exercise asks for a from-scratch version (8.5 attention, 8.6 multi-head attention and its heads,
8.8 Pre-LN blocks, 8.10 RoPE, and the capstone's steps 3 and 4), the package's own implementation, PyTorch's
ready-made one, and thin wrappers around them are refused with a message that names what was called and why;
the tripwires are gone afterwards (the package's functions work as before), even when the answer crashed."""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.core.attention import scaled_dot_product_attention
from transformer_nb.core.block import EncoderLayer
from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.multihead import MultiHeadAttention, merge_heads, split_heads
from transformer_nb.core.rope import apply_rope
from transformer_nb.exercises.attention import attention_ex
from transformer_nb.exercises.block import encoder_stack_ex
from transformer_nb.exercises.capstone import block_ex, student_names
from transformer_nb.exercises.capstone import mha_ex as capstone_mha_ex
from transformer_nb.exercises.multihead import mha_ex
from transformer_nb.exercises.rope import relative_score_ex, rope_scores_ex
from transformer_nb.exercises.solutions import capstone as sol

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def _refused(ex, answer, name):
    r = ex.check(answer, quiet=True)
    assert not r.passed, r.message
    assert name in r.message and "ready-made" in r.message and "refused" in r.message, r.message


def package_attention_wrapped(q, k, v, mask=None):  # a float mask made bool, then the package's attention
    return scaled_dot_product_attention(q, k, v, None if mask is None else mask != 0)


def torch_attention_wrapped(q, k, v, mask=None):
    m = None if mask is None else mask != 0
    weights = torch.softmax((q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1]), -1)  # computed, but not used
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m), weights


def test_attention_refuses_the_package_and_pytorch_directly_and_wrapped():
    _refused(attention_ex, scaled_dot_product_attention, "transformer_nb.core.attention.scaled_dot_product_attention")
    _refused(attention_ex, package_attention_wrapped, "transformer_nb.core.attention.scaled_dot_product_attention")
    _refused(attention_ex, torch_attention_wrapped, "scaled_dot_product_attention")


def mha_on_package_heads(x, w_q, w_k, w_v, w_o, n_heads):
    q, k, v = (split_heads(x @ w, n_heads) for w in (w_q, w_k, w_v))
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1)
    return merge_heads(w @ v) @ w_o, w


def test_multi_head_attention_refuses_the_packages_split_and_merge():
    _refused(mha_ex, mha_on_package_heads, "transformer_nb.core.multihead.split_heads")


def test_encoder_stack_refuses_the_packages_layers_and_pytorchs_encoder():
    pkg = lambda d, h, f, n: nn.Sequential(
        *[EncoderLayer(TransformerConfig(d_model=d, n_heads=h, d_ff=f)) for _ in range(n)]
    )
    _refused(encoder_stack_ex, pkg, "transformer_nb.core.block.EncoderLayer.forward")
    layer = lambda d, h, f: nn.TransformerEncoderLayer(d, h, f, batch_first=True, norm_first=True)
    torch_encoder = lambda d, h, f, n: nn.TransformerEncoder(layer(d, h, f), n, enable_nested_tensor=False)
    _refused(encoder_stack_ex, torch_encoder, "torch.nn.Transformer")


def test_rope_refuses_apply_rope_in_a_wrapper():
    def scores(x, w_q, w_k, n_heads):
        t, d = x.shape
        q, k = (apply_rope((x @ w).view(t, n_heads, -1).transpose(0, 1)) for w in (w_q, w_k))
        return q @ k.transpose(-2, -1) / math.sqrt(d // n_heads)

    _refused(rope_scores_ex, scores, "transformer_nb.core.rope.apply_rope")

    def relative(q, k, delta):
        rq = apply_rope(q[None], positions=torch.tensor([float(delta)]))[0]
        return rq @ k

    _refused(relative_score_ex, relative, "transformer_nb.core.rope.apply_rope")


class PackageBlock(sol.Block):
    """The step's names, but its forward runs the package's EncoderLayer holding its weights."""

    def forward(self, x, mask=None):
        d, d_ff = self.ff1.in_features, self.ff1.out_features
        layer = EncoderLayer(TransformerConfig(d_model=d, n_heads=self.attn.n_heads, d_ff=d_ff, activation="relu"))
        renamed = dict(zip(layer.state_dict(), student_names(layer.state_dict())))
        mine = self.state_dict()
        layer.load_state_dict({k: mine[renamed[k]] for k in layer.state_dict()})
        return layer(x, mask=mask)


def test_capstone_steps_refuse_the_packages_modules():
    class MHA(MultiHeadAttention):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads)

    _refused(capstone_mha_ex, MHA, "transformer_nb.core.multihead.MultiHeadAttention.forward")
    _refused(block_ex, PackageBlock, "transformer_nb.core.block.EncoderLayer.forward")


def test_the_tripwires_are_gone_afterwards():
    def crashes(q, k, v, mask=None):
        F.scaled_dot_product_attention(q, k, v)
        raise RuntimeError("after the call")

    attention_ex.check(crashes, quiet=True)
    q = torch.randn(1, 3, 4)
    out, w = scaled_dot_product_attention(q, q, q)
    assert torch.allclose(out, F.scaled_dot_product_attention(q, q, q), atol=1e-6)
    assert torch.allclose(split_heads(torch.ones(1, 2, 4), 2).sum(), torch.tensor(8.0))
    assert F.scaled_dot_product_attention is torch._C._nn.scaled_dot_product_attention
