"""Notebook 06's checkers (RMSNorm, SwiGLU, Exercise 8.8): other correct answers pass (PyTorch's own layers,
a stack without biases), typical wrong answers get their own hint, including notebook 06's former demo cells
(ε outside the root, the sigmoid gate, a Post-LN stack)."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.exercises.block import encoder_stack_ex, rms_norm_ex, swiglu_ex

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


class _Block(nn.Module):
    """A block written out (on nn.MultiheadAttention): Pre-LN, or Post-LN with ``norm_first=False``."""

    def __init__(self, d, h, f, norm_first=True, bias=True):
        super().__init__()
        self.norm_first, self.n1, self.n2 = norm_first, nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, h, dropout=0.1, bias=bias, batch_first=True)
        self.ff = nn.Sequential(
            nn.Linear(d, f, bias), nn.ReLU(), nn.Dropout(0.1), nn.Linear(f, d, bias), nn.Dropout(0.1)
        )

    def _sa(self, x):
        return self.attn(x, x, x, need_weights=False)[0]

    def forward(self, x):
        if self.norm_first:
            x = x + self._sa(self.n1(x))
            return x + self.ff(self.n2(x))
        x = self.n1(x + self._sa(x))
        return self.n2(x + self.ff(x))


def _scratch_stack(d, h, f, n, norm_first=True, bias=True):
    return nn.Sequential(*[_Block(d, h, f, norm_first, bias) for _ in range(n)])


class _Then(nn.Module):
    """The stack written out, its output passed through ``after``, beside a layer it never uses."""

    def __init__(self, after, *sizes):
        super().__init__()
        self.stack, self.unused, self.after = _scratch_stack(*sizes), nn.Linear(3, 3), after

    def forward(self, x):
        return self.after(self.stack(x))


def test_other_correct_answers_pass():
    assert rms_norm_ex.check(lambda x, w, eps: F.rms_norm(x, (x.shape[-1],), w, eps), quiet=True).passed
    ref = lambda x, wg, wu, wd: F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd)
    assert swiglu_ex.check(ref, quiet=True).passed
    assert encoder_stack_ex.check(_scratch_stack, quiet=True).passed
    assert encoder_stack_ex.check(lambda d, h, f, n: _scratch_stack(d, h, f, n, bias=False), quiet=True).passed


@pytest.mark.parametrize(
    "ex, wrong, words",
    [
        (rms_norm_ex, lambda x, w, eps: F.layer_norm(x, (x.shape[-1],), w, None, eps), "LayerNorm"),
        (swiglu_ex, lambda x, wg, wu, wd: (torch.sigmoid(x @ wg.T) * (x @ wu.T)) @ wd.T, "Swish/SiLU"),
        (swiglu_ex, lambda x, wg, wu, wd: x @ wg, "raised RuntimeError"),  # weights used untransposed
        (encoder_stack_ex, lambda d, h, f, n: _scratch_stack(d, h, f, n, norm_first=False), "Post-LN"),
        (encoder_stack_ex, lambda d, h, f, n: nn.Sequential(*_scratch_stack(d, h, f, n), nn.LayerNorm(d)), "LayerNorm"),
        (encoder_stack_ex, lambda d, h, f, n: torch.zeros(3), "return the nn.Module"),
        (encoder_stack_ex, lambda d, h, f, n: None, "is a `return` missing?"),
        (encoder_stack_ex, lambda *s: _Then(lambda y: y.to(torch.complex64), *s), "output is complex"),
        (encoder_stack_ex, lambda *s: _Then(lambda y: y.to("meta"), *s), "meta device"),
        (encoder_stack_ex, lambda *s: _Then(lambda y: y, *s), "no gradient"),
        (encoder_stack_ex, lambda *s: _Then(lambda y: (y, None), *s), "shape"),
        (encoder_stack_ex, lambda *s: _Then(nn.Linear(3, 3), *s), "raised RuntimeError"),
    ],
)
def test_mistakes_get_specific_hints(ex, wrong, words):
    r = ex.check(wrong, quiet=True)
    assert not r.passed and words in r.message, r.message
