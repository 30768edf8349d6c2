"""Bad-input cases as data: one ``Case`` per public callable, kept in ``tests/test_badinput_<area>.py``
(each file's ``CASES``, names saying what each case proves), and counted by ``tests/test_badinput_census.py``.

A case is a call with bad input, the exception it must raise and a fragment of the message (taken
literally): the fragment names the argument, so the error tells the user what to fix. Where the right answer
to bad input is a result, not an error (a checker handed a hostile answer says it is wrong), a ``Gives``
case states that result.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from dataclasses import dataclass

import pytest

#: The exception types a user can act on; SystemExit is a command line's usage error (its message on stderr).
CLEAR = (ValueError, TypeError, LookupError, OSError, SystemExit, NotImplementedError)


def qualname(target) -> str:
    """A case's target: its qualified name, or the function or class itself."""
    return target if isinstance(target, str) else f"{target.__module__}.{target.__qualname__}"


@dataclass(frozen=True)
class Case:
    target: object  # the callable, or its qualified name, e.g. "transformer_nb.plotting.heatmap"
    call: Callable[[], object]  # calls it with the bad input
    exc: type[Exception]  # what it must raise
    match: str  # a fragment of the message (or of stderr, for SystemExit), literally

    def __post_init__(self):
        if not issubclass(self.exc, CLEAR):
            raise ValueError(f"{self.target}: a case expects a clear error {CLEAR}, got {self.exc.__name__}")

    def check(self) -> None:
        err = io.StringIO()
        with pytest.raises(self.exc) as info, contextlib.redirect_stderr(err):
            self.call()
        said = f"{info.value}\n{err.getvalue()}"
        assert self.match in said, f"{self.target}: {self.match!r} not in {said!r}"


@dataclass(frozen=True)
class Gives:
    target: object  # the callable, or its qualified name
    call: Callable[[], object]  # calls it with the bad input
    expected: object  # the correct result, compared with == and by type

    def check(self) -> None:
        out = self.call()
        assert type(out) is type(self.expected) and out == self.expected, f"{self.target}: {out!r}"


def parametrize(cases: dict[str, Case | Gives]):
    """``@parametrize(CASES)`` on a test that takes ``name``: one test id per case, named by its key."""
    return pytest.mark.parametrize("name", list(cases))
