"""Notebook 08's exercise checkers, beyond each declared mistake (tests/test_exercise_checkers.py): a GPT with
cross-attention, a cross mask padded like the target, a missing key or sublayer, a mask that hides the diagonal,
a float mask and float ids each get their own hint, and never the solution's code."""

import pytest
import torch

from transformer_nb.exercises import models as exm
from transformer_nb.exercises import objectives as exo
from transformer_nb.exercises.solutions import models as sol

EXERCISES = {"variant_masks": exm.variant_masks_ex, "lm_shift": exo.lm_shift_ex}


def _with(key, patch):
    """The reference answer with the mask ``key`` replaced by ``patch(variant, src_keep, tgt_keep, mask)``."""

    def fn(variant, src_keep, tgt_keep):
        out = sol.variant_masks(variant, src_keep, tgt_keep)
        out[key] = patch(variant, src_keep, tgt_keep, out[key])
        return out

    return fn


WRONG = {
    "variant_masks": [
        (_with("cross", lambda v, s, t, m: exm._pad(t, t.shape[1])), "no cross-attention sublayer"),  # GPT's
        (_with("cross", lambda v, s, t, m: m if m is None else exm._pad(t, t.shape[1])), "(B, 1, T, S)"),
        (lambda v, s, t: {k: m for k, m in sol.variant_masks(v, s, t).items() if m is not None}, "exactly the keys"),
        (_with("encoder_self", lambda v, s, t, m: None if v == "encoder-decoder" else m), "is missing"),
        (_with("decoder_self", lambda v, s, t, m: m if m is None else ~m), "attend to itself"),
        (_with("encoder_self", lambda v, s, t, m: m if m is None else m.float()), "bool tensor"),
    ],
    "lm_shift": [
        (lambda ids, keep: tuple(t.float() for t in sol.lm_shift(ids, keep)), "integers"),  # float ids
    ],
}


@pytest.mark.parametrize("name,fn,hint", [(n, f, h) for n, cases in WRONG.items() for f, h in cases])
def test_rejects_typical_mistakes_with_specific_hint(name, fn, hint):
    ex = EXERCISES[name]
    r = ex.check(fn, quiet=True)
    assert not r.passed
    assert hint in r.message, r.message
    body = [line.strip() for line in ex.solution_source().splitlines() if len(line.strip()) > 25]
    assert not any(line in r.message for line in body), r.message


def test_pooling_reference_is_padding_invariant():
    h = torch.randn(2, 3, 4, dtype=torch.float64)
    keep = torch.tensor([[True, True, False], [True, False, False]])
    longer = torch.cat([h, torch.randn(2, 2, 4, dtype=torch.float64)], 1)
    keep2 = torch.cat([keep, torch.zeros(2, 2, dtype=torch.bool)], 1)
    assert torch.allclose(sol.mean_pool(h, keep), sol.mean_pool(longer, keep2))
