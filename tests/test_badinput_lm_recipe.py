"""Bad input to the recipe runs trained side by side (``lm_recipe``): a ValueError naming the argument."""

from badinput import Case, parametrize

from transformer_nb import lm_recipe, wikitext

CASES = {
    "load_or_train_many_refuses_an_unknown_kind": Case(
        "transformer_nb.lm_recipe.load_or_train_many",
        lambda: lm_recipe.load_or_train_many({"gru": 3}, wikitext.load_wikitext2()),
        ValueError,
        "runs must be a dict {kind: steps} of kinds from",
    ),
}


@parametrize(CASES)
def test_lm_recipe_runs_refuse_bad_input_by_name(name):
    CASES[name].check()
