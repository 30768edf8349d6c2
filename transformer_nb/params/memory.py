"""Memory and compute of attention (004's memory table; 000 Ex 8.4).

``attention_matrix_bytes``: the attention weights of one layer; ``attention_flops``: the FLOPs of
one self-attention layer, split into its linear and quadratic parts; ``bytes_human`` prints
byte counts; ``kv_cache_bytes`` the size of a KV cache (002's formula).
"""

import math

from transformer_nb.core.utils import as_int


def attention_matrix_bytes(seq_len: int, n_heads: int = 1, bytes_per_value: int = 2, batch: int = 1) -> int:
    """Bytes of the attention weights of one layer: ``batch · n_heads · T² · bytes`` (fp16: 2 bytes)."""
    for name, v in (("seq_len", seq_len), ("n_heads", n_heads), ("bytes_per_value", bytes_per_value), ("batch", batch)):
        as_int(name, v, 1)
    return batch * n_heads * seq_len * seq_len * bytes_per_value


def attention_flops(seq_len: int, d_model: int, n_heads: int) -> dict:
    """FLOPs of one multi-head self-attention layer on one sequence (a multiply-add = 2 FLOPs).

    - ``projections``: Q, K, V and output, ``4 · 2·T·d²`` (linear in T);
    - ``scores``: ``Q Kᵀ`` for every head, ``h · 2·T²·d_k = 2·T²·d`` (quadratic in T);
    - ``weighted_sum``: ``A V`` for every head, also ``2·T²·d``.
    The softmax and the scaling (O(h·T²)) are left out, as FLOP counters do.
    """
    as_int("seq_len", seq_len, 1)
    as_int("d_model", d_model, 1)
    as_int("n_heads", n_heads, 1)
    if d_model % n_heads:
        raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")
    t, d = seq_len, d_model
    out = {"projections": 8 * t * d * d, "scores": 2 * t * t * d, "weighted_sum": 2 * t * t * d}
    out["total"] = sum(out.values())
    return out


def kv_cache_bytes(
    n_layers: int, n_kv_heads: int, d_head: int, seq_len: int, batch: int = 1, bytes_per_value: int = 2
) -> int:
    """Bytes a KV cache holds: ``2 (K and V) · layers · kv_heads · d_head · seq_len · batch · bytes``.

    002's formula ``2·L·h·d_k·n`` counts *values* for one sequence; multiply by the batch and
    by the bytes per value (2 for fp16/bf16) to get memory.
    """
    for name, v in (
        ("n_layers", n_layers),
        ("n_kv_heads", n_kv_heads),
        ("d_head", d_head),
        ("seq_len", seq_len),
        ("batch", batch),
        ("bytes_per_value", bytes_per_value),
    ):
        as_int(name, v, 0)
    return 2 * n_layers * n_kv_heads * d_head * seq_len * batch * bytes_per_value


def bytes_human(n: float, binary: bool = False) -> str:
    """``1073741824 -> '1.07 GB'`` (decimal, default) or ``'1 GiB'`` (``binary=True``)."""
    if isinstance(n, bool) or not isinstance(n, (int, float)) or not 0 <= n < math.inf:
        raise ValueError(f"n must be a finite number of bytes >= 0, got {n!r}")
    base, units = (
        (1024, ("B", "KiB", "MiB", "GiB", "TiB", "PiB")) if binary else (1000, ("B", "kB", "MB", "GB", "TB", "PB"))
    )
    i = 0
    while n >= base and i < len(units) - 1:
        n, i = n / base, i + 1
    return f"{n:.3g} {units[i]}"
