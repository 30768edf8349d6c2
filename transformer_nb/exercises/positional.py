"""Exercises for notebook 04 (positional encodings).

- :data:`offset_matrix_ex` -- Exercise 8.3 (000): ``offset_matrix(k, omega)``, the 2×2 matrix that
  moves the sinusoid pair ``[sin(pos·ω), cos(pos·ω)]`` to ``[sin((pos+k)·ω), cos((pos+k)·ω)]``.
- :data:`offset_similarity_ex` -- Exercise 8.7 (000): ``offset_average_similarity(pe)``, the average
  cosine similarity of all pairs of rows ``(i, j)`` with ``|i - j| = k``, for every ``k``.
- :data:`alibi_slopes_ex` -- ALiBi (000 §8.4.5; Press et al., 2022): ``my_alibi_slopes(n_heads)``.

Each exercise knows the typical wrong answers and replies with a hint aimed at that mistake.
"""

__all__ = ["alibi_slopes_ex", "offset_matrix_ex", "offset_similarity_ex"]  # what a notebook uses

import math

import torch
import torch.nn.functional as F

from transformer_nb.exercises import Exercise, randn
from transformer_nb.exercises.compare import allclose, tensor_problem
from transformer_nb.exercises.solutions import positional as sol

NOTEBOOK = "04_positional_encodings"  # the notebook whose exercise cells use this module


def _as_tensor(x):
    """Accept lists / tuples of numbers as well as tensors (students often return nested lists)."""
    if isinstance(x, torch.Tensor):
        return x.detach().to(torch.float64)
    try:
        return torch.as_tensor(x, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        return x


def _compare(out, ref, atol=1e-6, rtol=1e-5):
    return allclose(_as_tensor(out), _as_tensor(ref), atol=atol, rtol=rtol)


class _TableExercise(Exercise):
    """Answers may be tensors of any float dtype, or nested lists of numbers."""

    def type_problem(self, out, ref):
        return tensor_problem(_as_tensor(out), ref.to(torch.float64))


def _sinusoids(T, d):
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    angle = pos * 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    return torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).flatten(-2)


# ----------------------------------------------------------------------------------------
# Exercise 8.3: offset_matrix(k, omega) -> (2, 2)
# ----------------------------------------------------------------------------------------


def _om(entries, angle=lambda k, omega: k * omega):
    """A wrong offset matrix: ``entries(cos, sin)`` (rows) of the angle ``angle(k, omega)``."""
    return lambda k, omega: torch.tensor(
        entries(math.cos(angle(k, omega)), math.sin(angle(k, omega))), dtype=torch.float64
    )


def _maps_pe(args, out):
    k, omega = args
    m = _as_tensor(out)
    p = torch.arange(0, 50, dtype=torch.float64)
    x = torch.stack([torch.sin(p * omega), torch.cos(p * omega)])  # (2, P)
    y = torch.stack([torch.sin((p + k) * omega), torch.cos((p + k) * omega)])
    return torch.allclose(m @ x, y, atol=1e-6)


def _orthogonal(args, out):
    m = _as_tensor(out)
    return torch.allclose(m.T @ m, torch.eye(2, dtype=torch.float64), atol=1e-6)


offset_matrix_ex = _TableExercise(
    title="Exercise 8.3: the offset matrix M(k, ω)",
    name="offset_matrix_ex",
    reference=sol.offset_matrix,
    cases=[
        ("k=1, ω=1 (the fastest pair, i=0)", lambda: (1, 1.0)),
        ("k=5, ω=0.1", lambda: (5, 0.1)),
        ("k=-3, ω=10000^(-6/16)", lambda: (-3, 10000.0 ** (-6 / 16))),
        ("k=40, ω=10000^(-2/8)", lambda: (40, 10000.0 ** (-2 / 8))),
    ],
    mistakes=[
        _om(lambda c, s: [[c, -s], [s, c]]),  # the rotation the other way: maps PE(p) to PE(p - k)
        _om(lambda c, s: [[c, s], [-s, c]], angle=lambda k, omega: k),  # ω forgotten
        _om(lambda c, s: [[c, s], [s, -c]]),  # a sign slip in the second row: det = -1
    ],
    properties=[_orthogonal, _maps_pe],
    compare=_compare,
)

