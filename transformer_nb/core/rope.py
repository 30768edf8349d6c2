"""Rotary position embeddings, RoPE (000 §8.4.4; 002; 003; Su et al., 2021).

RoPE adds nothing to the embeddings. Just before the attention scores are taken, it rotates
every query and key: the ``d`` dimensions are split into ``d/2`` pairs and pair ``i`` of the
vector at position ``m`` is turned by the angle ``m·θ_i``, with ``θ_i = base^(-2i/d)``,
``i = 0 .. d/2 - 1``:

    (x1, x2) -> (x1·cos mθ_i - x2·sin mθ_i,  x1·sin mθ_i + x2·cos mθ_i)

Rotations compose, ``R_mᵀ R_n = R_{n-m}``, so ``<R_m q, R_n k> = qᵀ R_{n-m} k`` depends on
the positions only through the offset ``n - m``.

Two layouts of the pairs are in use; they are the same rotation up to a fixed permutation of
the dimensions (``reference.half_permutation``):

- ``"interleaved"``: pairs ``(2i, 2i+1)`` (RoFormer, the original LLaMA code, GPT-J);
- ``"half"``: pairs ``(i, i + d/2)`` ("rotate_half": GPT-NeoX, Hugging Face LLaMA).

``RoPE(d_head)`` plugs into ``MultiHeadAttention.forward(..., rope=...)``, which calls
``rope(q, k)`` on ``(B, h, T, d_head)`` tensors; ``Transformer`` passes ``rope(..., in_place=True)``: its
queries and keys are fresh projections, so when no gradient is recorded they are turned where they are.
"""

from functools import partial

import torch
import torch.nn as nn

from transformer_nb.core import checks
from transformer_nb.core.positional import sinusoid_frequencies


@checks.boundary(checks._rope_frequencies)
def rope_frequencies(d: int, base: float = 10000.0) -> torch.Tensor:
    """``(d/2,)`` float64 ``θ_i = base^(-2i/d)`` for ``i = 0 .. d/2 - 1`` (θ_0 = 1, the fastest pair):
    the frequencies of the sinusoidal encoding."""
    return sinusoid_frequencies(d, base)


