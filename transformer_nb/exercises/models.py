"""Exercise for notebook 08 (encoder-only, decoder-only, encoder–decoder).

- ``variant_masks_ex``: ``variant_masks(variant, src_keep, tgt_keep) -> dict``: which attention
  sublayers a variant has, and the bool mask (True = may attend) each one uses.

The objectives' exercises (the next-token shift, mean pooling) are in :mod:`transformer_nb.exercises.objectives`.
"""

__all__ = ["variant_masks_ex"]  # what a notebook uses

import torch

from transformer_nb.exercises import Exercise, keep_mask, say, tril
from transformer_nb.exercises.compare import tensor_problem
from transformer_nb.exercises.masks import _mask_equal
from transformer_nb.exercises.solutions import models as sol

NOTEBOOK = "08_architecture_variants"  # the notebook whose exercise cells use this module

VARIANTS = ("encoder-only", "decoder-only", "encoder-decoder")
KEYS = ("encoder_self", "decoder_self", "cross")


# --------------------------------------------------------------------------- 1. masks per variant


def _pad(keep, t_q):  # (B, T_k) -> (B, 1, T_q, T_k): block padded keys
    return keep[:, None, None, :].expand(-1, 1, t_q, -1)


def _altered(key, change, variant=None):
    """A typical mistake: the reference's masks with ``key``'s mask (where there is one, for ``variant`` or every
    variant) replaced by ``change(mask, src_keep, tgt_keep)``."""

    def fn(v, src_keep, tgt_keep):
        out = sol.variant_masks(v, src_keep, tgt_keep)
        if out[key] is not None and variant in (None, v):
            out[key] = change(out[key], src_keep, tgt_keep)
        return out

    return fn


def _same_mask(a, b) -> bool:
    return (a is None and b is None) or (b is not None and _mask_equal(a, b))


def _dict_equal(out, ref) -> bool:
    return isinstance(out, dict) and set(out) == set(ref) and all(_same_mask(out[k], ref[k]) for k in ref)


class _VariantMasksExercise(Exercise):
    """Answers are dicts of masks: say which key is wrong, and how, before the generic hints."""

    def type_problem(self, out, ref):
        if not isinstance(out, dict) or set(out) != set(KEYS):
            got = sorted(out) if isinstance(out, dict) else type(out).__name__
            return say("variant_keys", keys=list(KEYS), got=got)
        return None

    def diagnose(self, args, out, ref) -> str:
        variant = args[0]
        problem = self.type_problem(out, ref)
        if problem:
            return problem
        for key in KEYS:
            mine, want = out[key], ref[key]
            if (mine is None) != (want is None):
                if want is None:
                    return (
                        f"for {variant}, '{key}' should be None: "
                        + {
                            "encoder_self": "this variant has no encoder (no bidirectional stack over a source).",
                            "decoder_self": "this variant has no causal stack.",
                            "cross": "only an encoder–decoder has a second sequence to attend to; without an "
                            "encoder there is no memory and so no cross-attention sublayer.",
                        }[key]
                    )
                return f"for {variant}, '{key}' is missing (None): this variant does have that sublayer."
            if want is None:
                continue
            problem = tensor_problem(mine, want, f"'{key}'")
            if problem:
                return problem
            if tuple(mine.shape) != tuple(want.shape):
                cross = " Cross-attention has target queries and *source* keys: (B, 1, T, S), padded like the source."
                return f"'{key}' has shape {tuple(mine.shape)}, expected (B, 1, T_q, T_k) = {tuple(want.shape)}." + (
                    cross if key == "cross" else ""
                )
        return super().diagnose(args, out, ref)


def _case(variant, src_lengths, s, tgt_lengths, t):
    return lambda: (variant, keep_mask(src_lengths, s), keep_mask(tgt_lengths, t))


variant_masks_ex = _VariantMasksExercise(
    "the attention masks of each variant",
    sol.variant_masks,
    name="variant_masks_ex",
    cases=[
        ("encoder-only, source lengths [5, 3]", _case("encoder-only", [5, 3], 5, [4, 2], 4)),
        ("decoder-only, sequence lengths [4, 2]", _case("decoder-only", [5, 3], 5, [4, 2], 4)),
        ("encoder-decoder, S=5 (lengths [5, 3]), T=4 (lengths [4, 2])", _case("encoder-decoder", [5, 3], 5, [4, 2], 4)),
        ("encoder-decoder, S=3, T=6, one short target", _case("encoder-decoder", [3, 2, 1], 3, [6, 6, 2], 6)),
    ],
    compare=_dict_equal,
    mistakes=[
        _altered("encoder_self", lambda m, s, t: m & tril(s.shape[1]), "encoder-only"),  # BERT made causal
        _altered("encoder_self", lambda m, s, t: m & tril(s.shape[1]), "encoder-decoder"),  # its encoder causal
        _altered("decoder_self", lambda m, s, t: _pad(t, t.shape[1])),  # GPT not causal
        _altered("cross", lambda m, s, t: m & torch.ones(t.shape[1], s.shape[1], dtype=torch.bool).tril()),
        _altered("decoder_self", lambda m, s, t: tril(t.shape[1]).expand(t.shape[0], 1, -1, -1)),  # no padding
    ],
    properties=[
        lambda args, out: all(
            out[k] is None or bool(out[k].diagonal(dim1=-2, dim2=-1)[_keep_for(args, k)].all())
            for k in ("encoder_self", "decoder_self")
        )
    ],
)


def _keep_for(args, key):
    _, src_keep, tgt_keep = args
    return src_keep if key == "encoder_self" else tgt_keep
