"""Scaled dot-product attention (000 §8.2, Eq. 8.1), the reference implementation.

    Attention(Q, K, V) = softmax(Q Kᵀ / sqrt(d_k) + M) V

It returns the weights as well as the output, so notebooks can look at them. Once taught,
notebooks and models use ``torch.nn.functional.scaled_dot_product_attention``; the tests
prove both give the same result.

Masks follow PyTorch: a **bool** mask is True where a query *may* attend; a **float**
mask is *added* to the scores (0 where allowed, -inf where blocked, or a finite bias such
as ALiBi's). A query row whose keys are all blocked gets zero weights and a zero output,
never NaN.
"""

import math

import torch

from transformer_nb.core.utils import INNER, as_real


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple:
    """Validate shapes ``q: (..., T_q, d_k)``, ``k: (..., T_k, d_k)``, ``v: (..., T_k, d_v)``.

    Returns the broadcast batch shape. Raises ``ValueError`` with both shapes on a mismatch.
    """
    for name, t in (("query", q), ("key", k), ("value", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() < 2:
            raise ValueError(f"{name} must have shape (..., T, d), got {tuple(t.shape)}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got dtype {t.dtype}")
        if t.device.type != "meta" and not torch.isfinite(t).all():
            raise ValueError(f"{name} contains NaN or inf; attention of such values is NaN")
    if q.shape[-1] == 0:
        raise ValueError(f"query and key need d_k >= 1, got query {tuple(q.shape)}")
    if not q.device == k.device == v.device:
        raise ValueError(f"query, key and value must be on one device, got {q.device}, {k.device}, {v.device}")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"query, key and value must share one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"query and key must share the last dimension d_k: query {tuple(q.shape)} "
            f"has d_k={q.shape[-1]}, key {tuple(k.shape)} has d_k={k.shape[-1]}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"key and value must have the same length T_k: key {tuple(k.shape)} has "
            f"T_k={k.shape[-2]}, value {tuple(v.shape)} has {v.shape[-2]}"
        )
    try:
        return torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"batch dimensions do not broadcast: query {tuple(q.shape)}, key {tuple(k.shape)}, value {tuple(v.shape)}"
        ) from None


def check_mask(mask: torch.Tensor, scores_shape: tuple, dtype: torch.dtype | None = None) -> None:
    """Validate a bool or additive float ``mask`` against scores of shape ``(..., T_q, T_k)``.

    ``dtype``: if given, a float mask must have this dtype (the dtype of the scores).
    """
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask must be a torch.Tensor, got {type(mask).__name__}")
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise TypeError(
            f"mask must be bool (True = may attend) or an additive float mask, got dtype "
            f"{mask.dtype}; for a 0/1 integer mask use mask.bool()"
        )
    try:
        ok = torch.broadcast_shapes(mask.shape, scores_shape) == tuple(scores_shape)
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to the attention scores "
            f"of shape {tuple(scores_shape)} (..., T_q, T_k)"
        )
    if mask.is_floating_point():
        if dtype is not None and mask.dtype != dtype:
            raise TypeError(f"a float mask must have the dtype of the query ({dtype}), got {mask.dtype}")
        if torch.isnan(mask).any() or torch.isposinf(mask).any():
            raise ValueError("a float mask is added to the scores and must not contain NaN or +inf")
        if mask.numel() and (mask == 1).any() and ((mask == 0) | (mask == 1)).all():
            raise ValueError(
                "this float mask holds only 0s and 1s, so it looks multiplicative; float masks are "
                "additive (0 = attend, -inf = blocked). Pass mask.bool() instead"
            )


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None, scale: float | None = None
):
    """Reference attention. Returns ``(output, weights)``.

    - ``q: (..., T_q, d_k)``, ``k: (..., T_k, d_k)``, ``v: (..., T_k, d_v)``
    - ``mask``: bool (True = may attend) or additive float, broadcastable to ``(..., T_q, T_k)``
    - ``scale``: a finite number, defaults to ``1 / sqrt(d_k)``
    - ``output: (..., T_q, d_v)``, ``weights: (..., T_q, T_k)``; each unmasked row of
      ``weights`` sums to 1, a fully masked row is all zeros.

    NaN or inf in ``q``, ``k``, ``v``, and scores that overflow their dtype (e.g. float16 past
    65504), are a ``ValueError``: a NaN never comes out.
    """
    if not INNER.depth:  # called by MultiHeadAttention: it checked its inputs
        batch = check_qkv(q, k, v)
        if mask is not None:
            check_mask(mask, (*batch, q.shape[-2], k.shape[-2]), dtype=q.dtype)
            if mask.device != q.device:
                raise ValueError(f"mask is on {mask.device}, the query on {q.device}; move the mask with .to()")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else as_real("scale", scale)
    scores = (q @ k.transpose(-2, -1)) * scale  # (..., T_q, T_k)
    if scores.device.type != "meta" and not torch.isfinite(scores).all():
        raise ValueError(
            f"the scores q·kᵀ·scale overflow {q.dtype} (largest {torch.finfo(q.dtype).max:.3g}); "
            f"use smaller query/key values, a smaller scale or a wider dtype"
        )
    if mask is not None:
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask
    blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)  # rows with nothing to attend to
    scores = scores.masked_fill(blocked, 0.0)  # no all -inf row: no NaN, not even in grads
    weights = torch.softmax(scores, dim=-1).masked_fill(blocked, 0.0)
    return weights @ v, weights
