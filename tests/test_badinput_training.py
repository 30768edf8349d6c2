"""Bad input to the training entry points that run work in parallel: a TypeError/ValueError naming the argument,
before any process is started."""

from badinput import Case, parametrize

from transformer_nb.reversal import training

CASES = {
    "load_or_train_many_refuses_what_is_not_a_recipe": Case(
        "transformer_nb.reversal.training.load_or_train_many",
        lambda: training.load_or_train_many(["small"]),
        TypeError,
        "each recipe must be a reversal Recipe",
    ),
}


@parametrize(CASES)
def test_parallel_training_refuses_bad_input_by_name(name):
    CASES[name].check()
