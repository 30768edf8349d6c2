"""Exercises for notebook 06 (the Transformer block).

- :data:`rms_norm_ex` -- ``my_rms_norm(x, weight, eps)``: RMSNorm from scratch (equal to ``nn.RMSNorm``).
- :data:`swiglu_ex` -- ``my_swiglu(x, w_gate, w_up, w_down)``: the SwiGLU feed-forward of LLaMA/PaLM.
- :data:`encoder_stack_ex` -- Exercise 8.8: ``build_encoder_stack(d_model, n_heads, d_ff, n_blocks)``, a
  stack of Pre-LN encoder blocks, checked by what it *does* (:func:`stack_signature`), not by its code.
"""

__all__ = ["encoder_stack_ex", "rms_norm_ex", "swiglu_ex"]  # what a notebook uses

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.exercises import BLOCK, Exercise, Property, gen, seeded
from transformer_nb.exercises.solutions import block as sol

NOTEBOOK = "06_transformer_block"  # the notebook whose exercise cells use this module


def _rms(centre=False, eps_outside=False, reduce="mean", weight=True, root=True, dim=-1):
    def fn(x, w, eps):
        c = x - x.mean(-1, keepdim=True) if centre else x
        ms = (c * c).mean(dim, keepdim=True) if reduce == "mean" else (c * c).sum(dim, keepdim=True)
        denom = (ms.sqrt() + eps) if eps_outside else ((ms + eps).sqrt() if root else ms + eps)
        return c / denom * (w if weight else 1.0)

    return fn


def _rms_case(seed, shape, offset=0.0, eps=1e-6, scale=1.0):
    g = gen(seed)
    x = scale * torch.randn(*shape, generator=g, dtype=torch.float64) + offset
    return x, 1.0 + 0.5 * torch.randn(shape[-1], generator=g, dtype=torch.float64), eps


rms_norm_ex = Exercise(
    "RMSNorm from scratch",
    sol.my_rms_norm,
    name="rms_norm_ex",
    cases=[
        ("x of shape (2, 5, 16), random γ", lambda: _rms_case(1, (2, 5, 16))),
        ("rows with a large mean (offset 3)", lambda: _rms_case(2, (3, 8), offset=3.0)),
        ("tiny inputs where ε matters (ε = 0.1)", lambda: _rms_case(3, (4, 6), eps=0.1, scale=0.05)),
        ("batch of 6 rows, d = 4", lambda: _rms_case(4, (6, 4))),
    ],
    mistakes=[
        _rms(centre=True),
        _rms(eps_outside=True),
        _rms(reduce="sum"),
        _rms(weight=False),
        _rms(root=False),
        _rms(dim=0),
    ],
)


def _glu(act=F.silu, swap=False, combine="mul", up=True):
    def fn(x, w_gate, w_up, w_down):
        a, b = x @ w_gate.T, x @ w_up.T
        if swap:
            a, b = b, a
        h = act(a) if not up else (act(a) * b if combine == "mul" else act(a) + b)
        return h @ w_down.T

    return fn


def _swiglu_case(seed, b, t, d, d_ff):
    g = gen(seed)
    x = torch.randn(b, t, d, generator=g, dtype=torch.float64)
    shapes = ((d_ff, d), (d_ff, d), (d, d_ff))
    return (x, *(torch.randn(*s, generator=g, dtype=torch.float64) / s[1] ** 0.5 for s in shapes))


swiglu_ex = Exercise(
    "SwiGLU feed-forward",
    sol.my_swiglu,
    name="swiglu_ex",
    cases=[
        ("x (2, 5, 8), d_ff = 12", lambda: _swiglu_case(5, 2, 5, 8, 12)),
        ("x (1, 3, 16), d_ff = 40", lambda: _swiglu_case(6, 1, 3, 16, 40)),
    ],
    mistakes=[
        _glu(swap=True),
        _glu(act=torch.sigmoid),
        _glu(act=F.relu),
        _glu(act=F.gelu),
        _glu(up=False),
        _glu(combine="add"),
    ],
)


class _Block(nn.Module):
    """The solution's block with one thing done another way (the typical mistakes of Exercise 8.8)."""

    def __init__(self, d_model, n_heads, d_ff, post_ln=False, residual=True):
        super().__init__()
        self.inner, self.post_ln, self.residual = sol.PreLNBlock(d_model, n_heads, d_ff), post_ln, residual

    def forward(self, x):
        b = self.inner
        if self.post_ln:
            x = b.norm1(x + b.attend(x))
            return b.norm2(x + b.ffn(x))
        if not self.residual:
            return b.ffn(b.norm2(b.attend(b.norm1(x))))
        return b(x)


