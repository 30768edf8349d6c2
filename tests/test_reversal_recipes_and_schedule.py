"""The text's recipe is encoded as written; the warm-up schedule is the text's formula; training stops early."""

import math
from dataclasses import replace

import pytest
import torch

from transformer_nb import reversal as rv


def test_text_recipe_is_the_text_as_written_and_the_ladder_leads_to_the_improved_one():
    r, m = rv.TEXT_RECIPE, rv.TEXT_RECIPE.model
    recipe = (r.lr, r.schedule, r.batch_size, r.data, r.n_train, r.label_smoothing, r.clip, r.init)
    assert recipe == (1e-4, "constant", 64, "fixed", 2000, 0.0, 1.0, "xavier")
    assert r.steps_per_epoch() == 32 and r.steps == 30 * 32
    model = (m.d_model, m.n_heads, m.d_ff, m.n_layers, m.dropout, m.activation, m.norm_first)
    assert model == (64, 4, 256, 2, 0.1, "gelu", True)
    assert rv.LADDER[0][1] is rv.TEXT_RECIPE and rv.LADDER[-1][1] is rv.IMPROVED
    names = [r.name for _, r in rv.LADDER] + [r.name for _, r in rv.ABLATIONS]
    assert len(set(names)) == len(names)  # one cache file each


@pytest.mark.parametrize("warmup", [1, 100, 4000])
def test_lambda_lr_reproduces_the_text_formula(warmup):
    opt = torch.optim.Adam([torch.zeros(1, requires_grad=True)], lr=(64 * warmup) ** -0.5)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, rv.warmup_factor(warmup))
    for step in range(1, 3 * warmup + 3):
        assert math.isclose(opt.param_groups[0]["lr"], rv.paper_lr(step, 64, warmup), rel_tol=1e-12)
        opt.step()
        sched.step()
    with pytest.raises(ValueError, match="warmup must be >= 0, got -1"):
        rv.warmup_factor(-1)


def test_train_records_its_history_stops_at_the_target_and_is_reproducible():
    ev = rv.heldout_set(50)
    recipe = replace(rv.IMPROVED, steps=6)
    h = rv.train(rv.build_model(recipe.model, recipe.init), recipe, ev, eval_every=2, target=0.0, seed=0)
    assert h["reached"] and h["steps"] == 2 and h["eval_step"] == [2]
    runs = [rv.train(rv.build_model(recipe.model, recipe.init), recipe, ev, eval_every=2, seed=0) for _ in range(2)]
    h = runs[0]
    assert h["steps"] == 6 and h["eval_step"] == [2, 4, 6] and len(h["loss"]) == len(h["grad_norm"]) == 6
    assert not h["reached"] and h["step"] == list(range(1, 7)) and len(h["exact_match"]) == 3
    assert runs[0]["loss"] == runs[1]["loss"] and h["loss"][:2] == runs[0]["loss"][:2]
