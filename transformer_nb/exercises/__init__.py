"""The exercise mechanism: students do the work, the checker tells them where they went wrong.

A notebook gives a stub in a cell tagged ``exercise`` and calls ``some_ex.check(fn)``:

- ``check(fn)`` runs ``fn`` on several cases against a hidden reference, each call under a time limit,
  and prints ``✓`` or a first nudge that names the symptom (the kind of answer first: None, dtype, device,
  shape; then a recognised mistake's own hint; then a property the answer breaks). It never raises and
  never prints the reference's values or source.
- ``hint()`` prints the next hint of an escalating list (a nudge first, more specific each time).
- ``solution()`` prints a solution written as a student would write it, and the worked verification.
- ``use(fn)`` returns ``fn`` once it passes, else the hidden reference, and says which: cells after an
  exercise run with the stub and with a correct answer alike.
- ``unlocked()``: whether the exercise has passed or its solution was asked for. A worked-solution cell runs
  its body only then (``if some_ex.unlocked(): ...``), so that Run All shows no answer to a student who has
  not tried; otherwise it says how to open it.

An answer runs under a time limit, and with the exercise's ``ready_made`` implementations (and the
checker's own timer) swapped for tripwires (``readymade.tripwires``): it cannot hang the checker, end the
process, or pass by calling what it was asked to write.

Each topic has its own module (``exercises/attention.py``, ...); the student-style solutions, which are
also the references, live in ``exercises/solutions/``. :func:`all_exercises` finds every exercise (for the
solutions run and the no-answer-shown test).
"""

import ast
import importlib
import inspect
import pkgutil
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from transformer_nb.core.utils import as_real
from transformer_nb.exercises.code import bound_names, module_imports, source_of
from transformer_nb.exercises.compare import allclose, has_nan, refusal, shapes, type_problem
from transformer_nb.exercises.readymade import Refused, tripwires
from transformer_nb.exercises.timelimit import TimeLimitExceeded, call_with_time_limit


def _check_hinted(name: str, fn, hint) -> None:
    if not callable(fn):
        raise TypeError(f"{name} must be a function, got {type(fn).__name__}")
    if not isinstance(hint, str) or not hint.strip():
        raise TypeError(f"hint must be a non-empty str, got {hint!r}")


@dataclass
class Mistake:
    """A typical wrong implementation ``fn`` and the ``hint`` a student who made it should read."""

    fn: Callable
    hint: str

    def __post_init__(self):
        _check_hinted("fn", self.fn, self.hint)


@dataclass
class Property:
    """``holds(args, out) -> bool`` must be True for a correct answer; ``hint`` explains a failure."""

    holds: Callable
    hint: str

    def __post_init__(self):
        _check_hinted("holds", self.holds, self.hint)


@dataclass
class Result:
    passed: bool
    message: str
    case: str | None = None
    extension: str | None = None  # what an extension case said (the exercise itself passed)

    def __post_init__(self):
        if not isinstance(self.passed, bool) or not isinstance(self.message, str):
            raise TypeError(f"passed must be a bool and message a str, got {self.passed!r} and {self.message!r:.40}")

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return self.message

    def _ipython_display_(self) -> None:
        """Show nothing when a cell ends with ``ex.check(fn)``: ``check`` has printed the message already."""


def _clone(args):
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