def _allowed_counts(d_model, d_ff, n_blocks):
    """Parameter counts of n_blocks Pre-LN blocks with LayerNorms, with or without linear biases."""
    weights, norms = 4 * d_model * d_model + 2 * d_model * d_ff, 4 * d_model
    biases = (4 * d_model + d_ff + d_model, d_ff + d_model, 4 * d_model, 0)
    return {n_blocks * (weights + norms + b) for b in biases}


def stack_signature(model, d_model: int, d_ff: int, n_blocks: int, seed: int = 0) -> dict:
    """What Exercise 8.8 asks of a stack, measured: ``shape_ok`` ((2, 12, d) -> (2, 12, d)), ``all_grads``
    (every parameter gets a ``.grad`` from ``out.sum().backward()``), ``count`` (``"ok"`` for the parameter
    count of ``n_blocks`` blocks, else the count), ``residual`` (a large input passes nearly unchanged) and
    ``normalised`` (every output token has mean 0 and variance 1: a norm is applied last)."""
    x = torch.randn(2, 12, d_model, generator=gen(seed))
    for p in model.parameters():
        p.grad = None
    model.train(False)
    try:
        out = model(x)
    except Exception as err:  # the student's forward crashed: report it, do not raise
        return {"module": True, "error": f"{type(err).__name__}: {err}"}
    sig = {"module": True, "shape_ok": isinstance(out, torch.Tensor) and tuple(out.shape) == (2, 12, d_model)}
    if not sig["shape_ok"]:
        return sig
    if out.is_complex() or out.device.type == "meta":
        kind = "complex: the stack's output is real" if out.is_complex() else "on the meta device: it has no values"
        return {"module": True, "problem": f"your module's output is {kind}. Which step made it so?"}
    out.sum().backward()
    params = list(model.parameters())
    sig["all_grads"] = len(params) > 0 and all(p.grad is not None for p in params)
    n = sum(p.numel() for p in params)
    sig["count"] = "ok" if n in _allowed_counts(d_model, d_ff, n_blocks) else n
    with torch.no_grad():
        big = 1000.0 * x
        sig["residual"] = bool(((model(big) - big).norm() / big.norm()) < 0.05)
        y = model(x)
        sig["normalised"] = bool(y.mean(-1).abs().max() < 1e-3 and (y.var(-1, unbiased=False) - 1).abs().max() < 1e-2)
    return sig


def _measured(fn):
    """The harness: build the module (seeded), then measure it."""

    def run(d_model, n_heads, d_ff, n_blocks):
        model = seeded(fn)(d_model, n_heads, d_ff, n_blocks)
        if not isinstance(model, nn.Module):
            return {"returned": type(model).__name__}
        return stack_signature(model, d_model, d_ff, n_blocks)

    return run


class _StackExercise(Exercise):
    def type_problem(self, out, ref):
        if "returned" in out:
            got = "None (is a `return` missing?)" if out["returned"] == "NoneType" else f"a {out['returned']}"
            return f"your function returned {got}; return the nn.Module (e.g. an nn.Sequential)."
        if "problem" in out:
            return out["problem"]
        if "error" in out:
            return f"calling your module on an input of shape (2, 12, d_model) raised {out['error']}"
        return None


def _prop(key, hint):
    return Property(lambda args, out: out.get(key) in (True, "ok"), hint)


encoder_stack_ex = _StackExercise(
    "Exercise 8.8: four Pre-LN encoder blocks",
    sol.build_encoder_stack,
    name="encoder_stack_ex",
    ready_made=BLOCK,
    solution_code=(sol.PreLNBlock, sol.build_encoder_stack),
    harness=_measured,
    compare=lambda out, ref: out == ref,
    cases=[
        ("Exercise 8.8: d_model 64, h 4, d_ff 256, 4 blocks", lambda: (64, 4, 256, 4)),
        ("a second size: d_model 32, h 2, d_ff 64, 2 blocks", lambda: (32, 2, 64, 2)),
    ],
    mistakes=[
        lambda d, h, f, n: nn.Sequential(*[_Block(d, h, f, post_ln=True) for _ in range(n)]),
        lambda d, h, f, n: nn.Sequential(sol.build_encoder_stack(d, h, f, n), nn.LayerNorm(d)),
        lambda d, h, f, n: nn.Sequential(*[_Block(d, h, f, residual=False) for _ in range(n)]),
        lambda d, h, f, n: nn.Sequential(*[sol.PreLNBlock(d, h, f)] * n),  # one block, shared
        lambda d, h, f, n: sol.build_encoder_stack(d, h, f, 4),
    ],
    properties=[
        _prop("shape_ok", "the output must have the input's shape (B, T, d_model). Does forward return a tuple?"),
        _prop("all_grads", "some parameters get no gradient: is every module you create used in forward?"),
        _prop(
            "count",
            "the parameter count is not that of n_blocks blocks with two LayerNorms, a 4·d² attention and a "
            "d→d_ff→d FFN each (biases optional).",
        ),
        _prop("residual", "for a large input the output should stay close to the input: a residual is missing."),
    ],
)
