"""Multi-head attention (000 §8.3; 002; 004 §6), with MQA/GQA as ``n_kv_heads < n_heads``.

Heads are one reshape, not a loop: ``(B, T, h·d_head) -> (B, h, T, d_head)``. The
attention itself is ``F.scaled_dot_product_attention``; set ``keep_weights = True`` (or use
``record_attention(model)``) to compute it with the reference implementation instead and
keep the weights ``(B, h, T_q, T_k)`` in ``last_weights`` for plotting.
"""

import weakref

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.core import checks
from transformer_nb.core.attention import scaled_dot_product_attention
from transformer_nb.core.masks import causal_mask


@checks.boundary(checks._split_heads)
def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``(B, T, n_heads·d_head) -> (B, n_heads, T, d_head)``: head i gets features ``i·d_head ... (i+1)·d_head - 1``."""
    b, t, d = x.shape
    return x.reshape(b, t, n_heads, d // n_heads).transpose(1, 2)


@checks.boundary(checks._merge_heads)
def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``(B, h, T, d_head) -> (B, T, h·d_head)`` (the concatenation of the heads; inverse of ``split_heads``)."""
    return x.transpose(1, 2).flatten(2)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with ``4·d_model²`` weights (+ ``4·d_model`` biases) when ``n_kv_heads == n_heads``.

    - ``forward(query, key=None, value=None, mask=None, is_causal=False, rope=None, cache=None)``
      ``query: (B, T_q, d_model)``, ``key``/``value: (B, T_k, d_model)`` (default: self-attention),
      ``mask``: bool (True = may attend) or additive float, broadcastable to ``(B, h, T_q, T_k)``.
      ``rope``: optional callable ``rope(q, k) -> (q, k)`` on ``(B, h, T, d_head)`` tensors.
      ``cache``: a ``KVCache`` (self-attention): the new keys and values join the cached ones and the
      queries attend over all of them; ``rope`` is then called as ``rope(q, k, cache.length, cache.length)``
      (``RoPE.forward``'s offsets: the new tokens' positions). Returns ``(B, T_q, d_model)``.
    - ``n_kv_heads``: number of key/value heads; 1 is MQA, ``1 < n_kv_heads < n_heads`` is GQA.
      Query head ``i`` uses key/value head ``i // (n_heads // n_kv_heads)``.
    """

    @checks.boundary(checks._multihead_init)
    def __init__(
        self, d_model: int, n_heads: int, n_kv_heads: int | None = None, bias: bool = True, dropout: float = 0.0
    ):
        super().__init__()
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        self.d_model, self.n_heads, self.n_kv_heads = int(d_model), int(n_heads), int(n_kv_heads)
        self.d_head = self.d_model // self.n_heads
        self.q_proj = nn.Linear(self.d_model, self.d_model, bias=bias)
        self.k_proj = nn.Linear(self.d_model, self.n_kv_heads * self.d_head, bias=bias)
        self.v_proj = nn.Linear(self.d_model, self.n_kv_heads * self.d_head, bias=bias)
        self.out_proj = nn.Linear(self.d_model, self.d_model, bias=bias)
        self.dropout = dropout
        self.keep_weights = False
        self.last_weights = None

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, n_kv_heads={self.n_kv_heads}, d_head={self.d_head}"

    def kv_heads(self, key: torch.Tensor, value: torch.Tensor):
        """Project and split keys and values: ``(B, T_k, d_model) -> (B, n_kv_heads, T_k, d_head)`` each.

        These two tensors are exactly what a KV cache stores for one layer.
        """
        return split_heads(self.k_proj(key), self.n_kv_heads), split_heads(self.v_proj(value), self.n_kv_heads)

    @checks.boundary(checks._multihead)
    def forward(self, query, key=None, value=None, mask=None, is_causal: bool = False, rope=None, cache=None):
        key = query if key is None else key
        value = key if value is None else value
        return self.out_proj(merge_heads(self._attend(query, key, value, mask, is_causal, rope, cache)))

    def _share(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, n_kv_heads, T, d_head) -> (B, n_heads, T, d_head)``: query head i uses K/V head i // group."""
        return x.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)

    def _attend(self, query, key, value, mask, is_causal, rope, cache) -> torch.Tensor:
        """The heads' outputs ``(B, h, T_q, d_head)``."""
        t_q = query.shape[1]
        q = split_heads(self.q_proj(query), self.n_heads)  # (B, h, T_q, d_head)
        k, v = self.kv_heads(key, value)  # (B, kv, T_k, d_head)
        if rope is not None:  # with a cache, the new tokens sit at positions cache.length ..
            q, k = rope(q, k) if cache is None else rope(q, k, cache.length, cache.length)
        if cache is not None:
            k, v = cache.append(k, v, owner=self)  # every key and value so far: (B, kv, T_past + T_q, d_head)
        t_k = k.shape[2]
        if self.n_kv_heads != self.n_heads:  # GQA/MQA: each K/V head serves a group of query heads
            k, v = self._share(k), self._share(v)
        if is_causal and (t_q > 1 or t_k < t_q):  # aligned bottom-right: one query (the newest) sees every key
            causal = causal_mask(t_q, t_k, device=query.device)
            if mask is None:
                mask = causal
            elif mask.dtype == torch.bool:
                mask = mask & causal
            else:
                mask = mask.masked_fill(~causal, float("-inf"))
        p = self.dropout if self.training else 0.0
        if not self.keep_weights:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        out, w = scaled_dot_product_attention(q, k, v, mask)
        self.last_weights = w.detach()
        return F.dropout(w, p) @ v if p else out  # dropout acts on the weights, as in F.scaled_dot_product_attention


class KVCache:
    """The keys and values one self-attention layer has seen, for decoding a token at a time (002).

    ``append(k, v)`` writes the new keys and values ``(B, n_kv_heads, T_new, d_head)`` at positions
    ``length .. length + T_new - 1`` of buffers allocated once, for ``capacity`` positions (``torch.cat``
    would copy every stored one again at every step), and returns all of them so far,
    ``(B, n_kv_heads, length, d_head)`` each. ``MultiHeadAttention.forward(x, cache=...)`` calls it;
    a cache belongs to the one layer that first fills it (``owner``).
    """

    @checks.boundary(checks._kv_cache_init)
    def __init__(self, capacity: int):
        self.capacity, self.length = int(capacity), 0
        self.k = self.v = None  # (B, n_kv_heads, capacity, d_head) buffers, made by the first append
        self.owner = None  # a weak reference to the layer whose keys and values these are

    def append(self, k: torch.Tensor, v: torch.Tensor, owner: nn.Module | None = None):
        t0, t1 = self.length, self.length + k.shape[2]
        if self.k is None:
            self.k, self.v = (x.new_empty(*x.shape[:2], self.capacity, x.shape[3]) for x in (k, v))
            self.owner = None if owner is None else weakref.ref(owner)
        self.k.narrow(2, t0, t1 - t0).copy_(k)
        self.v.narrow(2, t0, t1 - t0).copy_(v)
        self.length = t1
        return self.k.narrow(2, 0, t1), self.v.narrow(2, 0, t1)

    def nbytes(self) -> int:
        """Bytes of the keys and values stored so far (it grows linearly with ``length``)."""
        return 0 if self.k is None else 2 * self.k[:, :, : self.length].numel() * self.k.element_size()
