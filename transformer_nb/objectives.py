"""The three training objectives of the three variants (000 §8.6; 001 §19.11; 004 §13), on toy batches.

- ``lm_batch``: causal LM (GPT): predict the next token at every position;
- ``mlm_batch``: masked LM (BERT): hide ~15 % of the tokens, predict them from both sides;
- ``span_corruption``: T5: drop spans from the source, mark each with a sentinel, predict the spans;
- ``lm_loss``: the cross-entropy over the positions that carry a target;
- ``describe_objective``: name an objective from the ``(inputs, targets)`` it was given.

Targets hold ``IGNORE`` (``F.cross_entropy``'s default ``ignore_index``) where no loss is taken.
"""

from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.core.checks import check_ids, check_keep
from transformer_nb.core.utils import as_int

IGNORE = -100  # F.cross_entropy's default ignore_index: positions with this target carry no loss


def lm_batch(ids: torch.Tensor, keep: torch.Tensor | None = None, ignore_index: int = IGNORE):
    """Causal LM (GPT): ``inputs = ids[:, :-1]``, ``targets = ids[:, 1:]``; padded targets -> ``ignore_index``.

    Returns ``(inputs, targets, inputs_keep)``, all ``(B, T-1)``.
    """
    check_ids(ids, "ids", min_len=2)
    keep = torch.ones_like(ids, dtype=torch.bool) if keep is None else keep
    check_keep(keep, ids.shape[0], ids.shape[1], "keep")
    targets = ids[:, 1:].masked_fill(~keep[:, 1:], ignore_index)
    return ids[:, :-1], targets, keep[:, :-1]


