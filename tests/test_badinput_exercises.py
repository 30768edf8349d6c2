"""Bad input to what a notebook calls of the exercises: ``catalogue`` names an unknown checker. (A checker given
something that is not a function says so: tests/test_exercise_framework_gives_hints.py.)"""

from badinput import Case, parametrize

from transformer_nb import exercises

E = "transformer_nb.exercises."

CASES = {
    "catalogue_names_an_unknown_checker": Case(
        E + "catalogue", lambda: exercises.catalogue("nope_ex"), ValueError, "no checker named 'nope_ex'"
    ),
}


@parametrize(CASES)
def test_exercise_framework_refuses_bad_input_by_name(name):
    CASES[name].check()
