"""Memory: ``kv_cache_bytes``, the size of a KV cache (002's formula); ``bytes_human`` prints byte counts."""

import math

from transformer_nb.core.utils import as_int


def kv_cache_bytes(
    n_layers: int, n_kv_heads: int, d_head: int, seq_len: int, batch: int = 1, bytes_per_value: int = 2
) -> int:
    """Bytes a KV cache holds: ``2 (K and V) · layers · kv_heads · d_head · seq_len · batch · bytes``.

    002's formula ``2·L·h·d_k·n`` counts *values* for one sequence; multiply by the batch and
    by the bytes per value (2 for fp16/bf16) to get memory.
    """
    names = ("n_layers", "n_kv_heads", "d_head", "seq_len", "batch", "bytes_per_value")
    for name, v in zip(names, (n_layers, n_kv_heads, d_head, seq_len, batch, bytes_per_value)):
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
