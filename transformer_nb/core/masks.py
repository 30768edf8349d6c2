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

from transformer_nb.core import checks


@checks.boundary(checks._causal_mask)
def causal_mask(t_q: int, t_k: int | None = None, device=None) -> torch.Tensor:
    """``(T_q, T_k)`` bool, True where key j is not in query i's future.

    With ``T_k > T_q`` (queries are the last ``T_q`` positions, as when decoding with a
    KV cache) the last query sees every key: the mask is aligned bottom-right.
    """
    t_k = t_q if t_k is None else t_k
    return torch.ones(t_q, t_k, dtype=torch.bool, device=device).tril(diagonal=t_k - t_q)


# --------------------------------------------------------------------------- apart: padding (not the language model's)


@checks.boundary(checks._padding_mask)
def padding_mask(lengths, max_len: int | None = None, device=None) -> torch.Tensor:
    """``(B, T)`` bool, True at real tokens, for sequences of the given ``lengths``.

    ``T`` is ``max_len``, else the longest length.
    """
    lengths = torch.as_tensor(lengths, device=device)
    t = int(lengths.max()) if max_len is None else max_len
    return torch.arange(t, device=lengths.device)[None, :] < lengths[:, None]


@checks.boundary(checks._padding_mask_from_ids)
def padding_mask_from_ids(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """``(B, T)`` bool, True where ``ids != pad_id``."""
    return ids != pad_id


@checks.boundary(checks._key_padding)
def key_padding(keep: torch.Tensor, t_q: int = 1) -> torch.Tensor:
    """Key padding ``(B, T_k)`` -> attention mask ``(B, 1, T_q, T_k)`` (padded keys blocked)."""
    return keep[:, None, None, :].expand(-1, 1, t_q, -1)


@checks.boundary(checks._self_attention_mask)
def self_attention_mask(keep: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """Self-attention mask ``(B, 1, T, T)`` for a padded batch ``keep: (B, T)``.

    Padded keys are blocked for every query; with ``causal`` future keys are blocked too.
    Padded *queries* still attend to the real keys (their outputs are ignored by the loss).
    """
    mask = key_padding(keep, keep.shape[-1])
    if causal:
        mask = mask & causal_mask(keep.shape[-1], device=keep.device)
    return mask
