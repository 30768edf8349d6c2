"""Exercises for notebook 08: what each variant is trained on, and what it outputs.

- ``lm_shift_ex``: ``lm_shift(ids, keep) -> (inputs, targets)``: the next-token objective's shift,
  with padded targets ignored (``-100``).
- ``mean_pool_ex``: ``mean_pool(hidden, keep) -> (B, d)``: an encoder-only sentence vector, the
  mean over the *real* tokens (004 §13.1's alternative to ``[CLS]``).
"""

__all__ = ["lm_shift_ex", "mean_pool_ex"]  # what a notebook uses

import torch

from transformer_nb.exercises import Exercise, gen, keep_mask
from transformer_nb.exercises.solutions import models as sol

NOTEBOOK = "08_architecture_variants"  # the notebook whose exercise cells use this module


# --------------------------------------------------------------------------- 2. the LM shift


def _shift_none(ids, keep):
    return ids[:, :-1], ids[:, :-1].masked_fill(~keep[:, :-1], -100)


def _shift_backwards(ids, keep):
    return ids[:, 1:], ids[:, :-1].masked_fill(~keep[:, :-1], -100)


def _shift_wrong_keep(ids, keep):
    return ids[:, :-1], ids[:, 1:].masked_fill(~keep[:, :-1], -100)


def _shift_case(seed, lengths, t):
    keep = keep_mask(lengths, t)
    ids = torch.randint(3, 50, (len(lengths), t), generator=gen(seed)).masked_fill(~keep, 0)
    return ids, keep


lm_shift_ex = Exercise(
    "inputs and targets for next-token prediction",
    sol.lm_shift,
    name="lm_shift_ex",
    cases=[
        ("lengths [6, 4], T = 6", lambda: _shift_case(31, [6, 4], 6)),
        ("lengths [5, 5, 2], T = 5", lambda: _shift_case(32, [5, 5, 2], 5)),
        ("one sequence of 3 tokens, no padding", lambda: _shift_case(33, [3], 3)),
    ],
    mistakes=[_shift_none, _shift_backwards, lambda ids, keep: (ids[:, :-1], ids[:, 1:]), _shift_wrong_keep],
)


# --------------------------------------------------------------------------- 3. masked mean pooling


def _pool_divide_by_t(hidden, keep):
    return (hidden * keep[..., None]).sum(1) / hidden.shape[1]


def _pool_case(seed, lengths, t, d=4):
    keep = keep_mask(lengths, t)
    hidden = torch.randn(len(lengths), t, d, generator=gen(seed), dtype=torch.float64)
    return hidden, keep


mean_pool_ex = Exercise(
    "mean pooling over the real tokens",
    sol.mean_pool,
    name="mean_pool_ex",
    cases=[
        ("lengths [5, 2], T = 5", lambda: _pool_case(41, [5, 2], 5)),
        ("lengths [3, 3, 1], T = 4", lambda: _pool_case(42, [3, 3, 1], 4)),
        ("no padding", lambda: _pool_case(43, [4, 4], 4)),
    ],
    mistakes=[lambda hidden, keep: hidden.mean(1), _pool_divide_by_t, lambda hidden, keep: hidden[:, 0]],
    properties=[lambda args, out: out.shape == (args[0].shape[0], args[0].shape[2])],
)
