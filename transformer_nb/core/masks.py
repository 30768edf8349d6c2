"""Attention masks (000 §8.2.4; 001 §19.6.2, §19.7.2).

Every mask here is **bool, True = may attend**, the convention of
``F.scaled_dot_product_attention``. ``interop.additive()`` turns one into the 0 / -inf float form
that is added to the scores (the form of ``nn.Transformer.generate_square_subsequent_mask``).
Careful: ``nn.MultiheadAttention``'s ``key_padding_mask`` and bool ``attn_mask`` use the
opposite polarity (True = blocked); pass ``~mask`` there.

Shapes: a causal mask is ``(T_q, T_k)``; batch masks are ``(B, 1, T_q, T_k)`` so they
broadcast over heads ``(B, h, T_q, T_k)``.
"""

import torch

from transformer_nb.core.utils import as_device, as_int, check_memory, is_int_tensor


def causal_mask(t_q: int, t_k: int | None = None, device=None) -> torch.Tensor:
    """``(T_q, T_k)`` bool, True where key j is not in query i's future.

    With ``T_k > T_q`` (queries are the last ``T_q`` positions, as when decoding with a
    KV cache) the last query sees every key: the mask is aligned bottom-right.
    """
    t_q = as_int("T_q", t_q)
    t_k = t_q if t_k is None else as_int("T_k", t_k)
    device = as_device("device", device)
    if t_k < t_q:
        raise ValueError(f"causal mask needs 0 <= T_q <= T_k, got T_q={t_q}, T_k={t_k}")
    check_memory(f"a causal mask of T_q={t_q} x T_k={t_k}", t_q * t_k, device)
    return torch.ones(t_q, t_k, dtype=torch.bool, device=device).tril(diagonal=t_k - t_q)


def padding_mask(lengths, max_len: int | None = None, device=None) -> torch.Tensor:
    """``(B, T)`` bool, True at real tokens, for sequences of the given ``lengths``.

    ``T`` is ``max_len``, else the longest length.
    """
    device = as_device("device", device)
    if isinstance(lengths, (list, tuple)) and any(isinstance(v, bool) for v in lengths):
        raise ValueError(f"lengths must be a 1-D integer sequence; True/False is not a length, got {lengths!r}")
    try:
        lengths = torch.as_tensor(lengths, device=device)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"lengths must be a 1-D integer sequence, got {type(lengths).__name__} {lengths!r}") from None
    if lengths.is_meta:
        raise ValueError("lengths are on the meta device: they have shapes but no values")
    if lengths.dim() == 1 and lengths.numel() == 0:
        raise ValueError("lengths is empty: a batch needs at least one sequence")
    if lengths.dim() != 1 or not is_int_tensor(lengths):
        raise ValueError(f"lengths must be a 1-D integer sequence, got {lengths.dtype} of shape {tuple(lengths.shape)}")
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    t = int(lengths.max()) if max_len is None else as_int("max_len", max_len)
    if (lengths > t).any():
        raise ValueError(f"a length exceeds max_len={t}: lengths {lengths.tolist()}")
    what = f"T=max(lengths)={t}" if max_len is None else f"max_len={t}"
    check_memory(f"a padding mask of B={len(lengths)} x {what}", len(lengths) * t, lengths.device)
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


def padding_mask_from_ids(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """``(B, T)`` bool, True where ``ids != pad_id``."""
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"ids must be a (B, T) torch.Tensor of token ids, got {type(ids).__name__}")
    if not is_int_tensor(ids):
        raise TypeError(f"ids must hold integer token ids, got dtype {ids.dtype}")
    if ids.dim() != 2:
        raise ValueError(f"ids must have shape (B, T), got {tuple(ids.shape)}")
    return ids != as_int("pad_id", pad_id, minimum=-(2**63))


def key_padding(keep: torch.Tensor, t_q: int = 1) -> torch.Tensor:
    """Key padding ``(B, T_k)`` -> attention mask ``(B, 1, T_q, T_k)`` (padded keys blocked)."""
    if not isinstance(keep, torch.Tensor) or keep.dtype != torch.bool:
        what = f"dtype {keep.dtype}" if isinstance(keep, torch.Tensor) else type(keep).__name__
        raise TypeError(f"keep must be a (B, T_k) bool mask (True = real token), got {what}")
    if keep.dim() != 2:
        raise ValueError(f"keep must be a (B, T_k) bool mask, got shape {tuple(keep.shape)}")
    t_q = as_int("T_q", t_q)
    return keep[:, None, None, :].expand(-1, 1, t_q, -1)


def self_attention_mask(keep: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """Self-attention mask ``(B, 1, T, T)`` for a padded batch ``keep: (B, T)``.

    Padded keys are blocked for every query; with ``causal`` future keys are blocked too.
    Padded *queries* still attend to the real keys (their outputs are ignored by the loss).
    """
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    mask = key_padding(keep, keep.shape[-1] if isinstance(keep, torch.Tensor) and keep.dim() else 0)
    if causal:
        mask = mask & causal_mask(keep.shape[-1], device=keep.device)
    return mask
