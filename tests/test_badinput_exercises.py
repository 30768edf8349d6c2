"""Bad input to what a notebook calls of the exercises: a checker given something that is not a function says
so (it never raises), and ``catalogue`` names an unknown checker."""

import torch
from badinput import Case, Gives, parametrize

from transformer_nb import exercises
from transformer_nb.exercises.warmup import softmax_ex

E = "transformer_nb.exercises."

CASES = {
    "catalogue_names_an_unknown_checker": Case(
        E + "catalogue", lambda: exercises.catalogue("nope_ex"), ValueError, "no checker named 'nope_ex'"
    ),
    "check_says_a_tensor_is_not_a_function": Gives(
        E + "warmup.softmax_ex.check",
        lambda: softmax_ex.check(torch.ones(3), quiet=True).message,
        "✗ Warm-up 1 · stable softmax: pass your function itself, e.g. softmax_ex.check(my_function).",
    ),
}


@parametrize(CASES)
def test_exercise_framework_refuses_bad_input_by_name(name):
    CASES[name].check()
