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

from transformer_nb.core import checks


@checks.boundary(checks._attention)
def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None, scale: float | None = None
):
    """Reference attention. Returns ``(output, weights)``.

    - ``q: (..., T_q, d_k)``, ``k: (..., T_k, d_k)``, ``v: (..., T_k, d_v)``
    - ``mask``: bool (True = may attend) or additive float, broadcastable to ``(..., T_q, T_k)``
    - ``scale``: a finite number, defaults to ``1 / sqrt(d_k)``
    - ``output: (..., T_q, d_v)``, ``weights: (..., T_q, T_k)``; each unmasked row of
      ``weights`` sums to 1, a fully masked row is all zeros.
    """
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    scores = (q @ k.transpose(-2, -1)) * scale  # (..., T_q, T_k)
    checks.finite_scores(scores, q.dtype)  # e.g. float16 past 65504: an error, never a NaN
    if mask is not None:
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask
    blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)  # rows with nothing to attend to
    scores = scores.masked_fill(blocked, 0.0)  # no all -inf row: no NaN, not even in grads
    weights = torch.softmax(scores, dim=-1).masked_fill(blocked, 0.0)
    return weights @ v, weights
