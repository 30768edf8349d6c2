"""Exercises for notebook 09 (the reversal task).

- :data:`shift_ex` -- ``shift(tgt) -> (tgt_in, tgt_out)``: the decoder input and labels for
  teacher forcing, from right-padded targets ``tgt (B, L)`` (symbols then PAD):
  ``tgt_in = BOS y1 .. yL`` and ``tgt_out = y1 .. yL EOS``, both ``(B, L + 1)``, PAD after.
- :data:`greedy_ex` -- ``greedy(model, src, max_new) -> (B, max_new)``: batched greedy decoding
  with ``model.encode(src, src_keep)`` and ``model.decode(tgt_in, memory, src_keep, tgt_keep)``;
  each row starts from BOS, stops at its own EOS (included) and is PAD afterwards.

The greedy checker runs on :class:`HandBuiltReverser`, a model with no weights whose logits are
written down by rule, so the right answer is known exactly and each typical mistake gives a
different, recognisable answer.
"""

__all__ = ["greedy_ex", "shift_ex"]  # what a notebook uses

import torch
import torch.nn as nn

from transformer_nb.exercises import Exercise, say
from transformer_nb.exercises.compare import equal
from transformer_nb.exercises.solutions import reversal as sol
from transformer_nb.reversal import BOS, EOS, FIRST_SYMBOL, PAD, VOCAB_SIZE, reverse_padded

NOTEBOOK = "09_reversal_translation"  # the notebook whose exercise cells use this module

# ----------------------------------------------------------------------------------------
# 1. the teacher-forcing shift
# ----------------------------------------------------------------------------------------


def _shift_eos_at(eos_column):
    """The shift built in one ``(B, L + 2)`` row: BOS, ``tgt``, and EOS at ``eos_column(tgt)`` (per row)."""

    def fn(tgt):
        B, L = tgt.shape
        full = torch.full((B, L + 2), PAD, dtype=torch.long)
        full[:, 0], full[:, 1 : L + 1] = BOS, tgt
        full[torch.arange(B), eos_column(tgt)] = EOS
        return full[:, :-1], full[:, 1:]

    return fn


def _shift_no_eos(tgt):
    tgt_in, tgt_out = sol.shift(tgt)
    return tgt_in, tgt_out.masked_fill(tgt_out == EOS, PAD)


def _tgt(rows):
    """Right-padded rows of ids."""
    return nn.utils.rnn.pad_sequence([torch.tensor(r) for r in rows], batch_first=True, padding_value=PAD)


shift_ex = Exercise(
    title="Teacher-forcing shift",
    name="shift_ex",
    reference=sol.shift,
    compare=equal,
    cases=[
        ("one row [6, 4, 9]", lambda: (_tgt([[6, 4, 9]]),)),
        ("equal lengths", lambda: (_tgt([[5, 3, 7, 4], [12, 11, 10, 9]]),)),
        ("padded batch, lengths 3, 6, 4", lambda: (_tgt([[4, 5, 6], [3, 12, 3, 12, 7, 8], [9, 9, 8, 10]]),)),
    ],
    mistakes=[
        lambda tgt: sol.shift(tgt)[::-1],
        lambda tgt: (sol.shift(tgt)[1].clone(), sol.shift(tgt)[1]),
        _shift_eos_at(lambda tgt: tgt.shape[1] + 1),  # EOS in the last column
        _shift_no_eos,
        _shift_eos_at(lambda tgt: (tgt != PAD).sum(1) + 1),  # the text's collate_batch: EOS kept in the input
    ],
    properties=[
        lambda args, out: bool((out[0][:, 0] == BOS).all()),
        lambda args, out: (
            tuple(out[0].shape) == (args[0].shape[0], args[0].shape[1] + 1)
            and tuple(out[1].shape) == tuple(out[0].shape)
        ),
        lambda args, out: bool(((out[1] == EOS).sum(1) == 1).all()),
    ],
)


# ----------------------------------------------------------------------------------------
# 2. greedy decoding
# ----------------------------------------------------------------------------------------


