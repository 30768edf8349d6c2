"""Warm-up exercises for notebook 00: the two operations attention is made of.

1. ``stable_softmax(x)``: softmax over the last axis that never overflows.
2. ``scores(q, k)``: all query–key dot products of a batch, ``(B, T_q, d), (B, T_k, d) -> (B, T_q, T_k)``.
"""

import torch

from transformer_nb.exercises import Exercise, Mistake, Property


def stable_softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis: ``(..., n) -> (..., n)``, rows sum to 1, safe for large inputs."""
    z = x - x.max(dim=-1, keepdim=True).values  # softmax(x) = softmax(x - c): no exp overflows
    e = z.exp()
    return e / e.sum(dim=-1, keepdim=True)


def _naive(x):
    return x.exp() / x.exp().sum(dim=-1, keepdim=True)


def _wrong_axis(x):
    z = x - x.max(dim=0, keepdim=True).values
    return z.exp() / z.exp().sum(dim=0, keepdim=True)


def _global_sum(x):
    z = (x - x.max()).exp()
    return z / z.sum()


SOFTMAX = Exercise(
    "Warm-up 1 · stable softmax",
    stable_softmax,
    cases=[
        (
            "small scores (3, 4)",
            lambda: (torch.tensor([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0], [-1.0, 5.0, 2.0, 0.5]]),),
        ),
        ("a batch (2, 3, 5)", lambda: (torch.linspace(-3, 3, 30).reshape(2, 3, 5),)),
        ("huge scores (1, 3)", lambda: (torch.tensor([[1000.0, 999.0, 990.0]]),)),
    ],
    mistakes=[
        Mistake(
            _naive,
            "exp(1000) overflows to inf and inf/inf is NaN. Softmax does not change when you "
            "subtract the same number from a whole row: subtract each row's max first.",
        ),
        Mistake(
            _wrong_axis,
            "your rows do not sum to 1, your columns do: normalise over the last axis (dim=-1), where the keys are.",
        ),
        Mistake(
            _global_sum,
            "you divided by the sum of the whole tensor; each row must sum to 1 on its own "
            "(sum over dim=-1 with keepdim=True).",
        ),
    ],
    properties=[
        Property(
            lambda a, out: torch.allclose(out.sum(-1), torch.ones(out.shape[:-1]), atol=1e-5),
            "each row must sum to 1: divide by the row's own sum of exponentials.",
        )
    ],
    stub_hint="Subtract the row max, exponentiate, divide by the row sum (all over dim=-1).",
)


def scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """All dot products ``q_i · k_j``: ``(B, T_q, d), (B, T_k, d) -> (B, T_q, T_k)``."""
    return q @ k.transpose(-2, -1)


def _transposed(q, k):
    return k @ q.transpose(-2, -1)


def _dims(q, k):
    return q.transpose(-2, -1) @ k


def _elementwise(q, k):
    return (q * k).sum(-1)


SCORES = Exercise(
    "Warm-up 2 · the score matrix Q·Kᵀ",
    scores,
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
    mistakes=[
        Mistake(
            _transposed,
            "you computed K·Qᵀ: rows are keys and columns queries. Row i must hold query i's "
            "scores against every key, so put q first: q @ k.transpose(-2, -1).",
        ),
        Mistake(
            _dims,
            "your result is (B, d, d): you transposed the queries instead of the keys, so the "
            "sum runs over positions, not over the d features.",
        ),
        Mistake(
            _elementwise,
            "(q * k).sum(-1) pairs query i only with key i (and needs T_q = T_k). Attention "
            "needs every query with every key: a matrix product.",
        ),
    ],
    stub_hint="One batched matrix product: queries (B, T_q, d) times keys transposed to (B, d, T_k).",
)
