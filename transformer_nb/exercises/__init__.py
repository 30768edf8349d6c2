"""The exercise mechanism: students do the work, the checker tells them where they went wrong.

A notebook gives a stub in a cell tagged ``exercise`` and calls ``some_ex.check(fn)``:

- ``check(fn)`` runs ``fn`` on each case against a hidden reference and prints ``✓`` or the most specific
  nudge it has: the kind of answer first (None, dtype, device, shape), then the hint of a typical mistake
  whose output ``fn``'s equals, then a property the answer breaks. An exception is reported plainly, and a
  time limit stops an accidental infinite loop. An answer whose code calls the ready-made function the
  exercise asks for is told so (a nudge, read from the answer's code).
- ``hint()`` prints the next hint of an escalating list.
- ``solution()`` prints a solution written as a student would write it, and the worked verification.
- ``use(fn)`` returns ``fn`` once it passes, else the hidden reference, and says which.
- ``unlocked()``: whether the exercise has passed or its solution was asked for. A worked-solution cell runs
  its body only then (``if some_ex.unlocked(): ...``), so that Run All shows no answer to a student who has
  not tried.

Each topic has its own module (``exercises/attention.py``, ...): per exercise a declaration of its cases,
typical mistakes and properties, and solution (``exercises/solutions/``, which are also the references);
the prose (hints of each mistake and property, escalating hints, explanation) is in ``texts.toml``.
"""

import ast
import functools
import importlib
import inspect
import pkgutil
import re
import signal
import textwrap
import threading
from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

__all__ = ["all_exercises", "catalogue"]  # what a notebook calls (besides each exercise's methods)

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from transformer_nb.exercises.code import bound_names, module_imports, source_of
from transformer_nb.exercises.compare import allclose, has_nan, on_meta, same_answers, shapes, type_problem

META = (
    "your result is on the meta device: it has a shape but no values. Build it from the inputs "
    "(or with device=<input>.device), not on device='meta'."
)


#: A typical wrong implementation ``fn`` and the ``hint`` a student who made it should read.
Mistake = namedtuple("Mistake", "fn hint")
#: ``holds(args, out) -> bool`` must be True for a correct answer; ``hint`` explains a failure.
Property = namedtuple("Property", "holds hint")


@dataclass
class Result:
    passed: bool
    message: str
    case: str | None = None
    extension: str | None = None  # what an extension case said (the exercise itself passed)

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return self.message

    def _ipython_display_(self) -> None:
        """Show nothing when a cell ends with ``ex.check(fn)``: ``check`` has printed the message already."""


class TimeLimitExceeded(BaseException):
    """Raised inside a student's function that runs past the time limit."""


def call_with_time_limit(fn, args: tuple, seconds: float):
    """``fn(*args)``, interrupted by :class:`TimeLimitExceeded` after ``seconds`` (in the main thread, where a
    notebook runs; elsewhere without a limit)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return fn(*args)

    def on_alarm(signum, frame):
        raise TimeLimitExceeded

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@functools.cache
def _texts() -> dict:
    """The exercises' prose (hints, explanations) by title, from ``texts.toml``."""
    return tomllib.loads((Path(__file__).parent / "texts.toml").read_text(encoding="utf-8"))


def say(key: str, **values) -> str:
    """One of the checkers' messages (``texts.toml``, ``[messages]``), filled in with ``values``."""
    return _texts()["messages"][key].format(**values)


#: What each kind of from-scratch exercise asks the student to write, ready-made (``Exercise.ready_made``).
ATTENTION = ("scaled_dot_product_attention", "multi_head_attention_forward", "MultiheadAttention", "MultiHeadAttention")
MULTIHEAD = (*ATTENTION, "split_heads", "merge_heads")
BLOCK = ("TransformerEncoderLayer", "TransformerEncoder", "Transformer", "EncoderLayer", "Encoder")
ROPE = ("apply_rope", "rope_matrix", "RoPE")


