"""Exercises for notebook 02 (masking).

- :data:`causal_ex` -- ``causal(T) -> (T, T)`` bool, True where query i may attend to key j.
- :data:`padding_ex` -- ``padding(lengths, max_len) -> (B, max_len)`` bool, True at real tokens
  of right-padded sequences.
- :data:`combined_ex` -- ``decoder_self_mask(keep) -> (B, 1, T, T)`` bool: the self-attention
  mask of a padded batch in a decoder (padded keys blocked AND future keys blocked).

All masks follow the package convention: **bool, True = may attend**. Each exercise knows the
typical wrong answers (off-by-one diagonal, transposed triangle, inverted polarity, padding on
the wrong axis, ...) and answers with a hint aimed at that mistake.
"""

__all__ = ["causal_ex", "combined_ex", "padding_ex"]  # what a notebook uses

import torch

from transformer_nb.exercises import Exercise, keep_mask, say, tril
from transformer_nb.exercises.compare import tensor_problem
from transformer_nb.exercises.solutions import masks as sol

NOTEBOOK = "02_masking"  # the notebook whose exercise cells use this module


def _is_bool_tensor(out) -> bool:
    return isinstance(out, torch.Tensor) and out.dtype == torch.bool


def _mask_equal(out, ref) -> bool:
    return _is_bool_tensor(out) and out.shape == ref.shape and torch.equal(out.cpu(), ref)


class MaskExercise(Exercise):
    """An :class:`Exercise` whose answers are bool masks; shape and dtype get mask-specific hints."""

    expected_shape: str = "(T, T)"

    def type_problem(self, out, ref):
        if isinstance(out, torch.Tensor) and out.device.type == "cpu" and out.dtype != torch.bool:
            return None  # a number mask: diagnose() says what it would do and what its pattern is
        return tensor_problem(out, ref, "your mask")

    def diagnose(self, args, out, ref) -> str:
        problem = self.type_problem(out, ref)
        if problem:
            return problem
        if tuple(out.shape) != tuple(ref.shape):
            return (
                f"your mask has shape {tuple(out.shape)}, expected {tuple(ref.shape)} = {self.expected_shape}. "
                + self._shape_hint(args, out, ref)
            )
        if not _is_bool_tensor(out):
            # a number mask: say so first, then what is wrong with its pattern (read as nonzero = True)
            as_bool = out != 0
            if _mask_equal(as_bool, ref):
                return say("float_mask")
            return (
                say("float_mask") + " Read as bool, the pattern is wrong too: " + super().diagnose(args, as_bool, ref)
            )
        return super().diagnose(args, out, ref)

    def _shape_hint(self, args, out, ref) -> str:
        return "Rows are queries, columns are keys."


# ----------------------------------------------------------------------------------------
# 1. the causal mask
# ----------------------------------------------------------------------------------------


causal_ex = MaskExercise(
    compare=_mask_equal,
    title="Causal mask",
    name="causal_ex",
    reference=sol.my_causal_mask,
    cases=[("T=4", lambda: (4,)), ("T=1", lambda: (1,)), ("T=7", lambda: (7,))],
    mistakes=[
        lambda T: torch.ones(T, T, dtype=torch.bool).tril(-1),
        lambda T: torch.ones(T, T, dtype=torch.bool).triu(),
        lambda T: torch.ones(T, T, dtype=torch.bool).triu(1),
        lambda T: torch.ones(T, T, dtype=torch.bool),
    ],
    properties=[lambda args, out: bool(out.diagonal().all()), lambda args, out: not bool(out.triu(1).any())],
)


# ----------------------------------------------------------------------------------------
# 2. the padding mask from lengths
# ----------------------------------------------------------------------------------------


class _PaddingExercise(MaskExercise):
    expected_shape = "(B, max_len)"

    def _shape_hint(self, args, out, ref) -> str:
        lengths, max_len = args
        if out.dim() == 2 and out.shape == ref.shape[::-1]:
            return "Your axes are swapped: one ROW per sequence, one column per position."
        if out.dim() == 2 and out.shape[-1] == max(lengths) != max_len:
            return "You padded to max(lengths); pad every row to max_len."
        return "One row per sequence, one column per position 0..max_len-1."


padding_ex = _PaddingExercise(
    compare=_mask_equal,
    title="Padding mask from lengths",
    name="padding_ex",
    reference=sol.my_padding_mask,
    cases=[
        ("lengths [3, 1, 4], max_len 5", lambda: ([3, 1, 4], 5)),
        ("lengths [2, 2], max_len 2", lambda: ([2, 2], 2)),
        ("lengths [0, 3], max_len 4 (an empty sequence)", lambda: ([0, 3], 4)),
    ],
    mistakes=[
        lambda lengths, max_len: torch.arange(max_len)[None, :] <= torch.as_tensor(lengths)[:, None],
        lambda lengths, max_len: ~sol.my_padding_mask(lengths, max_len),
        lambda lengths, max_len: sol.my_padding_mask(lengths, max_len).flip(-1),
    ],
    properties=[lambda args, out: out.sum(-1).tolist() == list(args[0])],
)


# ----------------------------------------------------------------------------------------
# 3. padding + causal for a batch (decoder self-attention)
# ----------------------------------------------------------------------------------------


class _CombinedExercise(MaskExercise):
    expected_shape = "(B, 1, T, T)"

    def _shape_hint(self, args, out, ref) -> str:
        if tuple(out.shape) == tuple(ref.shape[:1] + ref.shape[2:]):
            return "Keep a size-1 head axis, (B, 1, T, T), so the mask broadcasts over the heads."
        return "Axes: batch, head (size 1), query, key."


combined_ex = _CombinedExercise(
    compare=_mask_equal,
    title="Padding + causal mask for a batch",
    name="combined_ex",
    reference=sol.my_decoder_mask,
    cases=[
        ("lengths [3, 5, 1], T=5", lambda: (keep_mask([3, 5, 1], 5),)),
        ("lengths [2, 4], T=4", lambda: (keep_mask([2, 4], 4),)),
        ("lengths [0, 2], T=3 (an empty sequence)", lambda: (keep_mask([0, 2], 3),)),
    ],
    mistakes=[
        lambda keep: keep[:, None, None, :].expand(-1, 1, keep.shape[-1], -1),
        lambda keep: tril(keep.shape[-1]).expand(keep.shape[0], 1, -1, -1),
        lambda keep: keep[:, None, :, None] & tril(keep.shape[-1]),
        lambda keep: keep[:, None, None, :] | tril(keep.shape[-1]),
    ],
    properties=[
        lambda args, out: not bool(out.triu(1).any()),
        lambda args, out: not bool((out & ~args[0][:, None, None, :]).any()),
    ],
)
