"""Multi-head attention (000 §8.3; 002; 004 §6), with MQA/GQA as ``n_kv_heads < n_heads``.

Heads are one reshape, not a loop: ``(B, T, h·d_head) -> (B, h, T, d_head)``. The
attention itself is ``F.scaled_dot_product_attention``; set ``keep_weights = True`` (or use
``record_attention(model)``) to compute it with the reference implementation instead and
keep the weights ``(B, h, T_q, T_k)`` in ``last_weights`` for plotting.

Elsewhere: ``nn.MultiheadAttention`` twins in ``interop.py``; the analytic counts
(``params.attention_params``, ``params.kv_cache_bytes``) in ``params/``; ``record_attention`` and the
per-head descriptions (``head_stats``) in ``probes.py``.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.core.attention import check_mask, scaled_dot_product_attention
from transformer_nb.core.masks import causal_mask
from transformer_nb.core.utils import INNER, as_int, check_dropout, check_like


def check_hidden(x, d_model: int, name: str, dims: str = "B, T", like: torch.Tensor | None = None) -> None:
    """``x`` must be a floating-point ``(B, T, d_model)`` tensor (``dims="..."``: any leading dimensions);
    given ``like`` (a weight of the module), on its device and of its dtype (``utils.check_like``)."""
    shape = f"({dims}, d_model={d_model})"
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {shape}, got {type(x).__name__}")
    if (x.dim() != 3 if dims == "B, T" else x.dim() < 1) or x.shape[-1] != d_model:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a real floating-point tensor (hidden states, not ids), got dtype {x.dtype}")
    if like is not None:
        check_like(name, x, like)


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``(B, T, n_heads·d_head) -> (B, n_heads, T, d_head)``: head i gets features ``i·d_head ... (i+1)·d_head - 1``."""
    if not INNER.depth:  # called by the user (MultiHeadAttention passes its own projections)
        if not isinstance(x, torch.Tensor) or x.dim() != 3:
            raise ValueError(f"split_heads expects a (B, T, n_heads·d_head) tensor, got {_shape(x)}")
        n_heads = as_int("n_heads", n_heads, 1)
        if x.shape[2] % n_heads:
            raise ValueError(f"cannot split {x.shape[2]} features into n_heads={n_heads} equal heads")
    b, t, d = x.shape
    return x.reshape(b, t, n_heads, d // n_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``(B, h, T, d_head) -> (B, T, h·d_head)`` (the concatenation of the heads; inverse of ``split_heads``)."""
    if not INNER.depth and (not isinstance(x, torch.Tensor) or x.dim() != 4):
        raise ValueError(f"merge_heads expects a (B, h, T, d_head) tensor, got {_shape(x)}")
    return x.transpose(1, 2).flatten(2)


def _shape(x) -> str:
    return str(tuple(x.shape)) if isinstance(x, torch.Tensor) else type(x).__name__


MAX_WEIGHTS = 2**40  # 4·d_model² weights beyond this cannot be allocated on any machine (4 TB in float32)


def check_heads(d_model, n_heads, n_kv_heads=None, bias: bool = True) -> tuple[int, int, int]:
    """Checked ``(d_model, n_heads, n_kv_heads)``: positive ints, ``n_heads | d_model``, ``n_kv_heads | n_heads``;
    and ``bias`` a bool. The one check of the head sizes: ``MultiHeadAttention``, ``config.validate``
    and ``params.attention_params`` call it."""
    d_model, n_heads = as_int("d_model", d_model, 1), as_int("n_heads", n_heads, 1)
    n_kv_heads = n_heads if n_kv_heads is None else as_int("n_kv_heads", n_kv_heads, 1)
    if 4 * d_model * d_model > MAX_WEIGHTS:
        raise ValueError(f"d_model={d_model} would need 4·d_model² = {4 * d_model * d_model:.2e} weights")
    if d_model % n_heads:
        raise ValueError(
            f"n_heads={n_heads} must divide d_model={d_model} (each head gets d_model / n_heads dimensions)"
        )
    if n_heads % n_kv_heads:
        raise ValueError(
            f"n_kv_heads={n_kv_heads} must divide n_heads={n_heads} "
            f"(each key/value head is shared by a whole group of query heads)"
        )
    if not isinstance(bias, bool):
        raise TypeError(f"bias must be True or False, got {bias!r}")
    return d_model, n_heads, n_kv_heads


class MultiHeadAttention(nn.Module):
    """Multi-head attention with ``4·d_model²`` weights (+ ``4·d_model`` biases) when ``n_kv_heads == n_heads``.

    - ``forward(query, key=None, value=None, mask=None, is_causal=False, rope=None)``
      ``query: (B, T_q, d_model)``, ``key``/``value: (B, T_k, d_model)`` (default: self-attention),
      ``mask``: bool (True = may attend) or additive float, broadcastable to ``(B, h, T_q, T_k)``.
      ``rope``: optional callable ``rope(q, k) -> (q, k)`` on ``(B, h, T, d_head)`` tensors.
      ``cache``: a ``KVCache`` (self-attention): the new keys and values join the cached ones and the
      queries attend over all of them; ``rope`` is then called as ``rope(q, k, cache.length, cache.length)``
      (``RoPE.forward``'s offsets: the new tokens' positions). Returns ``(B, T_q, d_model)``.
    - ``n_kv_heads``: number of key/value heads; 1 is MQA, ``1 < n_kv_heads < n_heads`` is GQA.
      Query head ``i`` uses key/value head ``i // (n_heads // n_kv_heads)``.
    """

    def __init__(
        self, d_model: int, n_heads: int, n_kv_heads: int | None = None, bias: bool = True, dropout: float = 0.0
    ):
        super().__init__()
        d_model, n_heads, n_kv_heads = check_heads(d_model, n_heads, n_kv_heads, bias)
        check_dropout(dropout)
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, n_kv_heads
        self.d_head = d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, n_kv_heads * self.d_head, bias=bias)
        self.v_proj = nn.Linear(d_model, n_kv_heads * self.d_head, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = dropout
        self.keep_weights = False
        self.last_weights = None

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, n_kv_heads={self.n_kv_heads}, d_head={self.d_head}"

    def _check(self, query, key, value):
        for name, t in (("query", query), ("key", key), ("value", value)):
            check_hidden(t, self.d_model, name, like=self.q_proj.weight)
        if key.shape[1] != value.shape[1]:
            raise ValueError(
                f"key and value must have the same length: key has T_k={key.shape[1]}, value has {value.shape[1]}"
            )
        if not (query.shape[0] == key.shape[0] == value.shape[0]):
            raise ValueError(f"batch sizes differ: query {query.shape[0]}, key {key.shape[0]}, value {value.shape[0]}")

    def check_mask(self, mask, b, t_q, t_k):
        try:
            check_mask(mask, (b, self.n_heads, t_q, t_k))
        except ValueError as err:
            if isinstance(mask, torch.Tensor) and mask.dim() == 2 and tuple(mask.shape) == (b, t_k):
                raise ValueError(
                    f"{err}. This looks like a (B, T_k) key-padding mask: turn it into an attention "
                    f"mask with masks.key_padding(keep, T_q), shape (B, 1, T_q, T_k)"
                ) from None
            raise

    def kv_heads(self, key: torch.Tensor, value: torch.Tensor | None = None):
        """Project and split keys and values: ``(B, T_k, d_model) -> (B, n_kv_heads, T_k, d_head)`` each.

        These two tensors are exactly what a KV cache stores for one layer.
        """
        value = key if value is None else value
        return split_heads(self.k_proj(key), self.n_kv_heads), split_heads(self.v_proj(value), self.n_kv_heads)

    def forward(self, query, key=None, value=None, mask=None, is_causal: bool = False, rope=None, cache=None):
        key = query if key is None else key
        value = key if value is None else value
        if not INNER.depth:  # called by the user: check; called by a block: the block checked
            self._check(query, key, value)
            if cache is not None and not (key is query and value is query):
                raise ValueError("cache= is for self-attention: call forward(x, cache=...) without key and value")
            if mask is not None:
                past = 0 if cache is None else cache.length
                self.check_mask(mask, query.shape[0], query.shape[1], past + key.shape[1])
        with INNER:
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
            k, v = cache.append(k, v)  # every key and value so far: (B, kv, T_past + T_q, d_head)
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
    ``(B, n_kv_heads, length, d_head)`` each. ``MultiHeadAttention.forward(x, cache=...)`` calls it.
    """

    def __init__(self, capacity: int):
        self.capacity, self.length = as_int("capacity", capacity, 1), 0
        self.k = self.v = None  # (B, n_kv_heads, capacity, d_head) buffers, made by the first append

    def append(self, k: torch.Tensor, v: torch.Tensor):
        if not INNER.depth:  # MultiHeadAttention made k and v itself
            _check_kv(k, v)
        t0, t1 = self.length, self.length + k.shape[2]
        if t1 > self.capacity:
            raise ValueError(f"the KV cache holds {self.capacity} positions; {t1} were asked for")
        if self.k is None:
            self.k, self.v = (x.new_empty(*x.shape[:2], self.capacity, x.shape[3]) for x in (k, v))
        elif (
            k.shape[:2] != self.k.shape[:2]
            or k.shape[3] != self.k.shape[3]
            or k.dtype != self.k.dtype
            or k.device != self.k.device
        ):
            raise ValueError(
                f"the cache holds keys of shape (B, heads, T, d_head) = {tuple(self.k.shape[:2])} x T x "
                f"{self.k.shape[3]} in {self.k.dtype} on {self.k.device}; "
                f"got k {tuple(k.shape)} in {k.dtype} on {k.device}"
            )
        self.k.narrow(2, t0, t1 - t0).copy_(k)
        self.v.narrow(2, t0, t1 - t0).copy_(v)
        self.length = t1
        return self.k.narrow(2, 0, t1), self.v.narrow(2, 0, t1)

    def nbytes(self) -> int:
        """Bytes of the keys and values stored so far (it grows linearly with ``length``)."""
        return 0 if self.k is None else 2 * self.k[:, :, : self.length].numel() * self.k.element_size()


def _check_kv(k, v) -> None:
    for name, x in (("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor) or x.dim() != 4:
            raise ValueError(f"{name} must be a (B, n_kv_heads, T_new, d_head) tensor, got {_shape(x)}")
    if v.shape != k.shape or v.dtype != k.dtype or v.device != k.device or not k.shape[3]:
        raise ValueError(
            f"v must match k in shape (d_head >= 1), dtype and device: k is {tuple(k.shape)} {k.dtype} "
            f"on {k.device}, v is {tuple(v.shape)} {v.dtype} on {v.device}"
        )
