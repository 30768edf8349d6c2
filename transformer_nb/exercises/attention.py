"""Exercise 8.5 (000) for notebook 01: scaled dot-product attention, from scratch.

- :data:`attention_ex` -- ``attention(q, k, v, mask=None) -> (output, weights)``. The chapter's own hinted
  solution (``masked_fill(mask == 0, -inf)`` before the softmax) passes; a query whose keys are *all*
  masked is an extension, beyond the chapter, and is reported separately.
- :data:`causal_ex` -- ``causal_attention(q, k, v)``, which builds its own causal mask.

Exercise 8.1 (the variance of the scores) is in :mod:`transformer_nb.exercises.variance`.
"""

__all__ = ["attention_ex", "causal_ex"]  # what a notebook uses

import math

import torch

from transformer_nb.exercises import ATTENTION, Exercise, keep_mask, randn, tril
from transformer_nb.exercises.compare import has_nan
from transformer_nb.exercises.solutions import attention as sol

NOTEBOOK = "01_scaled_attention"  # the notebook whose exercise cells use this module


class _AttentionExercise(Exercise):
    """Looks through NaN before naming a mistake: from-scratch attention often has two faults at once, the
    mistake itself and NaN in a row whose keys are all masked (an off-by-one mask empties the first row)."""

    def known_mistake(self, args, out):
        hint = super().known_mistake(args, out)
        if hint is None and has_nan(out):
            clean = tuple(o.nan_to_num(0.0) if isinstance(o, torch.Tensor) else o for o in out)
            hint = super().known_mistake(args, clean)
            if hint:
                hint += " (Your result also has NaN where a query has no key to attend to.)"
        return hint


def _attend(q, k, v, mask=None, scale=None, dim=-1, transpose_scores=False):
    """Attention with one knob turned: the typical mistakes below are this function with other settings."""
    scores = (k @ q.transpose(-2, -1)) if transpose_scores else (q @ k.transpose(-2, -1))
    scores = scores / (math.sqrt(q.shape[-1]) if scale is None else scale(q, k, v))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=dim).nan_to_num(0.0)
    return weights @ v, weights


def _transposed_scores(q, k, v, mask=None):
    return _attend(q, k, v, None if mask is None else mask.transpose(-2, -1), transpose_scores=True)


def _mask_after_softmax(q, k, v, mask=None):
    out, w = _attend(q, k, v)
    if mask is not None:
        w = w * mask
    return w @ v, w


def _rows_sum_to_one(args, out):
    mask = args[3] if len(args) > 3 else None
    rows = out[1].sum(-1)
    live = torch.ones_like(rows, dtype=torch.bool) if mask is None else (mask != 0).any(-1).expand_as(rows)
    return torch.allclose(rows[live], torch.ones_like(rows[live]), atol=1e-5)


def _zeros_where_masked(args, out):
    if len(args) < 4:
        return True
    return bool((out[1].masked_select((args[3] == 0).expand_as(out[1])) == 0).all())


attention_ex = _AttentionExercise(
    "Exercise 8.5: scaled dot-product attention",
    sol.attention,
    name="attention_ex",
    ready_made=ATTENTION,
    cases=[
        ("batch=2, seq_len=8, d_k=d_v=16, no mask", lambda: randn(1, *[(2, 8, 16)] * 3)),
        ("the same input with a causal (8, 8) bool mask", lambda: (*randn(1, *[(2, 8, 16)] * 3), tril(8))),
        (
            "T_q=3 queries, T_k=5 keys, d_k=16, d_v=4, no mask",
            lambda: (*randn(2, (2, 3, 16), (2, 5, 16), scale=2), torch.randn(2, 5, 4)),
        ),
        (
            "a (4, 6) padding mask that blocks the last two keys",
            lambda: (*randn(3, (2, 4, 8), (2, 6, 8), scale=3), torch.randn(2, 6, 5), keep_mask([4] * 4, 6)),
        ),
        (
            "a float 0/1 causal mask, as torch.tril(torch.ones(T, T)) builds it",
            lambda: (*randn(6, *[(1, 5, 4)] * 3), torch.tril(torch.ones(5, 5))),
        ),
    ],
    extensions=[
        (
            "a causal mask whose first row blocks every key",
            lambda: (*randn(4, *[(1, 4, 8)] * 3), tril(4) & (torch.arange(4) > 0)[:, None]),  # query 0: no key
            "a query whose keys are ALL masked is beyond what the chapter asks. With the -inf fill its softmax is "
            "0/0 = NaN (a large negative fill such as d2l's -1e6 gives uniform weights over the masked keys "
            "instead). A common convention, PyTorch's included, is zero weights and a zero output for such a query.",
        )
    ],
    mistakes=[
        lambda q, k, v, mask=None: _attend(q, k, v, mask, scale=lambda q, k, v: 1.0),
        lambda q, k, v, mask=None: _attend(q, k, v, mask, scale=lambda q, k, v: q.shape[-1]),
        lambda q, k, v, mask=None: _attend(q, k, v, mask, scale=lambda q, k, v: math.sqrt(v.shape[-1])),
        lambda q, k, v, mask=None: _attend(q, k, v, mask, scale=lambda q, k, v: math.sqrt(k.shape[-2])),
        lambda q, k, v, mask=None: _attend(q, k, v, mask, dim=-2),
        _transposed_scores,
        lambda q, k, v, mask=None: _attend(q, k, v, None if mask is None else ~mask.bool()),
        _mask_after_softmax,
    ],
    properties=[
        _rows_sum_to_one,
        _zeros_where_masked,
        lambda args, out: torch.allclose(out[0], out[1] @ args[2], atol=1e-5),
    ],
)


def _causal_with(diagonal=0, upper=False, after_softmax=False, no_scale=False):
    def fn(q, k, v):
        ones = torch.ones(q.shape[-2], q.shape[-2], dtype=torch.bool)
        allowed = ones.triu(diagonal) if upper else ones.tril(diagonal)
        if after_softmax:
            return _mask_after_softmax(q, k, v, allowed)
        return _attend(q, k, v, allowed, scale=(lambda q, k, v: 1.0) if no_scale else None)

    return fn


def _upper_zero(args, out):
    t = out[1].shape[-1]
    return bool((out[1].masked_select(torch.ones(t, t, dtype=torch.bool).triu(1).expand_as(out[1])) == 0).all())


causal_ex = _AttentionExercise(
    "Exercise 8.5 (causal): attention with a causal mask",
    sol.causal_attention,
    name="causal_ex",
    cases=[
        ("batch=2, seq_len=8, d_k=d_v=16", lambda: randn(1, *[(2, 8, 16)] * 3)),
        (
            "batch=1, seq_len=5, d_k=4, d_v=3, large scores",
            lambda: (*randn(5, (1, 5, 4), scale=3), torch.randn(1, 5, 4) * 3, torch.randn(1, 5, 3)),
        ),
    ],
    mistakes=[
        _causal_with(upper=True),
        _causal_with(upper=True, diagonal=1),
        _causal_with(diagonal=-1),
        _causal_with(diagonal=1),
        _causal_with(after_softmax=True),
        _causal_with(no_scale=True),
    ],
    properties=[_upper_zero, lambda a, o: bool((o[1].diagonal(dim1=-2, dim2=-1) > 0).all())],
)
