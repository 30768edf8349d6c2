"""The reversal task's data (001 §19.10.1–19.10.2): symbols, padded batches, the teacher-forcing shift.

Token ids: ``PAD=0, BOS=1, EOS=2``, symbols ``3 .. 12`` (``N_SYMBOLS`` = 10:
the vocabulary has ``VOCAB_SIZE`` = 13 ids). A source has a length ``L`` in ``[min_len, max_len]``;
its target is the source reversed.

- ``make_pairs``: the text's list-of-pairs generator; ``random_batch``: a vectorised one that
  draws a fresh batch each step. Both can exclude a held-out set, so evaluation sequences are
  never trained on (``heldout_set`` is the fixed evaluation set).
- ``Batch``: ``src (B, S)``, ``tgt_in (B, T)`` (``BOS y1 .. yL``), ``tgt_out (B, T)``
  (``y1 .. yL EOS``), and the bool padding masks ``src_keep``, ``tgt_keep`` (True = real token).
  ``shift_for_teacher_forcing`` makes ``tgt_in`` / ``tgt_out`` from the bare targets.

Data is drawn on the CPU with a CPU ``torch.Generator`` (the same numbers on every machine) and
moved to ``device`` (default: the CPU).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn as nn

from transformer_nb.core.checks import check_ids
from transformer_nb.core.utils import as_int, check_memory

PAD, BOS, EOS = 0, 1, 2
FIRST_SYMBOL = 3
N_SYMBOLS = 10
VOCAB_SIZE = FIRST_SYMBOL + N_SYMBOLS  # 13: 10 symbols + PAD + BOS + EOS
MIN_LEN, MAX_LEN = 3, 8
MAX_CODE_LEN = 16  # sequence_codes is exact up to this many tokens (13**16 < 2**63)


def _check_lengths(min_len, max_len) -> None:
    as_int("min_len", min_len, 1)
    if as_int("max_len", max_len, 1) < min_len:
        raise ValueError(f"min_len must be <= max_len, got min_len={min_len}, max_len={max_len}")


def check_tokens(ids, name: str, allowed: str = "tokens") -> None:
    """``ids``: a ``(B, T)`` tensor of the task's ids; ``allowed="symbols"``: only PAD and symbols, right-padded."""
    check_ids(ids, name)
    if ids.is_meta:
        raise ValueError(f"{name} is on the meta device: it has shapes but no token ids")
    if not ids.numel():
        return
    lo = FIRST_SYMBOL if allowed == "symbols" else 0
    bad = ((ids < lo) & (ids != PAD)) | (ids >= VOCAB_SIZE)
    if bad.any():
        raise ValueError(
            f"{name} must hold PAD ({PAD}) and ids in [{lo}, {VOCAB_SIZE}), got {sorted(set(ids[bad].tolist()))[:5]}"
        )
    if allowed == "symbols":
        keep = ids != PAD
        if (keep[:, 1:] & ~keep[:, :-1]).any():
            raise ValueError(f"{name} must be right-padded: a real token follows a PAD in some row")


class Batch(NamedTuple):
    """A padded batch. ``src: (B, S)``, ``tgt_in``/``tgt_out: (B, T)`` with ``T = S + 1`` (one
    position for BOS / EOS), ``src_keep: (B, S)`` and ``tgt_keep: (B, T)`` bool, True at real tokens."""

    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    src_keep: torch.Tensor
    tgt_keep: torch.Tensor

    @property
    def lengths(self) -> torch.Tensor:
        """``(B,)`` source lengths."""
        return self.src_keep.sum(1)

    def __len__(self) -> int:
        return self.src.shape[0]

    def to(self, device) -> Batch:
        """The same batch on ``device`` (itself if it is there already)."""
        return Batch(*(t.to(device) for t in self))


def make_pairs(
    n: int,
    min_len: int = MIN_LEN,
    max_len: int = MAX_LEN,
    generator: torch.Generator | None = None,
    exclude=None,
) -> list:
    """The text's generator (001 §19.10.1): ``n`` pairs ``(src, reversed(src))`` as lists of ints.

    Each length is uniform in ``[min_len, max_len]``, each symbol uniform in
    ``[3, 3 + N_SYMBOLS)``. ``exclude``: a set of tuples never to produce (redrawn instead).
    """
    _check_lengths(min_len, max_len)
    as_int("n", n, 0)
    pairs = []
    while len(pairs) < n:
        length = int(torch.randint(min_len, max_len + 1, (1,), generator=generator))
        src = torch.randint(FIRST_SYMBOL, VOCAB_SIZE, (length,), generator=generator).tolist()
        if exclude and tuple(src) in exclude:
            continue
        pairs.append((src, src[::-1]))
    return pairs


