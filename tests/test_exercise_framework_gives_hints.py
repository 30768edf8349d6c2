"""The checker framework: accepts the reference, names the typical mistake, never leaks the solution."""

import torch

from transformer_nb.exercises import Exercise, Mistake, Property


def _ref(x):
    return torch.softmax(x, dim=-1)


def _wrong_axis(x):
    return torch.softmax(x, dim=0)


EX = Exercise(
    "softmax rows",
    _ref,
    cases=[("3x4", lambda: (torch.randn(3, 4),)), ("2x5", lambda: (torch.randn(2, 5),))],
    mistakes=[Mistake(_wrong_axis, "rows do not sum to 1: did you softmax over the last axis?")],
    properties=[Property(lambda args, out: torch.all(out >= 0), "weights must be non-negative")],
)


def test_accepts_reference():
    assert EX.check(_ref, quiet=True).passed


def test_recognises_typical_mistake():
    r = EX.check(_wrong_axis, quiet=True)
    assert not r.passed and "last axis" in r.message


def test_property_hint_when_mistake_unknown():
    r = EX.check(lambda x: _ref(x) - 1.0, quiet=True)
    assert not r.passed and "non-negative" in r.message


def test_shape_hint():
    r = EX.check(lambda x: _ref(x).T, quiet=True)
    assert not r.passed and "shape" in r.message


def test_stub_and_crash_do_not_raise():
    def stub(x):
        raise NotImplementedError

    assert "not attempted" in EX.check(stub, quiet=True).message
    r = EX.check(lambda x: x @ torch.zeros(7, 7), quiet=True)
    assert not r.passed and "raised RuntimeError" in r.message


def test_nan_hint():
    r = EX.check(lambda x: _ref(x) * float("nan"), quiet=True)
    assert "NaN" in r.message


def test_messages_never_contain_the_solution():
    src = EX.solution_source()
    for fn in (_wrong_axis, lambda x: x, lambda x: _ref(x).T):
        msg = EX.check(fn, quiet=True).message
        assert "torch.softmax(x, dim=-1)" not in msg and src not in msg
