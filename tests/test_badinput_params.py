"""Bad input to the parameter counts (``transformer_nb.params``): a TypeError or LookupError naming what is wrong."""

from badinput import Case, parametrize

from transformer_nb.params import formulas, presets

CASES = {
    "param_count_refuses_a_preset_name_for_a_config": Case(
        "transformer_nb.params.formulas.param_count",
        lambda: formulas.param_count("gpt2-small"),
        TypeError,
        "expected a TransformerConfig",
    ),
    "preset_names_an_unknown_preset_and_the_choices": Case(
        "transformer_nb.params.presets.preset", lambda: presets.preset("gpt5"), KeyError, "unknown preset 'gpt5'"
    ),
}


@parametrize(CASES)
def test_params_refuse_bad_input_by_name(name):
    CASES[name].check()