def _turn(x: torch.Tensor, turn: torch.Tensor, pairing: str, in_place: bool = False) -> torch.Tensor:
    """Turn the pairs of ``x: (..., T, d)`` by the unit complex numbers ``turn = cos θ + i·sin θ: (T, d/2)``.

    A pair ``(x1, x2)`` is read as the complex number ``x1 + i·x2``. Multiplying it by ``e^{iθ}`` gives
    ``(x1 cos θ - x2 sin θ) + i·(x1 sin θ + x2 cos θ)``: the pair turned by ``θ``, one complex product per
    pair, computed in ``turn``'s precision; returns ``x``'s dtype. ``in_place``: turn ``x`` itself
    (interleaved pairs of a float32 ``x`` whose last dimension is contiguous)."""
    if in_place:  # the same complex product, written into x
        torch.view_as_complex(x.view(*x.shape[:-1], x.shape[-1] // 2, 2)).mul_(turn)
        return x
    xw = x.to(turn.real.dtype)
    if pairing == "interleaved":  # pairs (2i, 2i+1): a complex view of x, no copy
        pairs = xw.reshape(*xw.shape[:-1], xw.shape[-1] // 2, 2)
        try:
            z = torch.view_as_complex(pairs)
        except RuntimeError:  # a layout the view cannot take
            z = torch.view_as_complex(pairs.contiguous())
        return torch.view_as_real(z * turn).flatten(-2).to(x.dtype)
    x1, x2 = xw.chunk(2, dim=-1)  # pairs (i, i + d/2)
    z = torch.complex(x1, x2) * turn
    return torch.cat((z.real, z.imag), dim=-1).to(x.dtype)


@checks.boundary(checks._apply_rope)
def apply_rope(x: torch.Tensor, positions=None, base: float = 10000.0, pairing: str = "interleaved") -> torch.Tensor:
    """Rotate ``x: (..., T, d)`` for the positions ``positions: (T,)`` (default ``0..T-1``).

    Angles are computed in float64 and the result has ``x``'s dtype. ``positions`` may be any
    real numbers (integers in practice; negative is allowed: a rotation backwards).
    """
    d, t = x.shape[-1], x.shape[-2]
    positions = torch.arange(t) if positions is None else torch.as_tensor(positions)
    angles = positions.to(torch.float64)[:, None] * rope_frequencies(d, base)  # (T, d/2)
    turn = torch.complex(torch.cos(angles), torch.sin(angles)).to(x.device)
    return _turn(x.to(torch.float64), turn, pairing).to(x.dtype)


class RoPE(nn.Module):
    """Rotary embeddings for attention heads of size ``d_head``, positions ``0 .. max_len-1``.

    ``forward(q, k, q_offset=0, k_offset=0, in_place=False) -> (q, k)`` rotates ``q: (..., T_q, d_head)``
    for positions ``q_offset .. q_offset+T_q-1`` and ``k: (..., T_k, d_head)`` from ``k_offset``;
    ``in_place=True`` (the caller made ``q`` and ``k`` and needs them no more) turns them where they are
    when no gradient is recorded. ``MultiHeadAttention`` calls ``rope(q, k)``; for a KV-cache step pass
    ``rope.at(q_offset=t)``. No parameters: ``cos``/``sin`` tables ``(max_len, d_head/2)`` are non-persistent
    buffers.
    """

    @checks.boundary(checks._rope_init)
    def __init__(self, d_head: int, max_len: int = 4096, base: float = 10000.0, pairing: str = "interleaved"):
        super().__init__()
        self.d_head, self.max_len, self.base, self.pairing = d_head, int(max_len), base, pairing
        angles = torch.arange(self.max_len, dtype=torch.float64)[:, None] * rope_frequencies(d_head, base)
        self.register_buffer("cos", torch.cos(angles).float(), persistent=False)
        self.register_buffer("sin", torch.sin(angles).float(), persistent=False)
        self._tables = {}  # dtype -> the complex table of cos + i·sin

    def _turns(self, offset: int, t: int, dtype: torch.dtype) -> torch.Tensor:
        """``(t, d_head/2)`` complex ``cos + i·sin`` for positions ``offset .. offset+t-1``: rows of a table
        made once per dtype (and again when ``.to()`` moves the buffers)."""
        w = torch.promote_types(dtype, torch.float32)
        if w not in self._tables:
            with torch.inference_mode(False):  # a table made while generating also serves training
                self._tables[w] = torch.complex(self.cos.to(w), self.sin.to(w))
        return self._tables[w][offset : offset + t]

    def _apply(self, fn, recurse=True):
        self._tables = {}  # .to(), .cuda(), .half(), ...: the tables are made again from the moved buffers
        return super()._apply(fn, recurse)

    @checks.boundary(checks._rope_rotate)
    def rotate(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Rotate ``x: (..., T, d_head)`` for positions ``offset .. offset+T-1``."""
        if x.dtype == torch.float64:  # exact checks: recompute the angles in float64
            return apply_rope(x, torch.arange(offset, offset + x.shape[-2]), self.base, self.pairing)
        return _turn(x, self._turns(offset, x.shape[-2], x.dtype), self.pairing)

    @checks.boundary(checks._rope)
    def forward(self, q: torch.Tensor, k: torch.Tensor, q_offset: int = 0, k_offset: int = 0, in_place: bool = False):
        if q_offset != k_offset or q.shape[-2] != k.shape[-2] or q.dtype != k.dtype or q.dtype == torch.float64:
            return self.rotate(q, q_offset), self.rotate(k, k_offset)
        turn = self._turns(q_offset, q.shape[-2], q.dtype)  # the same positions: one table for both
        in_place = in_place and not torch.is_grad_enabled() and self.pairing == "interleaved"
        in_place = in_place and q.dtype == torch.float32 and q.stride(-1) == k.stride(-1) == 1
        return _turn(q, turn, self.pairing, in_place), _turn(k, turn, self.pairing, in_place)

    def at(self, q_offset: int = 0, k_offset: int = 0):
        """A callable ``(q, k) -> (q, k)`` with fixed offsets, for ``MultiHeadAttention(..., rope=...)``."""
        return partial(self.forward, q_offset=q_offset, k_offset=k_offset)

    def extra_repr(self) -> str:
        return f"d_head={self.d_head}, max_len={self.max_len}, base={self.base:g}, pairing={self.pairing!r}"