def mlm_batch(
    ids: torch.Tensor,
    keep: torch.Tensor | None,
    mask_id: int,
    vocab: int,
    p: float = 0.15,
    generator: torch.Generator | None = None,
    ignore_index: int = IGNORE,
    protect: int = 0,
):
    """Masked LM (BERT): choose ~``p`` of the real tokens; the loss is on those only.

    Of the chosen tokens 80 % become ``mask_id``, 10 % a random token in ``[0, vocab)``, 10 % stay
    (BERT's recipe). The first ``protect`` positions (e.g. ``[CLS]``) are never chosen; at least
    one token per sequence is. Returns ``(inputs, targets)``, both ``(B, T)``: ``targets`` holds the
    original token where chosen and ``ignore_index`` elsewhere. Random draws happen on the CPU
    (``generator`` is a CPU generator), then move to ``ids``' device.
    """
    if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0.0 < p < 1.0:
        raise ValueError(f"p is the fraction of tokens to mask, in (0, 1), got {p}")
    check_ids(ids, "ids", min_len=1)
    as_int("vocab", vocab, 1)
    as_int("mask_id", mask_id, 0)
    as_int("protect", protect, 0)
    keep = torch.ones_like(ids, dtype=torch.bool) if keep is None else keep
    check_keep(keep, ids.shape[0], ids.shape[1], "keep")
    eligible = keep.clone()
    eligible[:, :protect] = False
    if not bool(eligible.any(dim=1).all()):
        raise ValueError(
            f"protect={protect} leaves a row with no real token to mask (keep has {keep.sum(1).tolist()} real tokens)"
        )
    u = torch.rand(ids.shape, generator=generator).to(ids.device)
    chosen = (u < p) & eligible
    first = torch.where(eligible, u, torch.full_like(u, 2.0)).argmin(dim=1)  # guarantee one per row
    chosen[torch.arange(ids.shape[0], device=ids.device), first] |= eligible.any(dim=1)
    r = torch.rand(ids.shape, generator=generator).to(ids.device)
    random_ids = torch.randint(vocab, ids.shape, generator=generator).to(ids.device)
    inputs = torch.where(chosen & (r < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(chosen & (r >= 0.8) & (r < 0.9), random_ids, inputs)
    targets = ids.masked_fill(~chosen, ignore_index)
    return inputs, targets


def _pad_rows(rows, pad_id: int, device):
    """Right-pad lists of ints into ``(ids (B, T), keep (B, T))``."""
    out = nn.utils.rnn.pad_sequence([torch.tensor(r, dtype=torch.long) for r in rows], True, pad_id)
    keep = torch.arange(out.shape[1])[None, :] < torch.tensor([len(r) for r in rows])[:, None]
    return out.to(device), keep.to(device)


def span_corruption(
    ids: torch.Tensor,
    keep: torch.Tensor | None,
    sentinel_start: int,
    pad_id: int = 0,
    eos_id: int | None = None,
    noise: float = 0.15,
    mean_span: int = 3,
    generator: torch.Generator | None = None,
):
    """T5's span corruption on a padded batch: drop spans, mark each with a sentinel, predict them.

    Per sequence: ``n_spans = max(1, round(noise·len / mean_span))`` non-overlapping spans of
    ``mean_span`` tokens (shorter if the sequence is short) are removed from the source; span k is
    replaced by sentinel ``sentinel_start + k``. The target is ``s_0 span_0 s_1 span_1 ... [eos]``.
    Returns ``(src, src_keep, tgt, tgt_keep)``, right-padded with ``pad_id``, on ``ids``' device.
    """
    check_ids(ids, "ids", min_len=1)
    if not isinstance(noise, (int, float)) or isinstance(noise, bool) or not 0.0 < noise < 1.0:
        raise ValueError(f"noise is the fraction of tokens to drop, in (0, 1), got {noise}")
    as_int("mean_span", mean_span, 1)
    as_int("sentinel_start", sentinel_start, 0)
    keep = torch.ones_like(ids, dtype=torch.bool) if keep is None else keep
    check_keep(keep, ids.shape[0], ids.shape[1], "keep")
    srcs, tgts = [], []
    for row, k in zip(ids.tolist(), keep.tolist()):
        seq = [tok for tok, real in zip(row, k) if real]
        if not seq:
            raise ValueError("span_corruption needs at least one real token in every row (keep has an all-False row)")
        n = len(seq)
        span = max(1, min(mean_span, n // 2))
        n_spans = max(1, min(round(noise * n / mean_span), n // (span + 1)))
        # choose span starts among positions where spans cannot touch: slots of length span+1
        slots = max(1, n // (span + 1))
        picked = sorted(torch.randperm(slots, generator=generator)[:n_spans].tolist())
        starts = [s * (span + 1) for s in picked]
        src, tgt, pos = [], [], 0
        for k_, s in enumerate(starts):
            src += seq[pos:s] + [sentinel_start + k_]
            tgt += [sentinel_start + k_] + seq[s : s + span]
            pos = s + span
        src += seq[pos:]
        if eos_id is not None:
            tgt.append(eos_id)
        srcs.append(src)
        tgts.append(tgt)
    return (*_pad_rows(srcs, pad_id, ids.device), *_pad_rows(tgts, pad_id, ids.device))


def lm_loss(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = IGNORE) -> torch.Tensor:
    """Mean cross-entropy over the positions whose target is not ``ignore_index``: ``(B, T, V), (B, T) -> ()``."""
    if not isinstance(logits, torch.Tensor) or not isinstance(targets, torch.Tensor):
        raise TypeError("logits and targets must be torch.Tensors")
    if not logits.is_floating_point():
        raise TypeError(f"logits must be floating-point scores, got dtype {logits.dtype}")
    if logits.dim() != 3 or targets.shape != logits.shape[:2] or not logits.shape[-1]:
        raise ValueError(
            f"logits must be (B, T, V) with V >= 1 and targets (B, T), "
            f"got {tuple(logits.shape)} and {tuple(targets.shape)}"
        )
    check_ids(targets, "targets", min_len=1)
    if logits.is_meta or logits.device != targets.device:
        raise ValueError(f"logits ({logits.device}) and targets ({targets.device}) must be on one real device")
    valid = targets != ignore_index
    if not bool(valid.any()):
        raise ValueError(f"every target is ignore_index={ignore_index}: there is no position to take a loss on")
    if bool(((targets < 0) | (targets >= logits.shape[-1]))[valid].any()):
        raise ValueError(f"targets must be ids in [0, V={logits.shape[-1]}) or ignore_index={ignore_index}")
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=ignore_index)


def _dropped_spans(source, targets, original, special) -> bool:
    """True when every row's target text is exactly the original text missing from its source (as multisets)."""
    text = lambda row: Counter(t for t in row if t not in special)
    return all(text(o) - text(s) == text(t) for s, t, o in zip(source.tolist(), targets.tolist(), original.tolist()))


def describe_objective(
    inputs: torch.Tensor,
    targets: torch.Tensor,
    source: torch.Tensor | None = None,
    original: torch.Tensor | None = None,
    mask_id: int | None = None,
    special=(),
    ignore_index: int = IGNORE,
) -> dict:
    """Name the objective of a training batch from how its ``targets`` relate to what the model sees.

    ``inputs``/``targets``: what the (decoder or encoder) is fed and what its loss predicts, ``(B, T)``
    each, ``ignore_index`` where no loss is taken. ``source``: the encoder's input, if any.
    ``original``: the clean sequences the batch was made from (for span corruption);
    ``special``: ids that are markers, not text (padding, BOS/EOS, sentinels). Measured facts:

    - ``loss_fraction``: the fraction of positions with a loss term;
    - ``next_token``: every target is the next input token (``targets[:, t] == inputs[:, t+1]``);
    - ``hidden_by_mask``: the fraction of loss positions whose input is ``mask_id``;
    - ``has_source``: a separate sequence conditions the prediction;
    - ``targets_are_dropped_spans``: the target's text is exactly the original text missing from the source.

    Returns those facts and ``name``.
    """
    check_ids(inputs, "inputs", min_len=1)
    check_ids(targets, "targets", min_len=1)
    if inputs.shape != targets.shape:
        raise ValueError(
            f"inputs and targets must have one shape, got {tuple(inputs.shape)} and {tuple(targets.shape)}"
        )
    valid = targets != ignore_index
    frac = float(valid.float().mean())
    both = valid[:, :-1]
    next_token = bool(both.any()) and bool(((targets[:, :-1] == inputs[:, 1:]) | ~both).all())
    hidden = float((inputs[valid] == mask_id).float().mean()) if mask_id is not None and valid.any() else 0.0
    dropped = False
    if source is not None and original is not None:
        dropped = _dropped_spans(source, targets, original, {int(s) for s in special} | {ignore_index})
    if source is not None and dropped:
        name = "span corruption (T5): predict the spans dropped from the source"
    elif source is not None and next_token:
        name = "seq2seq: next target token given the source"
    elif next_token:
        name = "causal LM: next token at every position"
    elif hidden >= 0.5:
        name = "masked LM: the hidden tokens, from both sides"
    else:
        name = "unknown"
    return {
        "loss_fraction": frac,
        "next_token": next_token,
        "hidden_by_mask": hidden,
        "has_source": source is not None,
        "targets_are_dropped_spans": dropped,
        "name": name,
    }
