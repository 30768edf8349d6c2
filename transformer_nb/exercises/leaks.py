"""Find what a notebook shows of an exercise's answer outside its solution cells.

:func:`scan` reads a stored notebook (inputs and outputs) and reports, cell by cell:

- **numbers**: an exercise's declared ``answers`` printed or written in any form a notebook would use
  (35,270,656 / 35270656 / 35_270_656 / 35.27M / 3.53e+07 / 1.07 GB / 1 GiB);
- **reference source**: ``show_source``/``inspect.getsource`` of an object in an exercise's ``reveals``, or an
  output that contains its source;
- **solution source**: a function or class defined in the notebook whose code is (nearly) the solution's;
- **mistake demos**: an exercise's ``check`` called outside an exercise cell, or on anything but the stub the
  cell defines; a stub cell whose stub is not a stub any more.

Cells tagged ``solution`` are exempt in a stored notebook. Each exercise module names its notebook
(``NOTEBOOK``); source rules apply there, number rules to every notebook (numbers below a million only to the
exercise's own).

:func:`scan_run` (and :func:`scan_cell`, which the nbval plugin ``tests/answer_scan_plugin.py`` calls for
every cell it executes) reads what a *run* of the notebook with its stubs untouched showed: a cell's fresh
outputs are what the student sees, however the cell was stored (collapsed or not), so there the outputs of
solution cells are scanned too (their collapsed sources are not), including for an exercise's solution
code (``ex.solution()`` run without being asked).
"""

import ast
import difflib
import functools
import html
import importlib
import inspect
import io
import json
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

from transformer_nb.exercises import all_exercises
from transformer_nb.exercises.code import bound_names

SEPARATORS = "[,_ \u2009\u202f\u00a0]?"
SCALES = [(1e3, "k|K|thousand"), (1e6, "M|million"), (1e9, "G|B|billion"), (1e12, "T|trillion")]
SCALES += [(2.0**10, "Ki"), (2.0**20, "Mi"), (2.0**30, "Gi"), (2.0**40, "Ti")]
SIMILAR = 0.65  # normalised token similarity from which a definition counts as (near) the solution


