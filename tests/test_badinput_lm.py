"""Bad input to data-parallel training (``lm_ddp``) and the recipe runs (``lm_recipe.run``): a usage error or an
exception naming the argument."""

import torch
from badinput import Case, parametrize

from transformer_nb import lm_ddp, lm_recipe

CASES = {
    "lm_ddp_main_refuses_a_negative_timeout": Case(
        "transformer_nb.lm_ddp.main",
        lambda: lm_ddp.main(["--timeout", "-1"]),
        SystemExit,
        "--timeout must be a positive finite number",
    ),
    "lm_ddp_wrap_refuses_a_model_that_is_not_a_module": Case(
        "transformer_nb.lm_ddp.wrap",
        lambda: lm_ddp.wrap(3, torch.device("cpu")),
        TypeError,
        "model must be an nn.Module, got int",
    ),
    "run_refuses_an_unknown_kind": Case(
        "transformer_nb.lm_recipe.run", lambda: lm_recipe.run("gru", None, 3), ValueError, "kind must be one of"
    ),
    "run_refuses_data_that_is_not_wikitext": Case(
        "transformer_nb.lm_recipe.run", lambda: lm_recipe.run("transformer", None, 1), TypeError, "data must be"
    ),
}


@parametrize(CASES)
def test_lm_entry_points_refuse_bad_input_by_name(name):
    CASES[name].check()