def shift_for_teacher_forcing(tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Decoder input and labels from right-padded targets ``tgt: (B, L)`` (symbols, then PAD).

    ``tgt_in = BOS y1 .. yL`` and ``tgt_out = y1 .. yL EOS``, both ``(B, L + 1)`` and PAD after:
    the label at position t is the token the decoder must predict having seen ``tgt_in[:, :t+1]``.
    """
    check_tokens(tgt, "tgt", allowed="symbols")
    return _shift(tgt)


def _shift(tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    b, length = tgt.shape
    lengths = (tgt != PAD).sum(1)
    full = torch.full((b, length + 2), PAD, dtype=torch.long, device=tgt.device)
    full[:, 0] = BOS
    full[:, 1 : length + 1] = tgt
    full[torch.arange(b, device=tgt.device), lengths + 1] = EOS
    tgt_in, tgt_out = full[:, :-1], full[:, 1:]
    # a shorter row's EOS would land in tgt_in too (the text's collate keeps it there; its label is
    # PAD, so it is harmless): we replace it by PAD so that tgt_in is exactly "BOS y1 .. yL".
    return tgt_in.masked_fill(tgt_in == EOS, PAD), tgt_out


def _batch(src: torch.Tensor, tgt: torch.Tensor) -> Batch:
    tgt_in, tgt_out = _shift(tgt)
    return Batch(src, tgt_in, tgt_out, src != PAD, tgt_in != PAD)


def collate(pairs, device=None) -> Batch:
    """Pad a list of ``(src, tgt)`` pairs (lists of symbols) into a :class:`Batch` on ``device`` (001 §19.10.2)."""
    if not pairs:
        raise ValueError("collate needs at least one (src, tgt) pair")
    rows = lambda i: [torch.tensor(p[i], dtype=torch.long) for p in pairs]
    src = nn.utils.rnn.pad_sequence(rows(0), batch_first=True, padding_value=PAD)
    tgt = nn.utils.rnn.pad_sequence(rows(1), batch_first=True, padding_value=PAD)
    check_tokens(src, "the sources", allowed="symbols")
    check_tokens(tgt, "the targets", allowed="symbols")
    return _batch(src, tgt).to(device or "cpu")


def reverse_padded(src: torch.Tensor) -> torch.Tensor:
    """Reverse each right-padded row of ``src: (B, S)`` within its own length; PAD stays at the end."""
    check_tokens(src, "src", allowed="symbols")
    return _reverse(src)


def _reverse(src: torch.Tensor) -> torch.Tensor:
    keep = src != PAD
    lengths = keep.sum(1, keepdim=True)
    pos = torch.arange(src.shape[1], device=src.device)[None, :]
    rev = torch.gather(src, 1, (lengths - 1 - pos).clamp(min=0))
    return torch.where(keep, rev, torch.full_like(rev, PAD))


def sequence_codes(src: torch.Tensor) -> torch.Tensor:
    """``(B,)`` int64: one number per right-padded row, equal only for equal sequences (any padding width).

    Little-endian base-``VOCAB_SIZE`` digits; PAD = 0 adds nothing. Exact up to 16 tokens.
    """
    check_tokens(src, "src")
    if src.shape[1] > MAX_CODE_LEN:
        raise ValueError(f"sequence_codes is exact for at most {MAX_CODE_LEN} tokens, got width {src.shape[1]}")
    return _codes(src)


def _codes(src: torch.Tensor) -> torch.Tensor:
    powers = VOCAB_SIZE ** torch.arange(src.shape[1], dtype=torch.long, device=src.device)
    return (src.long() * powers).sum(1)


def _draw(n, min_len, max_len, generator) -> torch.Tensor:
    """``(n, max_len)`` right-padded random sources."""
    lengths = torch.randint(min_len, max_len + 1, (n,), generator=generator)
    src = torch.randint(FIRST_SYMBOL, VOCAB_SIZE, (n, max_len), generator=generator)
    src[torch.arange(max_len)[None, :] >= lengths[:, None]] = PAD
    return src


def random_batch(
    batch_size: int,
    min_len: int = MIN_LEN,
    max_len: int = MAX_LEN,
    generator: torch.Generator | None = None,
    exclude: torch.Tensor | None = None,
    device=None,
) -> Batch:
    """A fresh random batch, drawn on the CPU with tensor ops (no Python loop over sequences), on ``device``.

    ``exclude``: ``sequence_codes`` of held-out sequences; rows that hit one are redrawn. The
    batch is trimmed to its longest row.
    """
    _check_lengths(min_len, max_len)
    as_int("batch_size", batch_size, 1)
    check_memory(f"batch_size={batch_size} (the batch's three id tensors)", 3 * 8 * batch_size * (max_len + 2))
    src = _draw(batch_size, min_len, max_len, generator)
    if exclude is not None and exclude.numel():
        if max_len > MAX_CODE_LEN:
            raise ValueError(f"exclude works for sequences of at most {MAX_CODE_LEN} tokens, got max_len={max_len}")
        exclude = exclude.cpu()
        hit = torch.isin(_codes(src), exclude)
        while hit.any():  # rare: redraw the rows that hit a held-out sequence
            src[hit] = _draw(int(hit.sum()), min_len, max_len, generator)
            hit = torch.isin(_codes(src), exclude)
    src = src[:, : int((src != PAD).sum(1).max())]  # trim to the longest row
    return _batch(src, _reverse(src)).to(device or "cpu")


def heldout_set(n: int = 1000, seed: int = 1234, device=None) -> Batch:
    """The fixed evaluation set: ``n`` sequences from their own generator (training excludes them), on ``device``."""
    return random_batch(n, generator=torch.Generator().manual_seed(seed), device=device)


def parse_tokens(text: str) -> list:
    """``"3 5 7 9 4"`` (spaces or commas) -> ``[3, 5, 7, 9, 4]``; ValueError for anything else."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string of symbols such as '3 5 7 9 4', got {type(text).__name__}")
    parts = [p for p in text.replace(",", " ").replace("[", " ").replace("]", " ").split() if p]
    if not parts:
        raise ValueError("type at least one token, e.g. 3 5 7 9 4")
    try:
        toks = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"tokens must be integers, got {text!r}") from None
    lo, hi = FIRST_SYMBOL, VOCAB_SIZE - 1
    bad = [t for t in toks if not lo <= t <= hi]
    if bad:
        raise ValueError(f"symbols are the integers {lo}..{hi} (0, 1, 2 are PAD, BOS, EOS); got {bad}")
    return toks