def ready_made_calls(fn, names) -> list:
    """The names among ``names`` that the code of ``fn`` (a function or class) takes from torch or the package
    (a class or function of the student's own with such a name is theirs, not ready-made)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return []
    own = {b for node in ast.walk(tree) if isinstance(node, ast.stmt) for b in bound_names(node)}
    scope = getattr(fn, "__globals__", None) or vars(inspect.getmodule(fn) or inspect)

    def lookup(node):  # the object a name or dotted attribute refers to, or None if unknown here
        if isinstance(node, ast.Name):
            return scope.get(node.id)
        base = lookup(node.value) if isinstance(node, ast.Attribute) else None
        return None if base is None else getattr(base, node.attr, None)

    found = []
    for node in ast.walk(tree):
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
        if name in names and name not in own and name not in found:
            module = getattr(lookup(node), "__module__", None) or "torch"  # unknown here: take it as torch's
            if module.startswith(("torch", "transformer_nb")) and not module.startswith(__name__):
                found.append(name)
    return found


def answer_hints(reference, hints: dict) -> list:
    """For an exercise answered by a dict ``{question: answer}``: one :class:`Property` per question, whose hint
    ``hints[question]`` a wrong answer to it gets (never the right answer)."""
    keys = list(hints)
    return [
        Property(lambda a, o: isinstance(o, dict) and set(keys) <= set(o), f"answer with a dict with the keys {keys}.")
    ] + [
        Property(lambda a, o, k=k: same_answers({k: o[k]}, {k: reference(*a)[k]}), f"'{k}': {hint}")
        for k, hint in hints.items()
    ]


def seeded(fn, seed: int = 0):
    """``fn`` run with the global random state set to ``seed`` (and put back after): the same dropout masks and
    initial weights for the student's function, the reference and the mistakes."""

    def run(*args):
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            return fn(*args)

    return run


def gen(seed: int) -> torch.Generator:
    """A generator seeded with ``seed``: each case draws its own numbers."""
    return torch.Generator().manual_seed(seed)


def randn(seed: int, *shapes, scale: float = 1.0, dtype=torch.float32) -> tuple:
    """One tensor per shape, ``scale`` times standard normal draws from one generator seeded with ``seed``."""
    g = gen(seed)
    return tuple(scale * torch.randn(*shape, generator=g, dtype=dtype) for shape in shapes)


def keep_mask(lengths, t: int) -> torch.Tensor:
    """``(B, t)`` bool, True at the first ``lengths[b]`` positions of row b (right padding)."""
    return torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]


def tril(t: int) -> torch.Tensor:
    """The ``(t, t)`` causal mask, True where key j <= query i."""
    return torch.ones(t, t, dtype=torch.bool).tril()


def _clone(args):
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


class Hinted:
    """``hint()`` prints the next of ``self.hints`` (each call is more specific), then says there are no more."""

    _hint_level = 0

    def hint(self) -> None:
        if self._hint_level < len(self.hints):
            self._hint_level += 1
            print(f"Hint {self._hint_level}/{len(self.hints)} · {self.title}: {self.hints[self._hint_level - 1]}")
        else:
            more = f" {self.name}.solution() shows a worked solution." if hasattr(self, "solution") else ""
            print(f"No more hints for {self.title}.{more}")


