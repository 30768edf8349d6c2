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

    def __init__(self, d, h, f, norm_first=True):
        super().__init__()
        self.norm_first, self.n1, self.n2 = norm_first, nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, h, dropout=0.1, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d, f), nn.ReLU(), nn.Dropout(0.1), nn.Linear(f, d), nn.Dropout(0.1))

    def _sa(self, x):
        return self.attn(x, x, x, need_weights=False)[0]

    def forward(self, x):
        if self.norm_first:
            x = x + self._sa(self.n1(x))
            return x + self.ff(self.n2(x))
        x = self.n1(x + self._sa(x))
        return self.n2(x + self.ff(x))


def _scratch_stack(d, h, f, n, norm_first=True):
    return nn.Sequential(*[_Block(d, h, f, norm_first) for _ in range(n)])


class _NoBias(nn.Module):
    """A Pre-LN block without linear biases, on nn.MultiheadAttention."""

    def __init__(self, d, h, f):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, h, bias=False, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d, f, bias=False), nn.GELU(), nn.Linear(f, d, bias=False))

    def forward(self, x):
        y = self.n1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.ff(self.n2(x))


class _OwnStack(nn.Module):
    def __init__(self, d, h, f, n):
        super().__init__()
        self.blocks = nn.ModuleList(_NoBias(d, h, f) for _ in range(n))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def test_other_correct_answers_pass():
    assert rms_norm_ex.check(lambda x, w, eps: F.rms_norm(x, (x.shape[-1],), w, eps), quiet=True).passed
    ref = lambda x, wg, wu, wd: F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd)
    assert swiglu_ex.check(ref, quiet=True).passed
    assert encoder_stack_ex.check(_scratch_stack, quiet=True).passed
    assert encoder_stack_ex.check(_OwnStack, quiet=True).passed


def test_a_stack_with_complex_or_meta_outputs_is_told_so():
    class Odd(nn.Module):
        def __init__(self, d, h, f, n, to=torch.complex64):
            super().__init__()
            self.stack, self.to_ = _scratch_stack(d, h, f, n), to

        def forward(self, x):
            return self.stack(x).to(self.to_)

    r = encoder_stack_ex.check(Odd, quiet=True)
    assert not r.passed and "output is complex" in r.message and "grad can be" not in r.message, r.message
    r = encoder_stack_ex.check(lambda d, h, f, n: Odd(d, h, f, n, "meta"), quiet=True)
    assert not r.passed and "meta device" in r.message, r.message


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
    ],
)
def test_mistakes_get_specific_hints(ex, wrong, words):
    r = ex.check(wrong, quiet=True)
    assert not r.passed and words in r.message, r.message


def test_exercise_8_8_properties():
    class Unused(nn.Module):
        def __init__(self, d, h, f, n):
            super().__init__()
            self.stack, self.extra = _scratch_stack(d, h, f, n), nn.Linear(3, 3)

        def forward(self, x):
            return self.stack(x)

    r = encoder_stack_ex.check(Unused, quiet=True)
    assert not r.passed and "no gradient" in r.message

    class Tuple(Unused):
        def forward(self, x):
            return self.stack(x), None

    r = encoder_stack_ex.check(Tuple, quiet=True)
    assert not r.passed and "shape" in r.message

    r = encoder_stack_ex.check(
        lambda d, h, f, n: nn.Sequential(*_scratch_stack(d, h, f, n), nn.Linear(3, 3)), quiet=True
    )
    assert not r.passed and "raised RuntimeError" in r.message
