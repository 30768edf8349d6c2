"""Notebook 00's warm-ups: the two operations attention is made of.

- :data:`softmax_ex` -- ``my_softmax(x)``: softmax over the last axis that never overflows.
- :data:`scores_ex` -- ``my_scores(q, k)``: every query–key dot product,
  ``(B, T_q, d), (B, T_k, d) -> (B, T_q, T_k)``.
"""

__all__ = ["scores_ex", "softmax_ex"]  # what a notebook uses

import torch

from transformer_nb.exercises import Exercise
from transformer_nb.exercises.solutions import warmup as sol

NOTEBOOK = "00_start_here"  # the notebook whose exercise cells use this module


def _wrong_axis(x):
    z = x - x.max(dim=0, keepdim=True).values
    return z.exp() / z.exp().sum(dim=0, keepdim=True)


def _global_sum(x):
    z = (x - x.max()).exp()
    return z / z.sum()


def _global_max(x):  # subtracts the tensor's max, not each row's: a row far below it underflows to 0/0
    z = (x - x.max()).exp()
    return z / z.sum(dim=-1, keepdim=True)


softmax_ex = Exercise(
    "Warm-up 1 · stable softmax",
    sol.my_softmax,
    name="softmax_ex",
    cases=[
        (
            "small scores (3, 4)",
            lambda: (torch.tensor([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0], [-1.0, 5.0, 2.0, 0.5]]),),
        ),
        ("a batch (2, 3, 5)", lambda: (torch.linspace(-3, 3, 30).reshape(2, 3, 5),)),
        ("huge scores (1, 3)", lambda: (torch.tensor([[1000.0, 999.0, 990.0]]),)),
        ("rows far apart (2, 3)", lambda: (torch.tensor([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -999.0]]),)),
    ],
    mistakes=[lambda x: x.exp() / x.exp().sum(dim=-1, keepdim=True), _wrong_axis, _global_sum, _global_max],
    properties=[lambda a, out: torch.allclose(out.sum(-1), torch.ones(out.shape[:-1]), atol=1e-5)],
)


scores_ex = Exercise(
    "Warm-up 2 · the score matrix Q·Kᵀ",
    sol.my_scores,
    name="scores_ex",
    cases=[
        (
            "B=1, T_q=T_k=4, d=2",
            lambda: (
                torch.tensor([[[1.0, 0], [0, 1], [1, 1], [2, -1]]]),
                torch.tensor([[[0.0, 1], [1, 0], [1, -1], [3, 2]]]),
            ),
        ),
        (
            "B=2, T_q=3, T_k=5, d=4",
            lambda: (torch.arange(24.0).reshape(2, 3, 4) / 10, torch.arange(40.0).reshape(2, 5, 4).flip(-1) / 10),
        ),
    ],
    mistakes=[lambda q, k: k @ q.transpose(-2, -1), lambda q, k: q.transpose(-2, -1) @ k, lambda q, k: (q * k).sum(-1)],
)
