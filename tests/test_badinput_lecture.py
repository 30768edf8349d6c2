"""Bad input to the lecture mode (``transformer_nb.lecture``): a model name, profile or device it does not know is
refused by name, before any cache is read or model trained (instead of a bare KeyError or a silent None)."""

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
    "capstone_model_refuses_an_unknown_profile": Case(
        L + "capstone_model", lambda: lecture.capstone_model(prof="medium"), ValueError, "prof must be one of"
    ),
    "describe_refuses_an_unknown_profile": Case(
        L + "describe", lambda: lecture.describe("lm", None, "medium"), ValueError, "prof must be one of"
    ),
    "language_model_refuses_an_unknown_profile": Case(
        L + "language_model", lambda: lecture.language_model(prof="medium"), ValueError, "prof must be one of"
    ),
    "lm_run_refuses_an_unknown_profile": Case(
        L + "lm_run", lambda: lecture.lm_run("medium"), ValueError, "prof must be one of"
    ),
    "main_refuses_an_unknown_model_name": Case(
        L + "main", lambda: lecture.main(["--check", "gpt"]), SystemExit, "unknown model(s) ['gpt']"
    ),
    "models_refuses_an_unknown_device": Case(
        L + "models", lambda: lecture.models(device="tpu"), ValueError, "device must be one of"
    ),
    "prepare_refuses_one_name_given_as_a_str": Case(
        L + "prepare", lambda: lecture.prepare(names="lm"), TypeError, "names must be a sequence of names"
    ),
    "reversal_model_refuses_an_unknown_profile": Case(
        L + "reversal_model", lambda: lecture.reversal_model(prof="medium"), ValueError, "prof must be one of"
    ),
    "student_capstone_refuses_an_empty_vocabulary": Case(
        L + "student_capstone", lambda: lecture.student_capstone(0, "quick"), ValueError, "vocab_size must be >= 1"
    ),
}


@parametrize(CASES)
def test_lecture_refuses_bad_input_by_name(name):
    CASES[name].check()