@dataclass
class Leak:
    notebook: str
    cell: int
    first_line: str
    what: str

    def __post_init__(self):
        if isinstance(self.cell, bool) or not isinstance(self.cell, int):
            raise TypeError(f"cell must be an int (the cell's index), got {self.cell!r}")
        for name in ("notebook", "first_line", "what"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a str, got {getattr(self, name)!r}")

    def __str__(self) -> str:
        return f"{self.notebook}, cell {self.cell} ({self.first_line!r}): {self.what}"


def answer_pattern(value) -> re.Pattern:
    """A regex for ``value`` written as a notebook would print it."""
    from transformer_nb.exercises.compare import is_number

    if not is_number(value) or value != value or abs(value) == float("inf"):
        raise ValueError(f"value must be a finite number (an exercise's answer), got {value!r}")
    forms = []
    if float(value) == int(value):
        digits = str(abs(int(value)))
        groups = [digits[: len(digits) % 3 or 3]] + [
            digits[i : i + 3] for i in range(len(digits) % 3 or 3, len(digits), 3)
        ]
        forms.append(SEPARATORS.join(groups))
    for base, suffix in SCALES:
        m = abs(value) / base
        if 1 <= m < 1000:
            for dec in range(4):
                if dec == 0 and abs(m - round(m)) > 0.005 * m:
                    continue
                forms.append(re.escape(f"{m:.{dec}f}") + rf"\s?(?:{suffix})")
    for dec in (1, 2, 3):
        mantissa, exp = f"{abs(value):.{dec}e}".split("e")
        forms.append(re.escape(mantissa) + rf"\s?(?:e\+?0*{int(exp)}|[×x·]\s?10\^?{int(exp)})")
    return re.compile(rf"(?<![\d.,]){'-' if value < 0 else ''}(?:{'|'.join(forms)})(?![\d])")


def _text(cell, source: bool = True) -> str:
    """Everything a reader sees of a cell: its source and, for code, its outputs (HTML as plain text)."""
    parts = [_source(cell)] if source else []
    for out in cell.get("outputs", []):
        parts.append("".join(out.get("text", "")))
        for mime, data in out.get("data", {}).items():
            if mime.startswith("text/"):
                text = "".join(data) if isinstance(data, list) else str(data)
                parts.append(html.unescape(re.sub(r"<[^>]+>", "", text)) if mime == "text/html" else text)
    return "\n".join(parts)


def _source(cell) -> str:
    src = cell.get("source", "")
    return src if isinstance(src, str) else "".join(src)


def _tags(cell) -> set:
    return set(cell.get("metadata", {}).get("tags", []))


def _tree(cell):
    """The cell's code as an AST (IPython magics and shell lines blanked), or None if it does not parse."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in _source(cell).splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _normalised(node) -> list:
    """Tokens of a definition with its docstring dropped and its own names renamed in order (v0, v1, ...)."""
    node = ast.parse(ast.unparse(node)).body[0]
    names = {}
    for sub in ast.walk(node):
        first = sub.body[0] if isinstance(sub, (ast.FunctionDef, ast.ClassDef)) and sub.body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            sub.body = sub.body[1:] or [ast.Pass()]
        if isinstance(sub, ast.arg):
            sub.arg = names.setdefault(sub.arg, f"v{len(names)}")
        elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            sub.id = names.setdefault(sub.id, f"v{len(names)}")
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in names:
            sub.id = names[sub.id]
        if isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
            sub.name = "f"
    text = ast.unparse(node)
    return [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.string.strip()]


def _is_stub(node) -> bool:
    """A definition that raises NotImplementedError somewhere: a stub for the student to fill in."""
    return any(isinstance(n, ast.Raise) and "NotImplementedError" in ast.unparse(n) for n in ast.walk(node))


def _definitions(tree) -> list:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


def _resolve(dotted: str):
    """A package object from its dotted name, or None when it no longer exists."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _source_lines(obj) -> list:
    """The distinctive lines of an object's source (long, not comments or docstrings)."""
    try:
        src = inspect.getsource(obj)
    except (TypeError, OSError):
        return []
    lines = [line.strip() for line in src.splitlines()]
    return [line for line in lines if len(line) > 30 and not line.startswith(("#", '"', "'"))]


@functools.cache
def _reveal_lines(dotted: str) -> tuple:
    """``_source_lines`` of the package object that ``dotted`` names, read once per session."""
    return tuple(_source_lines(_resolve(dotted)))


def _imported_checkers(nb) -> frozenset:
    """Names a notebook imports from ``transformer_nb.exercises.*`` (whatever they are called)."""
    return _imported_by(tuple(_source(cell) for cell in nb.get("cells", []) if cell.get("cell_type") == "code"))


@functools.lru_cache(maxsize=32)
def _imported_by(sources: tuple) -> frozenset:
    """``_imported_checkers`` of the code cells ``sources``: parsed once per notebook, not once per cell scanned."""
    names = set()
    for src in sources:
        tree = _tree({"source": src})
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("transformer_nb.exercises"):
                names.update(a.asname or a.name for a in node.names)
    return frozenset(names)


def exercises_by_notebook() -> dict:
    """``{notebook name: {variable: Exercise}}`` from each exercise module's ``NOTEBOOK``."""
    out = {}
    for key, ex in all_exercises().items():
        module = importlib.import_module(f"transformer_nb.exercises.{key.split('.')[0]}")
        out.setdefault(getattr(module, "NOTEBOOK", "?"), {})[key.split(".")[1]] = ex
    return out


class _Scanner:
    def __init__(self):
        self.by_notebook = exercises_by_notebook()
        self.numbers = [
            (nb, ex, label, value, answer_pattern(value))
            for nb, exs in self.by_notebook.items()
            for ex in exs.values()
            for label, value in ex.answers.items()
        ]
        self.solution_tokens = {
            id(ex): [
                _normalised(n)
                for n in ast.parse(ex.solution_source()).body
                if isinstance(n, (ast.FunctionDef, ast.ClassDef))
            ]
            for exs in self.by_notebook.values()
            for ex in exs.values()
        }

        self.solution_lines = [
            (ex, [ln.strip() for ln in ex.solution_source().splitlines() if len(ln.strip()) > 30])
            for exs in self.by_notebook.values()
            for ex in exs.values()
        ]

    def scan(self, path: Path, fresh: bool = False) -> list:
        nb = json.loads(Path(path).read_text()) if not isinstance(path, dict) else path
        name = Path(path).stem if not isinstance(path, dict) else nb["name"]
        return [leak for i, cell in enumerate(nb.get("cells", [])) for leak in self.scan_cell(name, nb, i, cell, fresh)]

    def scan_cell(self, name: str, nb: dict, i: int, cell: dict, fresh: bool = False) -> list:
        """The leaks of cell ``i`` of notebook ``name`` (``nb``: the whole notebook, for the checkers it imports).
        ``fresh``: the cell's outputs come from a run, so a solution cell's outputs count too."""
        mine = self.by_notebook.get(name, {})
        self.checkers = set(mine) | _imported_checkers(nb)
        first = next((line for line in _source(cell).splitlines() if line.strip()), "")[:60]
        if "solution" in _tags(cell):
            if not fresh:
                return []
            found = list(self._numbers(name, cell, source=False)) + self._shown_solutions(cell)
        else:
            found = list(self._numbers(name, cell))
            if cell.get("cell_type") == "code":
                found += self._code(cell, mine) + (self._shown_solutions(cell) if fresh else [])
        return [Leak(name, i, first, what) for what in found]

    def _shown_solutions(self, cell) -> list:
        """An output that contains an exercise's solution code (``ex.solution()`` run unasked)."""
        text = _text(cell, source=False)
        return [
            f"its output shows the solution of {ex.title}"
            for ex, lines in self.solution_lines
            if lines and sum(line in text for line in lines) >= min(3, len(lines))
        ]

    def _numbers(self, name, cell, source: bool = True):
        text = _text(cell, source)
        for nb, ex, label, value, pattern in self.numbers:
            if nb != name and abs(value) < 1e6:
                continue
            m = pattern.search(text)
            if m:
                yield f"shows the answer of {ex.title} ({label} = {value:,}) as {m.group(0)!r}"

    def _code(self, cell, mine) -> list:
        found, tree, text, exercise_cell = [], _tree(cell), _text(cell), "exercise" in _tags(cell)
        for ex in mine.values():
            for dotted in ex.reveals:
                short = (
                    ".".join(dotted.split(".")[-2:]) if dotted.split(".")[-2][:1].isupper() else dotted.split(".")[-1]
                )
                if re.search(rf"(show_source|getsource)\([^)]*\b{re.escape(short)}\b", _source(cell)):
                    found.append(f"shows the source of {dotted}, the answer to {ex.title}")
                elif sum(line in text for line in _reveal_lines(dotted)) >= 3:
                    found.append(f"its output contains the source of {dotted}, the answer to {ex.title}")
        if tree is None:
            return found
        stubs = {name for node in tree.body for name in bound_names(node)}
        for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
            f = call.func
            if (
                isinstance(f, ast.Attribute)
                and f.attr == "check"
                and isinstance(f.value, ast.Name)
                and f.value.id in self.checkers
            ):
                title = mine[f.value.id].title if f.value.id in mine else f.value.id
                if not exercise_cell:
                    found.append(
                        f"calls {f.value.id}.check outside an exercise cell (a mistake demo belongs in tests/)"
                    )
                elif not (call.args and isinstance(call.args[0], ast.Name) and call.args[0].id in stubs):
                    found.append(f"checks something other than the stub this cell defines for {title}")
        for node in _definitions(tree):
            if _is_stub(node):
                continue
            tokens = _normalised(node)
            for ex in mine.values():
                for sol in self.solution_tokens[id(ex)]:
                    ratio = difflib.SequenceMatcher(None, sol, tokens, autojunk=False).ratio()
                    if len(sol) >= 12 and ratio >= SIMILAR:
                        found.append(f"defines {node.name}, {ratio:.0%} like the solution of {ex.title}")
        if exercise_cell:
            found += self._stubs(tree, mine)
        return found

    def _stubs(self, tree, mine) -> list:
        found = []
        answers = {name for ex in mine.values() for name in ex.defined_names()}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in answers:
                raises = any(
                    isinstance(n, ast.Raise) and "NotImplementedError" in ast.unparse(n) for n in ast.walk(node)
                )
                if not raises:
                    found.append(f"the stub {node.name} does not raise NotImplementedError: is it filled in?")
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                names = set(bound_names(node)) & answers
                if names and any(not (isinstance(v, ast.Constant) and v.value is None) for v in node.value.values):
                    found.append(f"the stub {sorted(names)[0]} holds answers: its values must all be None")
        return found


_SCANNER = None


def _check_notebook(nb, name) -> None:
    if not isinstance(nb, dict) or not isinstance(nb.get("cells", []), list):
        raise TypeError(f"nb must be a notebook as a dict (with a 'cells' list), got {type(nb).__name__}")
    if not isinstance(name, str):
        raise TypeError(f"name must be the notebook's name, e.g. '01_scaled_attention', got {name!r}")


def scanner() -> _Scanner:
    """One scanner for the session (building it reads every exercise's solution)."""
    global _SCANNER
    if _SCANNER is None:
        _SCANNER = _Scanner()
    return _SCANNER


def scan(paths) -> list:
    """Every leak in the stored notebooks at ``paths``."""
    if isinstance(paths, (str, bytes, Path)) or not hasattr(paths, "__iter__"):
        raise TypeError(f"paths must be a list of notebook paths, got {paths!r}")
    return [leak for path in paths for leak in scanner().scan(path)]


def scan_run(nb: dict, name: str) -> list:
    """Every leak in a notebook ``nb`` (a dict) just executed with its stubs: fresh outputs, solution cells too."""
    _check_notebook(nb, name)
    return scanner().scan({**nb, "name": name}, fresh=True)


def scan_cell(name: str, nb: dict, i: int, cell: dict) -> list:
    """The leaks of one cell of notebook ``name`` whose outputs come from a run with the stubs untouched."""
    _check_notebook(nb, name)
    if not isinstance(cell, dict):
        raise TypeError(f"cell must be a notebook cell (a dict), got {type(cell).__name__}")
    return scanner().scan_cell(name, nb, i, cell, fresh=True)
