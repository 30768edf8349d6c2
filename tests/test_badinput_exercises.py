"""Bad input to the exercise framework: an exercise defined wrongly fails when it is defined, helpers refuse
bad arguments by name, and the checkers' comparisons give the right verdict on a hostile answer (``Gives``)."""

import ast

import torch
import torch.nn as nn
from badinput import Case, Gives, parametrize

from transformer_nb import exercises
from transformer_nb.exercises import block, code, compare, leaks, masks, params, readymade, reversal, timelimit, verdict

E = "transformer_nb.exercises."
ONE_CASE = [("one", lambda: (torch.zeros(2),))]


class Liar(torch.Tensor):
    """A tensor subclass that may answer every comparison as it likes."""


def liar():
    return torch.zeros(2).as_subclass(Liar)


CASES = {
    "Exercise_refuses_a_reference_that_is_not_a_function": Case(
        E + "Exercise", lambda: exercises.Exercise("t", 3, ONE_CASE), TypeError, "reference must be the solution"
    ),
    "Exercise_refuses_cases_that_are_not_pairs": Case(
        E + "Exercise", lambda: exercises.Exercise("t", abs, [torch.zeros(2)]), TypeError, "cases must be a list of"
    ),
    "Exercise_refuses_a_time_limit_of_0": Case(
        E + "Exercise", lambda: exercises.Exercise("t", abs, ONE_CASE, time_limit=0), ValueError, "time_limit"
    ),
    "Mistake_refuses_a_hint_that_is_not_a_str": Case(
        E + "Mistake", lambda: exercises.Mistake(abs, None), TypeError, "hint must be a non-empty str"
    ),
    "Property_refuses_a_holds_that_is_not_a_function": Case(
        E + "Property", lambda: exercises.Property(True, "why"), TypeError, "holds must be a function"
    ),
    "Result_refuses_a_str_for_passed": Case(
        E + "Result", lambda: exercises.Result("yes", "msg"), TypeError, "passed must be a bool"
    ),
    "stack_signature_refuses_d_model_0": Case(
        E + "block.stack_signature",
        lambda: block.stack_signature(nn.Identity(), 0, 8, 1),
        ValueError,
        "d_model must be >= 1",
    ),
    "stack_signature_says_a_non_module_is_not_one": Gives(
        E + "block.stack_signature", lambda: block.stack_signature("model", 8, 8, 1), {"module": False}
    ),
    "source_of_refuses_a_number": Case(
        E + "code.source_of", lambda: code.source_of(3), TypeError, "obj must be a function, a class"
    ),
    "source_of_names_a_missing_assignment": Case(
        E + "code.source_of", lambda: code.source_of("transformer_nb.reversal:NOPE"), ValueError, "does not assign"
    ),
    "module_imports_refuses_a_module_name_as_str": Case(
        E + "code.module_imports", lambda: code.module_imports("torch"), TypeError, "module must be a module"
    ),
    "bound_names_refuses_source_text": Case(
        E + "code.bound_names", lambda: code.bound_names("x = 1"), TypeError, "node must be an ast node"
    ),
    "bound_names_of_an_expression_binds_nothing": Gives(
        E + "code.bound_names", lambda: code.bound_names(ast.parse("f(x)").body[0]), []
    ),
    "allclose_refuses_a_negative_atol": Case(
        E + "compare.allclose", lambda: compare.allclose(1.0, 1.0, atol=-1), ValueError, "atol must be a number >= 0"
    ),
    "allclose_says_a_tensor_subclass_is_not_close": Gives(
        E + "compare.allclose", lambda: compare.allclose(liar(), torch.zeros(2)), False
    ),
    "equal_says_true_is_not_the_count_1": Gives(E + "compare.equal", lambda: compare.equal(True, 1), False),
    "has_nan_of_a_str_is_false": Gives(E + "compare.has_nan", lambda: compare.has_nan("nan"), False),
    "is_number_says_a_bool_is_not_a_number": Gives(E + "compare.is_number", lambda: compare.is_number(True), False),
    "refusal_names_a_tensor_subclass": Gives(
        E + "compare.refusal",
        lambda: compare.refusal(liar()),
        "your result is a Liar, a subclass of torch.Tensor: return a plain tensor.",
    ),
    "shapes_of_a_non_tensor_name_its_type": Gives(
        E + "compare.shapes", lambda: compare.shapes(["a", 3]), ["str", "int"]
    ),
    "tensor_problem_says_a_missing_return": Gives(
        E + "compare.tensor_problem",
        lambda: compare.tensor_problem(None, torch.zeros(2)),
        "your result is None: is a `return` missing?",
    ),
    "type_problem_says_a_number_is_not_a_list": Gives(
        E + "compare.type_problem",
        lambda: compare.type_problem(3, [1, 2]),
        "return a list of 2 results; your result is a int.",
    ),
    "values_close_refuses_a_nan_rtol": Case(
        E + "compare.values_close",
        lambda: compare.values_close(1.0, 1.0, atol=0.0, rtol=float("nan")),
        ValueError,
        "rtol must be a number >= 0",
    ),
    "Leak_refuses_a_str_cell_index": Case(
        E + "leaks.Leak", lambda: leaks.Leak("01", "3", "x = 1", "an answer"), TypeError, "cell must be an int"
    ),
    "answer_pattern_refuses_a_str": Case(
        E + "leaks.answer_pattern", lambda: leaks.answer_pattern("12"), ValueError, "value must be a finite number"
    ),
    "answer_pattern_refuses_nan": Case(
        E + "leaks.answer_pattern", lambda: leaks.answer_pattern(float("nan")), ValueError, "value must be a finite"
    ),
    "scan_refuses_one_path_given_as_a_str": Case(
        E + "leaks.scan", lambda: leaks.scan("notebooks/01_scaled_attention.ipynb"), TypeError, "paths must be a list"
    ),
    "scan_cell_refuses_a_cell_that_is_not_a_dict": Case(
        E + "leaks.scan_cell", lambda: leaks.scan_cell("01", {"cells": []}, 0, "x = 1"), TypeError, "cell must be"
    ),
    "scan_run_refuses_a_notebook_path": Case(
        E + "leaks.scan_run", lambda: leaks.scan_run("01.ipynb", "01"), TypeError, "nb must be a notebook as a dict"
    ),
    "MaskExercise_refuses_a_reference_that_is_not_a_function": Case(
        E + "masks.MaskExercise", lambda: masks.MaskExercise("t", None, ONE_CASE), TypeError, "reference must be"
    ),
    "DictExercise_refuses_cases_that_are_not_a_list": Case(
        E + "params.DictExercise", lambda: params.DictExercise("t", dict, ONE_CASE[0]), TypeError, "cases must be"
    ),
    "exact_dicts_says_a_bool_is_not_the_count_1": Gives(
        E + "params.exact_dicts", lambda: params.exact_dicts({"n": True}, {"n": 1}), False
    ),
    "tripwires_refuses_one_name_given_as_a_str": Case(
        E + "readymade.tripwires",
        lambda: readymade.tripwires("torch.softmax").__enter__(),
        TypeError,
        "names must be a tuple of dotted names",
    ),
    "F_pad_refuses_a_1d_tensor": Case(
        E + "reversal.F_pad",
        lambda: reversal.F_pad(torch.ones(3, dtype=torch.long), 5),
        ValueError,
        "x must be a (B, S)",
    ),
    "F_pad_refuses_a_float_width": Case(
        E + "reversal.F_pad", lambda: reversal.F_pad(torch.ones(1, 3, dtype=torch.long), 5.0), TypeError, "width"
    ),
    "call_with_time_limit_refuses_a_str_for_seconds": Case(
        E + "timelimit.call_with_time_limit",
        lambda: timelimit.call_with_time_limit(abs, (1,), "10"),
        TypeError,
        "seconds must be a real number",
    ),
    "call_with_time_limit_refuses_args_that_are_not_a_tuple": Case(
        E + "timelimit.call_with_time_limit",
        lambda: timelimit.call_with_time_limit(abs, 1, 1.0),
        TypeError,
        "args must be a tuple",
    ),
    "VerdictExercise_refuses_a_reference_that_is_not_a_function": Case(
        E + "verdict.VerdictExercise",
        lambda: verdict.VerdictExercise("t", {"a": True}, ONE_CASE),
        TypeError,
        "reference must be",
    ),
    "same_answer_says_a_float_is_not_yes": Gives(
        E + "verdict.same_answer", lambda: verdict.same_answer(1.0, True), False
    ),
    "same_answers_says_a_str_is_not_a_dict_of_answers": Gives(
        E + "verdict.same_answers", lambda: verdict.same_answers("yes", {"a": True}), False
    ),
}


@parametrize(CASES)
def test_exercise_framework_refuses_bad_input_by_name(name):
    CASES[name].check()
