"""Bad input to the reversal runs that the cache trains: a TypeError naming the argument, before any model is built."""

from badinput import Case, parametrize

from transformer_nb.reversal import training

CASES = {
    "run_refuses_what_is_not_a_recipe": Case(
        "transformer_nb.reversal.training.run",
        lambda: training.run("small"),
        TypeError,
        "recipe must be a reversal Recipe",
    ),
}


@parametrize(CASES)
def test_parallel_training_refuses_bad_input_by_name(name):
    CASES[name].check()