@dataclass(eq=False)
class Exercise(Hinted):
    """An auto-checked exercise (see the module docstring for how a notebook uses it).

    - ``cases``: ``(description, make_args)`` pairs; ``make_args()`` returns the argument tuple.
    - ``reference``: the hidden solution (student-style, from ``exercises/solutions``).
    - ``name``: the variable a notebook imports (``"attention_ex"``), used in messages.
    - ``mistakes``: typical wrong implementations; ``properties``: ``holds(args, out)``, what a right answer has.
      Their hints are in ``texts.toml``, in the same order (a :class:`Mistake` or :class:`Property` brings its own).
    - ``hints``: escalating hints for ``hint()``; none of them is code that answers the exercise.
    - ``solution_code``: the objects whose source ``solution()`` shows (default: the reference).
    - ``explanation``: the worked verification ``solution()`` prints after the code.
    - ``answers``: the numbers the exercise asks for, ``{label: value}``; no notebook shows them before the
      student asks (``tests/answer_scan_plugin.py``).
    - ``extensions``: ``(description, make_args, hint)`` cases beyond what the exercise asks; checked after
      the required cases pass and reported separately.
    - ``harness(fn)``: what the checker runs for a function (the student's, the reference, each mistake),
      e.g. two training steps followed by reading the parameters; default: the function itself.
    - ``fresh_args``: build new arguments for every run (cases hold models or optimizers that a run changes).
    - ``crash_hints``: ``{words of an error message: hint}`` for crashes that have a typical cause.
    - ``ready_made``: names of the library functions or classes that the exercise asks the student to write.
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
        """The hints and the explanation not given here come from ``texts.toml``, by title."""
        text = _texts().get(self.title, {})
        self.hints = self.hints or text.get("hints", [])
        self.explanation = self.explanation or text.get("explanation", "")
        for key, kind in (("mistakes", Mistake), ("properties", Property)):  # bare callables: hints in order
            hints = iter(text.get(key, []))
            setattr(self, key, [x if isinstance(x, kind) else kind(x, next(hints)) for x in getattr(self, key)])
            if next(hints, None) is not None:
                raise ValueError(f"texts.toml has more {key} hints for {self.title!r} than the exercise has {key}")

    # ---------------------------------------------------------------- what a student calls

    def check(self, fn, *args, quiet: bool = False) -> Result:
        """Run ``fn`` on every case (or on ``args``, e.g. this run's numbers, if given); print and return a
        :class:`Result` with the most specific nudge. A dict ``fn`` is an answer stated by hand."""
        answer = (lambda *_: fn) if isinstance(fn, dict) else fn
        if isinstance(fn, dict) and any(v is None for v in fn.values()):
            result = Result(False, f"… {self.title}: not attempted yet. Replace each None with your answer.")
        else:
            with torch.random.fork_rng():  # building modules draws random numbers: the notebook's stay as they were
                result = self._check(answer, [("this run's numbers", lambda: args)] if args else self.cases)
        self.last, self._last_fn = result, fn
        if not quiet:
            print(result.message)
        return result

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
        result = self.last if (self._last_fn is fn and self.last is not None) else self._check(fn, self.cases)
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
        print(say("locked", title=self.title, name=self.name))
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
        """``fn`` run on ``args`` through the harness (the reference and the mistakes)."""
        return (self.harness(fn) if self.harness else fn)(*args)

    def _args(self, make, args):
        return make() if self.fresh_args and make else _clone(args)

    def _run(self, fn, args):
        """(output, None) or (None, message) for one call of the student's function."""
        try:
            return call_with_time_limit(self.harness(fn) if self.harness else fn, args, self.time_limit), None
        except NotImplementedError:
            return None, "not attempted"
        except TimeLimitExceeded:
            return None, say("time_limit", seconds=self.time_limit)
        except Exception as err:  # the student's code crashed: say where and why
            hints = [hint for words, hint in self.crash_hints.items() if words in str(err)]
            return None, f"your function raised {type(err).__name__}: {err}" + (f" {hints[0]}" if hints else "")

    def _check(self, fn, cases) -> Result:
        if not callable(fn):
            return Result(False, f"✗ {self.title}: pass your function itself, e.g. {self.name}.check(my_function).")
        called = ready_made_calls(fn, self.ready_made)
        if called:
            return Result(False, say("ready_made", title=self.title, name=called[0]))
        for desc, make in cases:
            args = make()
            ref = self._call(self.reference, self._args(make, args))
            out, error = self._run(fn, self._args(make, args))
            if error == "not attempted":
                return Result(False, say("not_attempted", title=self.title, name=self.name), desc)
            if error is None and self._matches(out, ref):
                continue
            self._make = make
            nudge = error or (META if on_meta(out) else self.diagnose(args, out, ref))
            return Result(False, f"✗ {self.title} — case '{desc}': {nudge} (More: {self.name}.hint())", desc)
        message = f"✓ {self.title}: " + (f"all {len(cases)} cases pass." if len(cases) > 1 else "correct.")
        extension = self._check_extensions(fn)
        if extension:
            message += f"\n  Extension, beyond the exercise: {extension}"
        return Result(True, message, extension=extension)

    def _matches(self, out, ref) -> bool:
        try:
            return self.type_problem(out, ref) is None and bool(self.compare(out, ref))
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
        for m in self.mistakes:
            try:
                if self._matches(out, self._call(m.fn, self._args(self._make, args))):
                    return m.hint
            except Exception:
                continue
        return None

    def failed_property(self, args, out) -> str | None:
        """The hint of the first property ``out`` violates, else None."""
        for p in self.properties:
            try:
                if not p.holds(args, out):
                    return p.hint
            except Exception:
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
        if info.name in ("code", "compare", "solutions"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for var, obj in vars(module).items():
            if isinstance(obj, Exercise) and obj.name == var:  # defined here, not imported from elsewhere
                found[f"{info.name}.{var}"] = obj
    return found


@functools.cache
def _answer_lines() -> dict:
    """Per exercise, the distinctive lines of its solution's code (not the headers a stub shares with it)."""
    return {
        key: [
            line
            for line in map(str.strip, ex.solution_source().splitlines())
            if len(line) > 30 and not line.startswith(("def ", "class ", "super(", "#", "from ", "import "))
        ]
        for key, ex in all_exercises().items()
    }


def shown_answers(text: str) -> list:
    """What ``text`` (a cell's output) shows of an exercise's answer: the lines of its solution's code, or a
    number it asks for; one message per exercise. A notebook run with its stubs untouched must show none."""
    found = []
    for key, ex in all_exercises().items():
        lines = _answer_lines()[key]
        if lines and sum(line in text for line in lines) >= min(3, len(lines)):
            found.append(f"the solution of {ex.title} ({key})")
        for label, value in ex.answers.items():
            if re.search(rf"(?<![\d.,_])({value:,}|{value:_}|{value})(?![\d])", text):
                found.append(f"the answer of {ex.title} ({label} = {value:,})")
    return found


def catalogue(name: str | None = None) -> None:
    """Print what the checkers recognise: per exercise (its notebook, checker and title) the number of typical
    mistakes that get their own message; with ``name`` (``"mha_ex"`` or ``"capstone.mha_ex"``), every message."""
    exercises = all_exercises()
    if name is None:
        notebook = lambda key: importlib.import_module(f"{__name__}.{key.split('.')[0]}").NOTEBOOK
        print(f"{'notebook':24s} {'checker':32s} {'mistakes':>8s}  exercise")
        for key in sorted(exercises, key=lambda k: (notebook(k), k)):
            print(f"{notebook(key):24s} {key:32s} {len(exercises[key].mistakes):8d}  {exercises[key].title}")
        total = sum(len(ex.mistakes) for ex in exercises.values())
        print(
            f"{total} known mistakes in {len(exercises)} checkers; catalogue('<checker>') lists one checker's messages."
        )
        return
    keys = [k for k in exercises if name in (k, k.split(".")[1])]
    if not keys:
        raise ValueError(f"no checker named {name!r}; catalogue() lists them")
    for key in keys:
        print(f"{key} ({exercises[key].title}), {len(exercises[key].mistakes)} known mistakes:")
        print("".join(f"  {i:2d}. {m.hint}\n" for i, m in enumerate(exercises[key].mistakes, 1)), end="")