# ----------------------------------------------------------------------------------------
# Exercise 8.7: offset_average_similarity(pe) -> (T,)
# ----------------------------------------------------------------------------------------


def _os_dot(pe):  # forgot to normalise: dot products
    sim = pe @ pe.T
    return torch.stack([sim.diagonal(k).mean() for k in range(pe.shape[0])])


def _os_divide_by_t(pe):  # summed the T - k pairs but divided by T
    unit = pe / pe.norm(dim=-1, keepdim=True)
    sim = unit @ unit.T
    return torch.stack([sim.diagonal(k).sum() / pe.shape[0] for k in range(pe.shape[0])])


def _os_wrong_axis(pe):  # normalised each dimension (column), not each position (row)
    unit = pe / pe.norm(dim=0, keepdim=True)
    sim = unit @ unit.T
    return torch.stack([sim.diagonal(k).mean() for k in range(pe.shape[0])])


def _os_offset_zero_is_one(args, out):
    return abs(float(_as_tensor(out)[0]) - 1.0) < 1e-5


def _os_bounded(args, out):
    return bool((_as_tensor(out).abs() <= 1 + 1e-5).all())


def _case_sinusoid():
    return (_sinusoids(256, 128),)


offset_similarity_ex = _TableExercise(
    title="Exercise 8.7: average cosine similarity at each offset |i - j|",
    name="offset_similarity_ex",
    reference=sol.offset_average_similarity,
    cases=[
        ("the exercise's sinusoids, T=256, d_model=128", _case_sinusoid),
        # rows of different lengths, no structure: similarity to row 0 is not the average
        (
            "a random (20, 8) table whose rows have different norms",
            lambda: (randn(31, (20, 8))[0] * torch.linspace(0.5, 3.0, 20)[:, None],),
        ),
        ("a (50, 16) table like an untrained learned embedding", lambda: (randn(32, (50, 16))[0] * 0.02 + 0.01,)),
    ],
    mistakes=[_os_dot, lambda pe: F.cosine_similarity(pe[:1], pe, dim=-1), _os_divide_by_t, _os_wrong_axis],
    properties=[lambda a, o: tuple(_as_tensor(o).shape) == (a[0].shape[0],), _os_offset_zero_is_one, _os_bounded],
    compare=lambda out, ref: _compare(out, ref, atol=1e-5, rtol=1e-4),
)

# ----------------------------------------------------------------------------------------
# ALiBi: my_alibi_slopes(n_heads) -> (n_heads,)
# ----------------------------------------------------------------------------------------


def _slopes(make):  # a list of numbers -> (n_heads,) float64
    return lambda n_heads: torch.tensor(make(n_heads), dtype=torch.float64)


alibi_slopes_ex = _TableExercise(
    title="ALiBi head slopes",
    name="alibi_slopes_ex",
    reference=sol.my_alibi_slopes,
    cases=[
        ("n_heads=8 (the paper's example)", lambda: (8,)),
        ("n_heads=4", lambda: (4,)),
        ("n_heads=16", lambda: (16,)),
        ("n_heads=1", lambda: (1,)),
        ("n_heads=12 (not a power of 2)", lambda: (12,)),
        ("n_heads=6 (not a power of 2)", lambda: (6,)),
    ],
    mistakes=[
        _slopes(lambda n: [2.0**-h for h in range(1, n + 1)]),  # the 8-head slopes 1/2, 1/4, ... for every n
        lambda n: sol.my_alibi_slopes(n).flip(0),  # what 000 §8.4.5 states: head n uses 0.5
        lambda n: sol.my_alibi_slopes(n) * 2.0 ** (8.0 / 2 ** math.floor(math.log2(n))),  # h = 0 .. n-1: slope 1
        lambda n: torch.log2(sol.my_alibi_slopes(n)),  # returned log2 of the slopes
        _slopes(lambda n: [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]),  # 2^(-8h/n) for n not a power of 2
        lambda n: sol.my_alibi_slopes(n).sort(descending=True).values,  # the paper's set, sorted, not appended
    ],
    properties=[
        lambda a, o: tuple(_as_tensor(o).shape) == (a[0],),
        lambda a, o: bool((_as_tensor(o) > 0).all() and (_as_tensor(o) < 1).all()),
    ],
    compare=lambda out, ref: _compare(out, ref, atol=1e-9, rtol=1e-9),
)
