"""Reference versions, written out, of what the model computes with library calls, and the identities the
notebooks check it against (companion code: the model never calls them).

- ``layer_norm`` / ``rms_norm``: LayerNorm and RMSNorm over the last axis, equal to ``nn.LayerNorm`` and
  ``nn.RMSNorm`` (notebook 06);
- ``rope_matrix`` / ``half_permutation``: RoPE as a ``(d, d)`` rotation matrix, and the permutation between
  its two layouts of pairs (notebook 05).
"""

import torch

from transformer_nb.core.checks import check_eps as _check_eps
from transformer_nb.core.checks import rope_dim as _check_dim
from transformer_nb.core.rope import apply_rope

# --------------------------------------------------------------------------- norms


def _check_norm_args(x, weight, bias=None, eps=1e-5) -> None:
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() < 1:
        what = f"dtype {x.dtype}, shape {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise TypeError(f"x must be a floating-point tensor of shape (..., d), got {what}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (not isinstance(t, torch.Tensor) or tuple(t.shape) != (x.shape[-1],)):
            got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{name} must have shape (d,) = ({x.shape[-1]},), got {got}")
    if eps is not None:
        _check_eps(eps)


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None, eps: float = 1e-5
) -> torch.Tensor:
    """LayerNorm over the last axis, written out: ``γ ⊙ (x - μ) / sqrt(σ² + ε) + β``.

    ``x: (..., d)``; ``μ`` and ``σ²`` are the mean and the *biased* variance (divide by ``d``)
    of each row; ``weight`` (γ) and ``bias`` (β) are ``(d,)`` or None. Same as ``nn.LayerNorm(d, eps)``.
    """
    _check_norm_args(x, weight, bias, eps)
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    y = (x - mu) / torch.sqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None = None, eps: float | None = None) -> torch.Tensor:
    """RMSNorm over the last axis, written out: ``γ ⊙ x / sqrt(mean(x²) + ε)`` (no centring, no β).

    ``x: (..., d)``, ``weight`` (γ): ``(d,)`` or None. ``eps=None`` means ``torch.finfo(x.dtype).eps``,
    the default of ``nn.RMSNorm``.
    """
    _check_norm_args(x, weight, None, eps)
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    y = x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps)
    return y if weight is None else y * weight


# --------------------------------------------------------------------------- RoPE


def rope_matrix(position: float, d: int, base: float = 10000.0, pairing: str = "interleaved") -> torch.Tensor:
    """The ``(d, d)`` float64 rotation ``R_Θ^m`` with ``apply_rope(x)[m] = R @ x[m]``.

    Block-diagonal when the pairing is interleaved."""
    _check_dim(d)
    eye = torch.eye(d, dtype=torch.float64)  # rows are basis vectors e_j
    cols = apply_rope(eye[:, None, :], torch.tensor([position]), base, pairing)[:, 0, :]  # row j = R e_j
    return cols.T


def half_permutation(d: int) -> torch.Tensor:
    """``(d,)`` index: ``x[..., perm]`` moves an interleaved layout to the half layout.

    With it, ``apply_rope(x[..., perm], pairing="half") == apply_rope(x, pairing="interleaved")[..., perm]``:
    interleaved pair ``(2i, 2i+1)`` becomes half pair ``(i, i + d/2)``.
    """
    _check_dim(d)
    return torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])
