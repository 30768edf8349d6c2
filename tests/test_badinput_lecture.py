"""Bad input to the lecture mode (``transformer_nb.lecture``): a model name or device it does not know is refused
by name, before any cache is read or model trained (instead of a bare KeyError or a silent None)."""

from badinput import Case, parametrize

from transformer_nb import lecture

L = "transformer_nb.lecture."

CASES = {
    "best_refuses_an_unknown_model_name": Case(
        L + "best", lambda: lecture.best("gpt"), ValueError, "name must be one of"
    ),
    "cached_refuses_an_unknown_model_name": Case(
        L + "cached", lambda: lecture.cached("gpt"), ValueError, "name must be one of"
    ),
    "main_refuses_an_unknown_model_name": Case(
        L + "main", lambda: lecture.main(["--check", "gpt"]), SystemExit, "unknown model(s) ['gpt']"
    ),
    "models_refuses_an_unknown_device": Case(
        L + "models", lambda: lecture.models(device="tpu"), ValueError, "device must be one of"
    ),
    "prepare_refuses_one_name_given_as_a_str": Case(
        L + "prepare", lambda: lecture.prepare(names="lm"), ValueError, "names must be some of"
    ),
}


@parametrize(CASES)
def test_lecture_refuses_bad_input_by_name(name):
    CASES[name].check()