class HandBuiltReverser(nn.Module):
    """A 'model' with no weights whose logits follow a written rule (so answers are known exactly).

    ``encode(src, src_keep)`` returns the source itself (as floats) as the memory.
    ``decode(tgt_in, memory, src_keep, tgt_keep)`` gives, at each position t, a one-hot logit for:
    the t-th reversed symbol if ``tgt_in[:, :t+1]`` is BOS followed by the correct first t outputs;
    EOS at t = L (after a correct prefix) or as soon as the prefix is wrong; and the symbol 3 after
    the end (t > L), so a decoder that keeps going after EOS shows it.
    """

    def __init__(self):
        super().__init__()
        self.register_buffer("dummy", torch.zeros(1))  # so next(model.buffers()) has a device

    def encode(self, src, src_keep=None):
        return src.float()[..., None]

    def decode(self, tgt_in, memory, src_keep=None, tgt_keep=None):
        src = memory[..., 0].long()
        B, T = tgt_in.shape
        L = (src != PAD).sum(1)  # (B,)
        rev = reverse_padded(src)  # (B, S)
        want = torch.full((B, T + 1), PAD, dtype=torch.long)  # what a correct prefix looks like
        want[:, 0] = BOS
        w = min(rev.shape[1], T)
        want[:, 1 : w + 1] = rev[:, :w]
        ok = (tgt_in == want[:, :T]).long().cumprod(1).bool()  # prefix up to t correct?
        next_tok = torch.full((B, T), EOS, dtype=torch.long)
        t = torch.arange(T)[None, :]
        sym = torch.gather(F_pad(rev, T), 1, t.expand(B, T))
        next_tok = torch.where(ok & (t < L[:, None]), sym, next_tok)
        next_tok = torch.where(t > L[:, None], torch.full_like(next_tok, FIRST_SYMBOL), next_tok)
        return 10.0 * nn.functional.one_hot(next_tok, VOCAB_SIZE).float()


def F_pad(x, width):
    """Right-pad ``x (B, S)`` with PAD to at least ``width`` columns."""
    return nn.functional.pad(x, (0, max(0, width - x.shape[1])), value=PAD)


def _greedy_with(position=-1, pad_after_eos=True, bos=BOS, stop_at_any_eos=False, one_shot=False):
    """Greedy decoding with one step done another way (the typical mistakes)."""

    def fn(model, src, max_new):
        src_keep = src != PAD
        memory = model.encode(src, src_keep)
        ys = torch.full((src.shape[0], max_new if one_shot else 1), PAD, dtype=torch.long)
        ys[:, 0] = bos
        if one_shot:  # all positions in one pass from BOS + PAD (no feedback)
            return _pad_after_eos(model.decode(ys, memory, src_keep, ys != PAD).argmax(-1))
        for _ in range(max_new):
            keep = ys != PAD if bos == BOS else torch.ones_like(ys, dtype=torch.bool)
            nxt = model.decode(ys, memory, src_keep, keep)[:, position].argmax(-1)
            ys = torch.cat([ys, nxt[:, None]], 1)
            if stop_at_any_eos and (nxt == EOS).any():
                break
        return _pad_after_eos(ys[:, 1:]) if pad_after_eos else ys[:, 1:]

    return fn


def _pad_after_eos(ys):
    after = (ys == EOS).long().cumsum(1) - (ys == EOS).long() > 0
    return ys.masked_fill(after, PAD)


def _greedy_compare(out, ref) -> bool:
    """Equal after right-padding both with PAD (stopping early, once all rows are done, is fine)."""
    if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != ref.shape[0]:
        return False
    width = max(out.shape[1], ref.shape[1])
    return equal(F_pad(out, width), F_pad(ref, width))


class _GreedyExercise(Exercise):
    def diagnose(self, args, out, ref) -> str:
        if not isinstance(out, torch.Tensor) or out.dim() != 2:
            return "return a (B, max_new) tensor of token ids."
        if out.shape[0] != ref.shape[0]:
            return f"your output has {out.shape[0]} rows, expected one per source sequence ({ref.shape[0]})."
        if out.shape[1] > ref.shape[1]:
            return say("greedy_too_long", got=out.shape[1], max_new=ref.shape[1])
        return super().diagnose(args, F_pad(out, ref.shape[1]), ref)


greedy_ex = _GreedyExercise(
    title="Batched greedy decoding",
    name="greedy_ex",
    reference=sol.greedy,
    compare=_greedy_compare,
    cases=[
        ("one sequence [3, 5, 7, 9, 4]", lambda: (HandBuiltReverser(), _tgt([[3, 5, 7, 9, 4]]), 6)),
        (
            "a batch of lengths 3, 8, 5",
            lambda: (HandBuiltReverser(), _tgt([[4, 8, 6], [3, 4, 5, 6, 7, 8, 9, 10], [12, 3, 11, 4, 10]]), 9),
        ),
        ("max_new too small to finish", lambda: (HandBuiltReverser(), _tgt([[5, 6, 7, 8, 9, 10]]), 4)),
    ],
    mistakes=[
        _greedy_with(position=0),
        _greedy_with(pad_after_eos=False),
        _greedy_with(bos=PAD),
        _greedy_with(stop_at_any_eos=True),
        _greedy_with(one_shot=True),
    ],
    properties=[lambda args, out: bool((_pad_after_eos(out.long()) == out.long()).all())],
)
