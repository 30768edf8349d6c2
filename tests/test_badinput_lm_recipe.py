"""Bad input to the recipe runs (``lm_recipe.run``): an error naming the argument."""

from badinput import Case, parametrize

from transformer_nb import lm_recipe

CASES = {
    "run_refuses_an_unknown_kind": Case(
        "transformer_nb.lm_recipe.run", lambda: lm_recipe.run("gru", None, 3), ValueError, "kind must be one of"
    ),
    "run_refuses_data_that_is_not_wikitext": Case(
        "transformer_nb.lm_recipe.run", lambda: lm_recipe.run("transformer", None, 1), TypeError, "data must be"
    ),
}


@parametrize(CASES)
def test_lm_recipe_runs_refuse_bad_input_by_name(name):
    CASES[name].check()
