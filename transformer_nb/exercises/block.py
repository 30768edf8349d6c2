"""Exercises for notebook 06 (the Transformer block).

- ``rms_norm_ex``: RMSNorm from scratch (it must equal ``nn.RMSNorm``).
- ``swiglu_ex``: the SwiGLU feed-forward of LLaMA/PaLM, from three weight matrices.
- ``encoder_stack_ex``: Exercise 8.8 — four Pre-LN encoder blocks (d_model 64, h 4, d_ff 256)
  that keep the shape (2, 12, 64) and pass a gradient to every parameter.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.block import EncoderLayer, rms_norm
from transformer_nb.exercises import Exercise, Mistake, Property, Result


def _gen(seed):
    return torch.Generator().manual_seed(seed)


# --------------------------------------------------------------------------- 1. RMSNorm


def _rms_ref(x, weight, eps):
    return rms_norm(x, weight, eps)


def _rms_centred(x, weight, eps):
    c = x - x.mean(-1, keepdim=True)
    return c / torch.sqrt((c * c).mean(-1, keepdim=True) + eps) * weight


def _rms_eps_outside(x, weight, eps):
    return x / (torch.sqrt((x * x).mean(-1, keepdim=True)) + eps) * weight


def _rms_sum(x, weight, eps):
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) + eps) * weight


def _rms_no_weight(x, weight, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def _rms_no_sqrt(x, weight, eps):
    return x / ((x * x).mean(-1, keepdim=True) + eps) * weight


def _rms_wrong_axis(x, weight, eps):
    return x / torch.sqrt((x * x).mean(0, keepdim=True) + eps) * weight


def _rms_case(seed, shape, offset=0.0, eps=1e-6, scale=1.0):
    def make():
        g = _gen(seed)
        x = scale * torch.randn(*shape, generator=g, dtype=torch.float64) + offset
        w = 1.0 + 0.5 * torch.randn(shape[-1], generator=g, dtype=torch.float64)
        return x, w, eps

    return make


rms_norm_ex = Exercise(
    "RMSNorm from scratch",
    _rms_ref,
    cases=[
        ("x of shape (2, 5, 16), random γ", _rms_case(1, (2, 5, 16))),
        ("rows with a large mean (offset 3)", _rms_case(2, (3, 8), offset=3.0)),
        ("tiny inputs where ε matters (ε = 0.1)", _rms_case(3, (4, 6), eps=0.1, scale=0.05)),
        ("batch of 6 rows, d = 4", _rms_case(4, (6, 4))),
    ],
    mistakes=[
        Mistake(
            _rms_centred,
            "you subtracted the mean: that is LayerNorm (without β). RMSNorm skips the "
            "centring and divides x itself by its root mean square.",
        ),
        Mistake(
            _rms_eps_outside,
            "ε sits outside the square root: nn.RMSNorm adds it to the mean of the squares, inside the root.",
        ),
        Mistake(
            _rms_sum,
            "you divided by the root of the *sum* of squares (the L2 norm), which is sqrt(d) times "
            "the root of the *mean* of squares.",
        ),
        Mistake(_rms_no_weight, "the learned scale γ (weight) is missing: multiply the normalised x by it."),
        Mistake(_rms_no_sqrt, "you divided by the mean square itself; take its square root (RMS = root mean square)."),
        Mistake(
            _rms_wrong_axis,
            "you averaged over the wrong axis: the statistics of a norm are taken over the "
            "features of each token, the last axis (dim=-1).",
        ),
    ],
    properties=[
        Property(
            lambda args, out: (
                torch.allclose((out / args[1]).pow(2).mean(-1), torch.ones(1, dtype=out.dtype), atol=0.2)
                if args[2] < 1e-3
                else True
            ),
            "after dividing by γ, every row should have a root mean square close to 1.",
        ),
    ],
)


# --------------------------------------------------------------------------- 2. SwiGLU


def _swiglu_ref(x, w_gate, w_up, w_down):
    return (F.silu(x @ w_gate.T) * (x @ w_up.T)) @ w_down.T


def _swiglu_swapped(x, w_gate, w_up, w_down):
    return ((x @ w_gate.T) * F.silu(x @ w_up.T)) @ w_down.T


def _swiglu_sigmoid(x, w_gate, w_up, w_down):
    return (torch.sigmoid(x @ w_gate.T) * (x @ w_up.T)) @ w_down.T


def _swiglu_no_gate(x, w_gate, w_up, w_down):
    return F.silu(x @ w_gate.T) @ w_down.T


def _swiglu_relu(x, w_gate, w_up, w_down):
    return (F.relu(x @ w_gate.T) * (x @ w_up.T)) @ w_down.T


def _swiglu_gelu(x, w_gate, w_up, w_down):
    return (F.gelu(x @ w_gate.T) * (x @ w_up.T)) @ w_down.T


def _swiglu_sum(x, w_gate, w_up, w_down):
    return (F.silu(x @ w_gate.T) + (x @ w_up.T)) @ w_down.T


def _swiglu_case(seed, b, t, d, d_ff):
    def make():
        g = _gen(seed)
        x = torch.randn(b, t, d, generator=g, dtype=torch.float64)
        return (x,) + tuple(
            torch.randn(*s, generator=g, dtype=torch.float64) / s[1] ** 0.5 for s in ((d_ff, d), (d_ff, d), (d, d_ff))
        )

    return make


swiglu_ex = Exercise(
    "SwiGLU feed-forward",
    _swiglu_ref,
    cases=[
        ("x (2, 5, 8), d_ff = 12", _swiglu_case(5, 2, 5, 8, 12)),
        ("x (1, 3, 16), d_ff = 40", _swiglu_case(6, 1, 3, 16, 40)),
    ],
    mistakes=[
        Mistake(
            _swiglu_swapped,
            "the SiLU is on the wrong branch: apply it to x·W_gateᵀ and multiply the "
            "result by the plain linear branch x·W_upᵀ.",
        ),
        Mistake(_swiglu_sigmoid, "you used the sigmoid σ(z) where SwiGLU uses Swish/SiLU, z·σ(z)."),
        Mistake(
            _swiglu_relu, "you used ReLU in the gate; SwiGLU's gate is Swish/SiLU, z·σ(z) (ReLU would make it ReGLU)."
        ),
        Mistake(_swiglu_gelu, "you used GELU in the gate; that is GeGLU. SwiGLU's gate is Swish/SiLU, z·σ(z)."),
        Mistake(
            _swiglu_no_gate,
            "the up-projection W_up is never used: SwiGLU multiplies the SiLU branch "
            "elementwise by a second linear branch before W_down.",
        ),
        Mistake(_swiglu_sum, "the two branches must be multiplied elementwise (a gate), not added."),
    ],
)


# --------------------------------------------------------------------------- 3. Exercise 8.8


def _stack_ref(d_model, n_heads, d_ff, n_blocks):
    """Exercise 8.8: ``n_blocks`` Pre-LN encoder blocks in an ``nn.Sequential`` (no final norm)."""
    return nn.Sequential(*[EncoderLayer(d_model, n_heads, d_ff, dropout=0.0, norm_first=True) for _ in range(n_blocks)])


class _PostLNStack(nn.Sequential):
    def __init__(self, d_model, n_heads, d_ff, n_blocks):
        super().__init__(*[EncoderLayer(d_model, n_heads, d_ff, norm_first=False) for _ in range(n_blocks)])


def _stack_post_ln(d_model, n_heads, d_ff, n_blocks):
    return _PostLNStack(d_model, n_heads, d_ff, n_blocks)


def _stack_final_norm(d_model, n_heads, d_ff, n_blocks):
    return nn.Sequential(*_stack_ref(d_model, n_heads, d_ff, n_blocks), nn.LayerNorm(d_model))


def _stack_no_residual(d_model, n_heads, d_ff, n_blocks):
    return nn.Sequential(
        *[EncoderLayer(d_model, n_heads, d_ff, norm_first=True, residual=False) for _ in range(n_blocks)]
    )


class _SharedBlock(nn.Module):
    """The same block applied n_blocks times: 1/n_blocks of the parameters."""

    def __init__(self, d_model, n_heads, d_ff, n_blocks):
        super().__init__()
        self.block, self.n = EncoderLayer(d_model, n_heads, d_ff), n_blocks

    def forward(self, x):
        for _ in range(self.n):
            x = self.block(x)
        return x


def _stack_shared(d_model, n_heads, d_ff, n_blocks):
    return _SharedBlock(d_model, n_heads, d_ff, n_blocks)


def _stack_four(d_model, n_heads, d_ff, n_blocks):
    return _stack_ref(d_model, n_heads, d_ff, 4)


def _allowed_counts(d_model, d_ff, n_blocks):
    """Parameter counts of n_blocks Pre-LN blocks with LayerNorms, with or without linear biases."""
    w = 4 * d_model * d_model + 2 * d_model * d_ff
    norms = 4 * d_model
    biases = {"all": 4 * d_model + d_ff + d_model, "ffn only": d_ff + d_model, "attention only": 4 * d_model, "none": 0}
    return {n_blocks * (w + norms + b) for b in biases.values()}


def stack_signature(model, d_model: int, d_ff: int, n_blocks: int, seed: int = 0) -> dict:
    """What Exercise 8.8 asks of a stack, measured (not read from its code).

    ``shape_ok``: (2, 12, d) -> (2, 12, d); ``all_grads``: every parameter has a ``.grad`` after
    ``out.sum().backward()``; ``count``: ``"ok"`` if the parameter count is that of ``n_blocks``
    blocks, else the count; ``residual``: for a large input ``c·x`` the output stays ≈ ``c·x``
    (each Pre-LN block adds a bounded update to its input); ``normalised``: every output token
    has mean 0 and variance 1 (a norm is the last thing applied).
    """
    if not isinstance(model, nn.Module):
        return {"module": False}
    g = _gen(seed)
    x = torch.randn(2, 12, d_model, generator=g)
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
    out.sum().backward()
    params = list(model.parameters())
    sig["all_grads"] = len(params) > 0 and all(p.grad is not None for p in params)
    n = sum(p.numel() for p in params)
    sig["count"] = "ok" if n in _allowed_counts(d_model, d_ff, n_blocks) else n
    with torch.no_grad():
        big = 1000.0 * x
        y = model(big)
        sig["residual"] = bool(((y - big).norm() / big.norm()) < 0.05)
        y1 = model(x)
        mean, var = y1.mean(-1), y1.var(-1, unbiased=False)
        sig["normalised"] = bool(mean.abs().max() < 1e-3 and (var - 1).abs().max() < 1e-2)
    return sig


class ModuleExercise(Exercise):
    """An exercise whose answer is an ``nn.Module``: compared by measured behaviour, not by values.

    ``compare(out, ref)`` is ``signature(out) == signature(ref)``; mistakes are other modules whose
    signature the student's may share.
    """

    def diagnose(self, args, out, ref) -> str:
        if not isinstance(out, nn.Module):
            return (
                f"your function returned a {type(out).__name__}; return the nn.Module itself "
                f"(e.g. an nn.Sequential of blocks, or your own nn.Module subclass)."
            )
        sig = _sig(out, args)
        if "error" in sig:
            return (
                f"calling your module on a random input of shape (2, 12, {args[0]}) raised {sig['error']}. "
                f"A block takes and returns (B, T, d_model)."
            )
        return (
            self.known_mistake(args, out)
            or self.failed_property(args, out)
            or (
                "the stack behaves differently from four Pre-LN blocks in a way the checker cannot name. "
                "Re-read the block: x = x + MHA(LN(x)); x = x + FFN(LN(x))."
            )
        )

    def _check(self, fn) -> Result:
        with torch.random.fork_rng():  # seeded for repeatable checks; the caller's RNG state is untouched
            torch.manual_seed(0)
            return super()._check(fn)


def _sig(args_out_or_module, args):
    d_model, _, d_ff, n_blocks = args
    return stack_signature(args_out_or_module, d_model, d_ff, n_blocks)


def _compare_stacks(out, ref):
    if not isinstance(out, nn.Module) or not isinstance(ref, nn.Module):
        return False
    args = getattr(ref, "_ex_args", None) or getattr(out, "_ex_args", None)
    if args is None:
        return False
    return _sig(out, args) == _sig(ref, args)


def _tagged(fn):
    """Wrap a module factory so the module remembers the case arguments it was built for."""

    def make(*args):
        m = fn(*args)
        if isinstance(m, nn.Module):
            m._ex_args = args
        return m

    make.__name__ = getattr(fn, "__name__", "make")
    make.__doc__ = fn.__doc__
    return make


def _prop(key, hint):
    def holds(args, out):
        sig = _sig(out, args)
        return sig.get(key) in (True, "ok")

    return Property(holds, hint)


class _StackExercise(ModuleExercise):
    def _check(self, fn) -> Result:
        return super()._check(_tagged(fn))

    def show_solution(self) -> None:
        from transformer_nb.source import show_source

        show_source(_stack_ref)

    def solution_source(self) -> str:
        import inspect

        return inspect.getsource(_stack_ref)


encoder_stack_ex = _StackExercise(
    "Exercise 8.8: four Pre-LN encoder blocks",
    _tagged(_stack_ref),
    cases=[
        ("Exercise 8.8: d_model 64, h 4, d_ff 256, 4 blocks", lambda: (64, 4, 256, 4)),
        ("a second size: d_model 32, h 2, d_ff 64, 2 blocks", lambda: (32, 2, 64, 2)),
    ],
    mistakes=[
        Mistake(
            _tagged(_stack_post_ln),
            "every block's output is normalised, so this is Post-LN "
            "(LN(x + Sublayer(x))). Exercise 8.8 asks for Pre-LN: "
            "x + Sublayer(LN(x)), with the norm inside the residual branch.",
        ),
        Mistake(
            _tagged(_stack_final_norm),
            "your stack ends with a LayerNorm. Pre-LN models do add one "
            "before the output layer, but Exercise 8.8 stacks the blocks only: "
            "leave the final norm out here.",
        ),
        Mistake(
            _tagged(_stack_no_residual),
            "the input is not carried through: for a large input the output "
            "should stay close to it. Add the residual: x = x + Sublayer(LN(x)).",
        ),
        Mistake(
            _tagged(_stack_shared),
            "you have a quarter of the parameters: one block applied several times "
            "shares its weights. Build n_blocks separate blocks (nn.ModuleList or "
            "nn.Sequential of new instances).",
        ),
        Mistake(_tagged(_stack_four), "you always build 4 blocks; use the n_blocks argument."),
    ],
    properties=[
        _prop(
            "shape_ok",
            "the output must have the input's shape (B, T, d_model): a block maps (B, T, d) to "
            "(B, T, d). Does your forward return a tuple (e.g. attention weights too)?",
        ),
        _prop(
            "all_grads",
            "some parameters get no gradient after out.sum().backward(): is every module you "
            "create used in forward (and nothing detached)?",
        ),
        _prop(
            "count",
            "the number of parameters is not that of n_blocks blocks with two LayerNorms, a "
            "4·d² attention and a d→d_ff→d FFN each (biases optional).",
        ),
        _prop(
            "residual",
            "for a large input the output should stay close to the input (each block adds a "
            "bounded update): is there a residual connection x + ... around both sublayers, "
            "with the LayerNorm inside the branch?",
        ),
    ],
    compare=_compare_stacks,
    stub_hint="Build the stack in build_encoder_stack and return it.",
)
