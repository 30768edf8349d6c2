"""Multi-head attention (000 §8.3; 002; 004 §6), with MQA/GQA as ``n_kv_heads < n_heads``.

Heads are one reshape, not a loop: ``(B, T, h·d_head) -> (B, h, T, d_head)``. The
attention itself is ``F.scaled_dot_product_attention``; set ``keep_weights = True`` (or use
``record_attention(model)``) to compute it with the reference implementation instead and
keep the weights ``(B, h, T_q, T_k)`` in ``last_weights`` for plotting.
"""
from contextlib import contextmanager

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.attention import check_mask, scaled_dot_product_attention
from transformer_nb.masks import causal_mask


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``(B, T, n_heads·d_head) -> (B, n_heads, T, d_head)``."""
    b, t, d = x.shape
    return x.view(b, t, n_heads, d // n_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``(B, h, T, d_head) -> (B, T, h·d_head)``."""
    b, h, t, dh = x.shape
    return x.transpose(1, 2).reshape(b, t, h * dh)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with ``4·d_model²`` weights (+ ``4·d_model`` biases) when ``n_kv_heads == n_heads``.

    - ``forward(query, key=None, value=None, mask=None, is_causal=False, rope=None)``
      ``query: (B, T_q, d_model)``, ``key``/``value: (B, T_k, d_model)`` (default: self-attention),
      ``mask``: bool (True = may attend) or additive float, broadcastable to ``(B, h, T_q, T_k)``.
      ``rope``: optional callable ``rope(q, k) -> (q, k)`` on ``(B, h, T, d_head)`` tensors.
      Returns ``(B, T_q, d_model)``.
    - ``n_kv_heads``: number of key/value heads; 1 is MQA, ``1 < n_kv_heads < n_heads`` is GQA.
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None,
                 bias: bool = True, dropout: float = 0.0):
        super().__init__()
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        if n_heads <= 0 or d_model % n_heads:
            raise ValueError(f"n_heads={n_heads} must divide d_model={d_model} "
                             f"(each head gets d_model / n_heads dimensions)")
        if n_kv_heads <= 0 or n_heads % n_kv_heads:
            raise ValueError(f"n_kv_heads={n_kv_heads} must divide n_heads={n_heads} "
                             f"(each key/value head is shared by a whole group of query heads)")
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, n_kv_heads
        self.d_head = d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, n_kv_heads * self.d_head, bias=bias)
        self.v_proj = nn.Linear(d_model, n_kv_heads * self.d_head, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = dropout
        self.keep_weights = False
        self.last_weights = None

    def _check(self, query, key, value):
        for name, t in (("query", query), ("key", key), ("value", value)):
            if t.dim() != 3 or t.shape[-1] != self.d_model:
                raise ValueError(f"{name} must have shape (B, T, d_model={self.d_model}), got {tuple(t.shape)}")
        if key.shape[1] != value.shape[1]:
            raise ValueError(f"key and value must have the same length: key has T_k={key.shape[1]}, "
                             f"value has {value.shape[1]}")
        if not (query.shape[0] == key.shape[0] == value.shape[0]):
            raise ValueError(f"batch sizes differ: query {query.shape[0]}, key {key.shape[0]}, value {value.shape[0]}")

    def forward(self, query, key=None, value=None, mask=None, is_causal: bool = False, rope=None):
        key = query if key is None else key
        value = key if value is None else value
        self._check(query, key, value)
        b, t_q, t_k = query.shape[0], query.shape[1], key.shape[1]
        q = split_heads(self.q_proj(query), self.n_heads)          # (B, h, T_q, d_head)
        k = split_heads(self.k_proj(key), self.n_kv_heads)         # (B, kv, T_k, d_head)
        v = split_heads(self.v_proj(value), self.n_kv_heads)
        if rope is not None:
            q, k = rope(q, k)
        if self.n_kv_heads != self.n_heads:                        # GQA/MQA: share each K/V head
            k = k.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)
            v = v.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)
        if mask is not None:
            check_mask(mask, (b, self.n_heads, t_q, t_k))
        if is_causal:
            causal = causal_mask(t_q, t_k, device=query.device)
            if mask is None:
                mask = causal
            elif mask.dtype == torch.bool:
                mask = mask & causal
            else:
                mask = mask.masked_fill(~causal, float("-inf"))
        p = self.dropout if self.training else 0.0
        if self.keep_weights:
            out, w = scaled_dot_product_attention(q, k, v, mask)
            self.last_weights = w.detach()
            out = F.dropout(out, p) if p else out
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        return self.out_proj(merge_heads(out))


@contextmanager
def record_attention(model: nn.Module):
    """Within the block, every ``MultiHeadAttention`` in ``model`` keeps its weights in ``last_weights``."""
    mods = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    for m in mods:
        m.keep_weights = True
    try:
        yield mods
    finally:
        for m in mods:
            m.keep_weights = False