@dataclass(eq=False)
class Exercise:
    """An auto-checked exercise (see the module docstring for how a notebook uses it).

    - ``cases``: ``(description, make_args)`` pairs; ``make_args()`` returns the argument tuple.
    - ``reference``: the hidden solution (student-style, from ``exercises/solutions``).
    - ``name``: the variable a notebook imports (``"attention_ex"``), used in messages.
    - ``hints``: escalating hints for ``hint()``; none of them is code that answers the exercise.
    - ``solution_code``: the objects whose source ``solution()`` shows (default: the reference).
    - ``explanation``: the worked verification ``solution()`` prints after the code.
    - ``answers``: the numbers the exercise asks for, ``{label: value}``; a notebook must not show them
      outside a solution cell (``tests/test_no_answer_shown.py``).
    - ``reveals``: dotted names of package objects whose source is the answer (never shown outside a
      solution cell either).
    - ``extensions``: ``(description, make_args, hint)`` cases beyond what the exercise asks; checked after
      the required cases pass and reported separately.
    - ``harness(fn)``: what the checker runs for a function (the student's, the reference, each mistake),
      e.g. two training steps followed by reading the parameters; default: the function itself.
    - ``fresh_args``: build new arguments for every run (cases hold models or optimizers that a run changes).
    - ``crash_hints``: ``{words of an error message: hint}`` for crashes that have a typical cause.
    - ``ready_made``: dotted names of implementations that would answer a from-scratch exercise (the
      package's, PyTorch's); an answer that calls them, directly or through a wrapper, is refused.
    """

    title: str
    reference: Callable
    cases: list
    name: str = "ex"
    mistakes: list = field(default_factory=list)
    properties: list = field(default_factory=list)
    hints: list = field(default_factory=list)
    solution_code: tuple = ()
    explanation: str = ""
    answers: dict = field(default_factory=dict)
    reveals: tuple = ()
    extensions: list = field(default_factory=list)
    compare: Callable = allclose
    time_limit: float = 10.0
    harness: Callable | None = None
    fresh_args: bool = False
    crash_hints: dict = field(default_factory=dict)
    ready_made: tuple = ()
    last: Result | None = field(default=None, init=False, repr=False)
    revealed: bool = field(default=False, init=False, repr=False)
    _last_fn: object = field(default=None, init=False, repr=False)
    _hint_level: int = field(default=0, init=False, repr=False)
    _make: object = field(default=None, init=False, repr=False)

    def __post_init__(self):
        """The author's mistakes surface here, when the exercise is defined, not when a student checks."""
        if not isinstance(self.title, str) or not isinstance(self.name, str):
            raise TypeError(f"title and name must be str, got {self.title!r} and {self.name!r}")
        if not callable(self.reference):
            raise TypeError(f"reference must be the solution function, got {type(self.reference).__name__}")
        if not isinstance(self.cases, list) or not all(
            isinstance(c, tuple) and len(c) == 2 and isinstance(c[0], str) and callable(c[1]) for c in self.cases
        ):
            raise TypeError(f"cases must be a list of (description, make_args) pairs, got {self.cases!r:.80}")
        self.time_limit = as_real("time_limit", self.time_limit, positive=True)

    # ---------------------------------------------------------------- what a student calls

    def check(self, fn, quiet: bool = False) -> Result:
        """Run ``fn`` on every case; print and return a :class:`Result` with the most specific nudge."""
        result = self._check(fn)
        self.last, self._last_fn = result, fn
        if not quiet:
            print(result.message)
        return result

    def hint(self) -> None:
        """Print the next hint (each call is more specific); after the last, point to ``solution()``."""
        if self._hint_level < len(self.hints):
            self._hint_level += 1
            print(f"Hint {self._hint_level}/{len(self.hints)} · {self.title}: {self.hints[self._hint_level - 1]}")
        else:
            print(f"No more hints for {self.title}. {self.name}.solution() shows a worked solution.")

    def solution(self) -> None:
        """Show a solution written as a student would, then the worked verification (on purpose only)."""
        code = self.solution_source()
        self.revealed = True
        print(f"Solution · {self.title}")
        try:
            from IPython.display import Code, display

            display(Code(code, language="python"))
        except ImportError:
            print(code)
        if self.explanation:
            print(textwrap.dedent(self.explanation).strip())

    def use(self, fn) -> Callable:
        """``fn`` if it passes this exercise, else the hidden reference; prints which one the next cells use."""
        result = self.last if (self._last_fn is fn and self.last is not None) else self.check(fn, quiet=True)
        label = getattr(fn, "__name__", "answer")
        if result.passed:
            print(f"(the cells below use your {label})")
            return fn
        print(f"(your {label} does not pass yet: the cells below use a hidden reference instead)")
        return self.reference

    def unlocked(self) -> bool:
        """True once the exercise has passed or ``solution()`` was called; otherwise say how to open the
        worked solution (the cell that asks runs its body only when this is True)."""
        if self.revealed or (self.last is not None and self.last.passed):
            return True
        print(
            f"(The worked solution of {self.title} runs here once your answer passes, or after "
            f"{self.name}.solution(). Run this cell again then.)"
        )
        return False

    # ---------------------------------------------------------------- the solution's source

    def solution_source(self) -> str:
        """The solution's code: the imports it needs, then the source of each object in ``solution_code``."""
        objects = self.solution_code or (self.reference,)
        text = "\n\n\n".join(source_of(obj) for obj in objects)
        imports = []
        for obj in objects:
            module = importlib.import_module(obj.split(":")[0]) if isinstance(obj, str) else inspect.getmodule(obj)
            for line in module_imports(module):
                bound = line.split(" as ")[-1].split("import ")[-1].strip()
                if re.search(rf"\b{re.escape(bound)}\b", text) and line not in imports:
                    imports.append(line)
        return ("\n".join(imports) + "\n\n\n" if imports else "") + text + "\n"

    def defined_names(self) -> list:
        """The names the solution's code binds at top level (the stubs it replaces)."""
        nodes = ast.parse(self.solution_source()).body
        return [
            name for node in nodes if not isinstance(node, (ast.Import, ast.ImportFrom)) for name in bound_names(node)
        ]

    # ---------------------------------------------------------------- checking

    def _call(self, fn, args):
        """``fn`` run on ``args`` through the harness (no time limit: the reference and the mistakes)."""
        return (self.harness(fn) if self.harness else fn)(*args)

    def _args(self, make, args):
        return make() if self.fresh_args else _clone(args)

    def _run(self, fn, args):
        """(output, None) or (None, message) for one call of the student's function."""
        try:
            with tripwires(self.ready_made, fn):
                return call_with_time_limit(self.harness(fn) if self.harness else fn, args, self.time_limit), None
        except NotImplementedError:
            return None, "not attempted"
        except Refused as err:
            return None, err.message
        except SystemExit:
            return None, "your function called sys.exit() (or exit()): an answer returns its result; refused."
        except TimeLimitExceeded:
            return None, (
                f"your function did not finish within {self.time_limit:g} s (the reference takes a fraction of a "
                "second). An infinite loop, or a Python loop over every element?"
            )
        except Exception as err:  # the student's code crashed: say where and why
            hints = [hint for words, hint in self.crash_hints.items() if words in str(err)]
            return None, f"your function raised {type(err).__name__}: {err}" + (f" {hints[0]}" if hints else "")

    def _check(self, fn) -> Result:
        if not callable(fn):
            return Result(False, f"✗ {self.title}: pass your function itself, e.g. {self.name}.check(my_function).")
        for desc, make in self.cases:
            args = make()
            ref = self._call(self.reference, self._args(make, args))
            out, error = self._run(fn, self._args(make, args))
            if error == "not attempted":
                return Result(
                    False,
                    f"… {self.title}: not attempted yet. Replace `raise NotImplementedError` with your code and run "
                    f"the cell again ({self.name}.hint() if you want a start).",
                    desc,
                )
            if error is None and self._matches(out, ref):
                continue
            self._make = make
            nudge = error or refusal(out) or self.diagnose(args, out, ref)
            return Result(False, f"✗ {self.title} — case '{desc}': {nudge} (More: {self.name}.hint())", desc)
        message = f"✓ {self.title}: " + (f"all {len(self.cases)} cases pass." if len(self.cases) > 1 else "correct.")
        extension = self._check_extensions(fn)
        if extension:
            message += f"\n  Extension, beyond the exercise: {extension}"
        return Result(True, message, extension=extension)

    def _matches(self, out, ref) -> bool:
        try:
            return refusal(out) is None and self.type_problem(out, ref) is None and bool(self.compare(out, ref))
        except Exception:
            return False

    def _check_extensions(self, fn) -> str | None:
        for desc, make, hint in self.extensions:
            args = make()
            out, error = self._run(fn, self._args(make, args))
            if error is not None or not self._matches(out, self._call(self.reference, self._args(make, args))):
                return f"case '{desc}': {hint}"
        return None

    def type_problem(self, out, ref) -> str | None:
        """A message when ``out`` is the wrong kind of answer (None, type, device, dtype); overridable."""
        return type_problem(out, ref)

    def known_mistake(self, args, out) -> str | None:
        """The hint of the first typical mistake whose output equals ``out``, else None."""
        make = self._make
        for m in self.mistakes:
            try:
                if self._matches(out, self._call(m.fn, make() if self.fresh_args and make else _clone(args))):
                    return m.hint
            except Exception:
                continue
        return None

    def failed_property(self, args, out) -> str | None:
        """The hint of the first property ``out`` violates, else None."""
        for p in self.properties:
            try:
                ok = bool(p.holds(args, out))
            except Exception:
                ok = False
            if not ok:
                return p.hint
        return None

    def diagnose(self, args, out, ref) -> str:
        """The most specific nudge for a wrong ``out``: its kind, a recognised mistake, NaN, a property."""
        problem = self.type_problem(out, ref)
        if problem:
            return problem
        hint = self.known_mistake(args, out)
        if hint:
            return hint
        if shapes(out) != shapes(ref):
            hint = self.failed_property(args, out)
            return f"the result has shape(s) {shapes(out)}, expected {shapes(ref)}." + (f" {hint}" if hint else "")
        if has_nan(out):
            return "the result contains NaN. Where does a softmax see a row that is all -inf, or a 0/0?"
        return self.failed_property(args, out) or (
            "the kind and shape of the result are right but the values differ. "
            "Re-read the formula term by term and try a tiny input by hand."
        )


