"""A small exercise-checker framework.

An :class:`Exercise` runs a student's function and the reference on several cases.
When they differ it answers with a *specific* hint: it first tries to recognise a
typical mistake (a known wrong implementation giving the same answer), then checks
properties the answer must have (rows sum to 1, exact zeros under a mask, ...), and only
then falls back to a generic message. It never prints the reference's values or source;
``show_solution()`` reveals the solution on purpose.

Each topic has its own module (``exercises/attention.py``, ...) that defines its
exercises with their reference solutions, mistakes and hints.
"""

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import torch


@dataclass
class Mistake:
    """A typical wrong implementation ``fn`` and the ``hint`` a student who made it should read."""

    fn: Callable
    hint: str


@dataclass
class Property:
    """``holds(args, out) -> bool`` must be True for a correct answer; ``hint`` explains a failure."""

    holds: Callable
    hint: str


@dataclass
class Result:
    passed: bool
    message: str
    case: str | None = None

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return self.message


def _tensors(x):
    if isinstance(x, (tuple, list)):
        return [t for item in x for t in _tensors(item)]
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (int, float, bool)):
        return [torch.tensor(x, dtype=torch.float64)]
    return [x]


def allclose(out, ref, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """Structural closeness of (nested tuples of) tensors and numbers."""
    a, b = _tensors(out), _tensors(ref)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape:
                return False
            x64, y64 = x.detach().cpu().double(), y.detach().cpu().double()
            if torch.isnan(x64).any() != torch.isnan(y64).any():
                return False
            if not torch.allclose(x64.nan_to_num(), y64.nan_to_num(), atol=atol, rtol=rtol):
                return False
        elif x != y:
            return False
    return True


def _clone(args):
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def _shape(x):
    return [tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__ for t in _tensors(x)]


@dataclass
class Exercise:
    """An auto-checked exercise.

    - ``cases``: list of ``(description, make_args)``; ``make_args()`` returns the argument tuple.
    - ``reference``: the solution; ``mistakes`` and ``properties`` give hints.
    - ``stub_hint``: what to say when the student's function still raises NotImplementedError.
    """

    title: str
    reference: Callable
    cases: list
    mistakes: list = field(default_factory=list)
    properties: list = field(default_factory=list)
    compare: Callable = allclose
    stub_hint: str = "Replace `raise NotImplementedError` with your implementation."

    def check(self, fn: Callable, quiet: bool = False) -> Result:
        """Run ``fn`` on every case; print and return a :class:`Result` with a specific hint."""
        result = self._check(fn)
        if not quiet:
            print(result.message)
        return result

    def _check(self, fn) -> Result:
        for desc, make in self.cases:
            args = make()
            ref = self.reference(*_clone(args))
            try:
                out = fn(*_clone(args))
            except NotImplementedError:
                return Result(False, f"… {self.title}: not attempted yet. {self.stub_hint}", desc)
            except Exception as err:  # the student's code crashed: say where and why
                return Result(
                    False, f"✗ {self.title} — case '{desc}': your function raised {type(err).__name__}: {err}", desc
                )
            if self.compare(out, ref):
                continue
            return Result(False, f"✗ {self.title} — case '{desc}': {self.diagnose(args, out, ref)}", desc)
        return Result(True, f"✓ {self.title}: all {len(self.cases)} cases match the reference.")

    def known_mistake(self, args, out) -> str | None:
        """The hint of the first typical mistake whose output equals ``out``, else None."""
        for m in self.mistakes:
            try:
                if self.compare(out, m.fn(*_clone(args))):
                    return m.hint
            except Exception:
                continue
        return None

    def failed_property(self, args, out) -> str | None:
        """The hint of the first property ``out`` violates, else None."""
        for p in self.properties:
            try:
                ok = p.holds(args, out)
            except Exception:
                ok = False
            if not ok:
                return p.hint
        return None

    def diagnose(self, args, out, ref) -> str:
        """The most specific hint available for a wrong ``out``: a recognised mistake first."""
        hint = self.known_mistake(args, out)
        if hint:
            return hint
        if _shape(out) != _shape(ref):
            return (
                f"the output has shape(s) {_shape(out)}, expected {_shape(ref)}. "
                "Check which axes you multiply and transpose."
            )
        for t in _tensors(out):
            if isinstance(t, torch.Tensor) and t.is_floating_point() and torch.isnan(t).any():
                return "the output contains NaN. Where does a softmax see a row that is all -inf, or a 0/0?"
        return self.failed_property(args, out) or (
            "the shapes are right but the values differ from the reference. "
            "Re-read the formula term by term and test on a tiny input by hand."
        )

    def show_solution(self) -> None:
        """Reveal the reference solution's source (on purpose only)."""
        from transformer_nb.source import show_source

        show_source(self.reference)

    def solution_source(self) -> str:
        return inspect.getsource(self.reference)
