"""The check helpers used in notebook check cells assert, and print only the expected value."""

import pytest
import torch

from transformer_nb import check_close, check_equal, check_raises, check_true


def test_check_close_prints_expected_not_actual(capsys):
    check_close("x", 0.30000001, 0.3, atol=1e-6)
    out = capsys.readouterr().out
    assert "0.3" in out and "0.30000001" not in out


def test_check_close_fails_outside_tolerance():
    with pytest.raises(AssertionError, match="expected"):
        check_close("x", 0.31, 0.3, atol=1e-3)


def test_check_close_rejects_nan_and_shape_mismatch():
    with pytest.raises(AssertionError, match="NaN"):
        check_close("x", torch.tensor([float("nan")]), torch.tensor([0.0]), atol=1.0)
    with pytest.raises(AssertionError, match="shape"):
        check_close("x", torch.zeros(2), torch.zeros(3))


def test_check_equal_and_true():
    check_equal("shape", torch.zeros(2, 3).shape, (2, 3))
    with pytest.raises(AssertionError):
        check_equal("n", 3, 4)
    with pytest.raises(AssertionError):
        check_equal("t", torch.tensor([1, 2]), torch.tensor([1, 3]))
    check_true("ok", torch.tensor([True, True]))
    with pytest.raises(AssertionError):
        check_true("bad", torch.tensor([True, False]))


def test_check_raises():
    check_raises(ValueError, "bad", lambda: (_ for _ in ()).throw(ValueError("bad input")))
    with pytest.raises(AssertionError, match="nothing was raised"):
        check_raises(ValueError, "x", lambda: None)
    with pytest.raises(AssertionError, match="does not mention"):
        check_raises(ValueError, "shape", lambda: (_ for _ in ()).throw(ValueError("other")))
