"""The capstone (notebook 12): the checkers' machinery, and steps 3 and 4 (steps 5-7: ``capstone_lm``).

Steps 1 and 2 reuse notebooks 01 and 02's ``attention_ex`` and ``causal_ex``. From step 3 on, each class is
compared with the package's module *given the same weights*: random weights, copied into the student's module
by name (``student_name``), the same input, the same output (``PackageExercise``).

- ``mha_ex``: ``MultiHeadAttention(d_model, n_heads)``, ``forward(x, mask=None)``, weights kept in ``.weights``.
- ``block_ex``: ``Block(d_model, n_heads, d_ff)``, ``forward(x, mask=None)``: ``EncoderLayer(cfg)``, Pre-LN, relu.
"""

__all__ = ["block_ex", "mha_ex"]  # what a notebook uses

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.core.block import EncoderLayer
from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.multihead import MultiHeadAttention
from transformer_nb.exercises import BLOCK, MULTIHEAD, Exercise, gen
from transformer_nb.exercises.compare import allclose
from transformer_nb.exercises.solutions import capstone as sol

NOTEBOOK = "12_capstone"

# --------------------------------------------------------------------------- the package's weights, by name
#: How the package's parameter names become the names each step asks for (applied in this order).
RENAMES = (("blocks.norm.", "norm."), ("blocks.layers.", "layers."), ("layers.", "blocks."), ("self_attn.", "attn."))
RENAMES += (("ff.linear1.", "ff1."), ("ff.linear2.", "ff2."), ("pos.emb.", "pos."), ("head.tok.", "tok."))
RENAMES += (("head.proj.weight", "tok.weight"), ("head.proj.bias", "bias"))  # the tied output layer: tok.weight


def student_name(name: str) -> str:
    """A package parameter's name as the student's modules call it (``RENAMES``, in order)."""
    return functools.reduce(lambda n, r: n.replace(*r), RENAMES, name)


def randomise_(module: nn.Module, seed: int) -> nn.Module:
    """Overwrite every parameter with seeded random values (LayerNorm scales near 1), so that no part is trivial."""
    g = gen(seed)
    with torch.no_grad():
        for m in module.modules():
            for name, p in m.named_parameters(recurse=False):
                r = torch.randn(p.shape, generator=g)
                if p.dim() >= 2:
                    p.copy_(r / math.sqrt(p.shape[-1]))
                else:
                    p.copy_(1.0 + 0.3 * r if isinstance(m, nn.LayerNorm) and name == "weight" else 0.3 * r)
    return module


def _naming(what: str, missing: list, unexpected: list) -> str:
    start = f"the checker copies the package's weights into your {what} by name, and the names differ: "
    own_matrix = any(k.endswith("weight") and not k.startswith(("tok", "pos", "blocks", "norm")) for k in unexpected)
    if "bias" in missing and own_matrix:
        return start + "your output layer has a matrix of its own. Tie it: the logits are h @ tok.weight.T + bias."
    if any(k.startswith("blocks.") for k in missing) and not any(k.startswith("blocks.") for k in unexpected):
        return start + "keep the blocks in an nn.ModuleList named `blocks` (a Python list hides their parameters)."
    listed = lambda keys: ", ".join(f"`{k}`" for k in keys[:4]) + (" …" if len(keys) > 4 else "")
    parts = [f"missing {listed(missing)}" if missing else "", f"unexpected {listed(unexpected)}" if unexpected else ""]
    return start + "; ".join(p for p in parts if p) + ". Use the names the step gives."


def load_package_weights(module: nn.Module, package: nn.Module, what: str) -> str | None:
    """Copy ``package``'s parameters into ``module`` (``student_name``); a message if they do not fit, else None."""
    if not isinstance(module, nn.Module):
        return f"your {what} should be an nn.Module (a class deriving from nn.Module), not a {type(module).__name__}."
    want, have = {student_name(k): v for k, v in package.state_dict().items()}, module.state_dict()  # tied: once
    missing, unexpected = sorted(set(want) - set(have)), sorted(set(have) - set(want))
    if missing or unexpected:
        return _naming(what, missing, unexpected)
    for k in want:
        if tuple(have[k].shape) != tuple(want[k].shape):
            return f"your `{k}` has shape {tuple(have[k].shape)}; the package's has {tuple(want[k].shape)}."
    module.load_state_dict(want)
    return None


@dataclass
class Problem:
    """What a harness returns instead of an output that cannot be compared; ``message`` says why."""

    message: str


@dataclass(eq=False)
class PackageExercise(Exercise):
    """Expected outputs from the package (``expected(*args)``), not from the reference solution; a harness may
    return a :class:`Problem`, whose message is the nudge."""

    expected: Callable | None = None

    def _call(self, fn, args):
        return self.expected(*args) if fn is self.reference and self.expected else super()._call(fn, args)

    def type_problem(self, out, ref):
        return out.message if isinstance(out, Problem) else super().type_problem(out, ref)


_close = lambda out, ref: allclose(out, ref, atol=1e-4, rtol=1e-4)  # float32 modules vs the package's


def slip(base, **flags) -> type:
    """A typical mistake: ``base`` with the class attributes ``flags`` (read by its ``forward``) set."""
    return type(f"{base.__name__}_{'_'.join(flags)}", (base,), flags)


