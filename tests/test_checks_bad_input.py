"""The check helpers refuse arguments they cannot judge, with a message that names the argument
(issue 18): before, ``check_true("x", [False])`` passed (a non-empty list is truthy), an empty
tensor passed as "True", a complex or meta tensor crashed inside torch, ``atol=nan`` turned a
pass into a failure, and ``check_raises`` let an unexpected exception escape unlabelled."""

import math

import numpy as np
import pytest
import torch

from transformer_nb.checks import check_close, check_equal, check_raises, check_true


def _boom():
    raise ZeroDivisionError("division by zero")


@pytest.mark.parametrize(
    "fn,exc,words",
    [
        (lambda: check_true("x", [False]), TypeError, "condition must be True/False or a bool tensor"),
        (lambda: check_true("x", 1), TypeError, "condition must be True/False"),
        (lambda: check_true("x", None), TypeError, "condition must be True/False"),
        (lambda: check_true("x", torch.tensor([0.5])), TypeError, "condition must be a bool tensor"),
        (lambda: check_true("x", torch.tensor([], dtype=torch.bool)), ValueError, "condition is an empty tensor"),
        (lambda: check_close("x", 1 + 2j, 1.0), TypeError, "actual is complex"),
        (lambda: check_close("x", torch.ones(2, dtype=torch.complex64), torch.ones(2)), TypeError, "actual is complex"),
        (lambda: check_close("x", "1.0", 1.0), TypeError, "actual must be a number"),
        (lambda: check_close("x", 1.0, None), TypeError, "expected must be a number"),
        (lambda: check_close("x", torch.zeros(2, device="meta"), torch.zeros(2)), TypeError, "actual is on the meta"),
        (lambda: check_close("x", 1.0, 1.0, atol=math.nan), ValueError, "atol must be a finite number"),
        (lambda: check_close("x", 1.0, 1.0, atol=-1e-6), ValueError, "atol and rtol must be >= 0"),
        (lambda: check_close("x", 1.0, 1.0, rtol="0.1"), TypeError, "rtol must be a real number"),
        (lambda: check_close("x", 1.0, math.nan), ValueError, "expected contains NaN or inf"),
        (lambda: check_equal("x", torch.zeros(2, device="meta"), torch.zeros(2)), TypeError, "actual is on the meta"),
        (lambda: check_raises("ValueError", "x", _boom), TypeError, "exc_type must be an exception class"),
        (lambda: check_raises(int, "x", _boom), TypeError, "exc_type must be an exception class"),
        (lambda: check_raises(ValueError, None, _boom), TypeError, "must_contain must be a str"),
        (lambda: check_raises(ValueError, "x", "not callable"), TypeError, "fn must be callable"),
    ],
)
def test_bad_arguments_are_named(fn, exc, words):
    with pytest.raises(exc) as info:
        fn()
    assert words in str(info.value)


def test_an_unexpected_exception_is_a_failed_check_that_names_both():
    with pytest.raises(AssertionError, match="expected ValueError, but ZeroDivisionError was raised: division by zero"):
        check_raises(ValueError, "x", _boom)


def test_numpy_values_are_compared_not_crashed_on(capsys):
    check_equal("arrays", np.array([1, 2]), np.array([1, 2]))
    with pytest.raises(AssertionError):
        check_equal("arrays", np.array([1, 2]), np.array([1, 3]))
    check_true("numpy bool", np.bool_(True))
    with pytest.raises(AssertionError):
        check_true("numpy bool", np.array([1, 2]).sum() == 4)


def test_an_object_with_a_strange_eq_is_refused():
    class Weird:
        def __eq__(self, other):
            return "yes"

    with pytest.raises(TypeError, match="gave str, not True/False"):
        check_equal("x", Weird(), 3)