def all_exercises() -> dict:
    """Every exercise of every module in this package: ``{"module.variable": Exercise}``."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name in ("code", "compare", "timelimit", "leaks", "readymade", "solutions", "verdict"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for var, obj in vars(module).items():
            if isinstance(obj, Exercise) and obj.name == var:  # defined here, not imported from elsewhere
                found[f"{info.name}.{var}"] = obj
    return found


def known_mistakes() -> dict:
    """Every checker's catalogue of known mistakes: ``{"module.variable": [message, ...]}``, one message per
    mistake (each exercise's ``mistakes`` list is the one place it is defined)."""
    return {key: [m.hint for m in ex.mistakes] for key, ex in sorted(all_exercises().items())}


def catalogue(name: str | None = None) -> None:
    """Print what the checkers recognise: per exercise (its notebook, checker and title) the number of known
    mistakes that get their own message; with ``name`` (``"mha_ex"`` or ``"capstone.mha_ex"``), every message."""
    exercises, mistakes = all_exercises(), known_mistakes()
    notebook = lambda key: getattr(importlib.import_module(f"{__name__}.{key.split('.')[0]}"), "NOTEBOOK", "?")
    if name is None:
        print(f"{'notebook':24s} {'checker':32s} {'mistakes':>8s}  exercise")
        for key in sorted(exercises, key=lambda k: (notebook(k), k)):
            print(f"{notebook(key):24s} {key:32s} {len(mistakes[key]):8d}  {exercises[key].title}")
        print(
            f"{sum(map(len, mistakes.values()))} known mistakes in {len(exercises)} checkers; "
            "catalogue('<checker>') lists one checker's messages."
        )
        return
    keys = [k for k in exercises if name in (k, k.split(".")[1])]
    if not keys:
        raise ValueError(f"no checker named {name!r}; catalogue() lists them")
    for key in keys:
        print(f"{key} ({exercises[key].title}), {len(mistakes[key])} known mistakes:")
        for i, hint in enumerate(mistakes[key], 1):
            print(f"  {i:2d}. {hint}")