def module_runner(what: str, package, weights: bool = False):
    """``(harness, expected)`` for a class built as ``cls(*sizes)`` and called as ``m(x, mask)`` on the case
    arguments ``(*sizes, x, mask, seed)``; ``package(*sizes)`` builds the package's module. ``weights``: the
    output is ``(out, m.weights)``, the package's ``last_weights`` being expected."""

    def expected(*args):
        *sizes, x, mask, seed = args
        ref = randomise_(package(*sizes), seed)
        ref.keep_weights = weights
        with torch.no_grad():
            out = ref(x, mask=mask)
        return (out, ref.last_weights) if weights else out

    def harness(cls):
        def run(*args):
            *sizes, x, mask, seed = args
            m = cls(*sizes)
            problem = load_package_weights(m, randomise_(package(*sizes), seed), what)
            if problem:
                return Problem(problem)
            with torch.no_grad():
                out = m(x, mask)
            if not weights:
                return out
            w = getattr(m, "weights", None)
            return (out, w) if isinstance(w, torch.Tensor) else Problem("keep the last call's weights in self.weights.")

        return run

    return harness, expected


# --------------------------------------------------------------------------- step 3: multi-head attention


_mha_harness, _mha_expected = module_runner("MultiHeadAttention", MultiHeadAttention, weights=True)


class _MHASlip(sol.MultiHeadAttention):
    split_ok = merge_ok = project_out = pass_mask = True
    one_head = False

    def forward(self, x, mask=None):
        B, T, d = x.shape
        h = 1 if self.one_head else self.n_heads
        split = lambda t: t.view(B, T, h, d // h).transpose(1, 2) if self.split_ok else t.reshape(B, h, T, d // h)
        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        heads, w = sol.attention(q, k, v, mask if self.pass_mask else None)
        self.weights = w.detach()
        concat = heads.transpose(1, 2).reshape(B, T, d) if self.merge_ok else heads.reshape(B, T, d)
        return self.out_proj(concat) if self.project_out else concat


def _case(sizes, t, seed, causal=False, scale=1.0):
    """Case arguments ``(*sizes, x, mask, seed)``, ``x: (2, t, d_model = sizes[0])``, a causal mask or None."""

    x = scale * torch.randn(2, t, sizes[0], generator=gen(seed))
    return *sizes, x, sol.my_causal_mask(t) if causal else None, seed


mha_ex = PackageExercise(
    "Step 3 · multi-head attention",
    sol.MultiHeadAttention,
    name="mha_ex",
    ready_made=MULTIHEAD,
    expected=_mha_expected,
    harness=_mha_harness,
    compare=_close,
    cases=[
        ("d_model 16, 4 heads, 5 tokens, no mask", lambda: _case((16, 4), 5, 1)),
        ("d_model 16, 4 heads, 6 tokens, causal mask", lambda: _case((16, 4), 6, 2, causal=True)),
        ("d_model 12, 3 heads, 4 tokens, causal mask", lambda: _case((12, 3), 4, 3, causal=True)),
        ("d_model 8, 1 head, 3 tokens", lambda: _case((8, 1), 3, 4)),
    ],
    mistakes=[
        slip(_MHASlip, split_ok=False),
        slip(_MHASlip, merge_ok=False),
        slip(_MHASlip, split_ok=False, merge_ok=False),
        slip(_MHASlip, one_head=True),
        slip(_MHASlip, project_out=False),
        slip(_MHASlip, pass_mask=False),
    ],
)


# --------------------------------------------------------------------------- step 4: a Pre-LN block


_block_harness, _block_expected = module_runner(
    "Block",
    lambda d, h, d_ff: EncoderLayer(
        TransformerConfig(d_model=d, n_heads=h, d_ff=d_ff, norm_first=True, activation="relu")
    ),
)


class _BlockSlip(sol.Block):
    post_ln = norm_stream = shared_norm = ffn_first = False
    attn_residual = ffn_residual = pass_mask = True
    act = "relu"

    def forward(self, x, mask=None):
        act = {"relu": F.relu, "gelu": F.gelu, "none": lambda t: t}[self.act]
        norm2 = self.norm1 if self.shared_norm else self.norm2
        subs = [
            (self.norm1, lambda t: self.attn(t, mask if self.pass_mask else None), self.attn_residual),
            (norm2, lambda t: self.ff2(act(self.ff1(t))), self.ffn_residual),
        ]
        for norm, sublayer, residual in reversed(subs) if self.ffn_first else subs:
            skip = (lambda t: t) if residual else (lambda t: 0.0)
            if self.post_ln:
                x = norm(skip(x) + sublayer(x))
            elif self.norm_stream:
                x = norm(x)
                x = skip(x) + sublayer(x)
            else:
                x = skip(x) + sublayer(norm(x))
        return x


block_ex = PackageExercise(
    "Step 4 · a Pre-LN block",
    sol.Block,
    name="block_ex",
    ready_made=BLOCK,
    expected=_block_expected,
    harness=_block_harness,
    compare=_close,
    cases=[
        ("d_model 16, 4 heads, d_ff 32, 5 tokens", lambda: _case((16, 4, 32), 5, 11)),
        ("d_model 16, 4 heads, d_ff 48, 6 tokens, causal mask", lambda: _case((16, 4, 48), 6, 12, causal=True)),
        ("d_model 12, 3 heads, d_ff 24, large inputs, causal mask", lambda: _case((12, 3, 24), 4, 13, True, 5.0)),
    ],
    mistakes=[
        slip(_BlockSlip, post_ln=True),
        slip(_BlockSlip, norm_stream=True),
        slip(_BlockSlip, attn_residual=False),
        slip(_BlockSlip, ffn_residual=False),
        slip(_BlockSlip, shared_norm=True),
        slip(_BlockSlip, act="gelu"),
        slip(_BlockSlip, act="none"),
        slip(_BlockSlip, ffn_first=True),
        slip(_BlockSlip, pass_mask=False),
    ],
)
