"""Notebook 06's exercises accept the reference, name typical mistakes, and never leak the solution."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.block import EncoderLayer
from transformer_nb.exercises.block import encoder_stack_ex, rms_norm_ex, swiglu_ex

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def _stub(*args):
    raise NotImplementedError


def _no_leak(ex, message):
    src = ex.solution_source()
    body = [line.strip() for line in src.splitlines()[1:] if line.strip() and not line.strip().startswith('"""')]
    assert src not in message and not any(len(b) > 25 and b in message for b in body)


def test_rms_norm_exercise():
    assert rms_norm_ex.check(lambda x, w, eps: F.rms_norm(x, (x.shape[-1],), w, eps), quiet=True).passed
    assert "not attempted" in rms_norm_ex.check(_stub, quiet=True).message
    cases = {
        "LayerNorm": lambda x, w, eps: F.layer_norm(x, (x.shape[-1],), w, None, eps),
        "inside the root": lambda x, w, eps: x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * w,
        "*sum*": lambda x, w, eps: x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps) * w,
        "γ (weight) is missing": lambda x, w, eps: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps),
        "last axis": lambda x, w, eps: x / torch.sqrt(x.pow(2).mean(0, keepdim=True) + eps) * w,
    }
    for words, fn in cases.items():
        r = rms_norm_ex.check(fn, quiet=True)
        assert not r.passed and words in r.message, (words, r.message)
        _no_leak(rms_norm_ex, r.message)


def test_swiglu_exercise():
    ref = lambda x, wg, wu, wd: F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd)
    assert swiglu_ex.check(ref, quiet=True).passed
    cases = {
        "wrong branch": lambda x, wg, wu, wd: F.linear(F.linear(x, wg) * F.silu(F.linear(x, wu)), wd),
        "sigmoid": lambda x, wg, wu, wd: F.linear(torch.sigmoid(F.linear(x, wg)) * F.linear(x, wu), wd),
        "never used": lambda x, wg, wu, wd: F.linear(F.silu(F.linear(x, wg)), wd),
        "not added": lambda x, wg, wu, wd: F.linear(F.silu(F.linear(x, wg)) + F.linear(x, wu), wd),
        "GeGLU": lambda x, wg, wu, wd: F.linear(F.gelu(F.linear(x, wg)) * F.linear(x, wu), wd),
    }
    for words, fn in cases.items():
        r = swiglu_ex.check(fn, quiet=True)
        assert not r.passed and words in r.message, (words, r.message)
        _no_leak(swiglu_ex, r.message)
    r = swiglu_ex.check(lambda x, wg, wu, wd: x @ wg, quiet=True)  # transposed weights crash
    assert not r.passed and "raised RuntimeError" in r.message


def _torch_stack(d, h, f, n):
    return nn.Sequential(
        *[nn.TransformerEncoderLayer(d, h, f, dropout=0.1, batch_first=True, norm_first=True) for _ in range(n)]
    )


class _OwnStack(nn.Module):
    def __init__(self, d, h, f, n):
        super().__init__()
        self.blocks = nn.ModuleList(EncoderLayer(d, h, f, bias=False) for _ in range(n))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def test_exercise_8_8_accepts_different_correct_stacks():
    assert encoder_stack_ex.check(_torch_stack, quiet=True).passed
    assert encoder_stack_ex.check(_OwnStack, quiet=True).passed
    assert "not attempted" in encoder_stack_ex.check(_stub, quiet=True).message


def test_exercise_8_8_names_typical_mistakes():
    cases = {
        "Post-LN": lambda d, h, f, n: nn.Sequential(*[EncoderLayer(d, h, f, norm_first=False) for _ in range(n)]),
        "ends with a LayerNorm": lambda d, h, f, n: nn.Sequential(*_torch_stack(d, h, f, n), nn.LayerNorm(d)),
        "Add the residual": lambda d, h, f, n: nn.Sequential(
            *[EncoderLayer(d, h, f, residual=False) for _ in range(n)]
        ),
        "use the n_blocks argument": lambda d, h, f, n: _torch_stack(d, h, f, 4),
        "return the nn.Module itself": lambda d, h, f, n: torch.zeros(3),
    }
    for words, fn in cases.items():
        r = encoder_stack_ex.check(fn, quiet=True)
        assert not r.passed and words in r.message, (words, r.message)
        _no_leak(encoder_stack_ex, r.message)


def test_exercise_8_8_properties():
    class Unused(nn.Module):
        def __init__(self, d, h, f, n):
            super().__init__()
            self.stack, self.extra = _torch_stack(d, h, f, n), nn.Linear(3, 3)

        def forward(self, x):
            return self.stack(x)

    r = encoder_stack_ex.check(Unused, quiet=True)
    assert not r.passed and "no gradient" in r.message

    class Tuple(Unused):
        def forward(self, x):
            return self.stack(x), None

    r = encoder_stack_ex.check(Tuple, quiet=True)
    assert not r.passed and "shape" in r.message

    def crash(d, h, f, n):
        return nn.Sequential(*_torch_stack(d, h, f, n), nn.Linear(3, 3))

    r = encoder_stack_ex.check(crash, quiet=True)
    assert not r.passed and "raised RuntimeError" in r.message
