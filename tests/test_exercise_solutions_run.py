"""`tools/solutions.py` (make solutions) puts each exercise's solution in place of its stub, asserts that
its check passes, and fails when a later cell breaks on a correct answer, as notebook 04's did (its ALiBi
cell rebound `k`, so the Exercise 8.3 follow-up `offset_matrix(k, ...)` raised with a correct solution)."""

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import solutions  # noqa: E402

STUB = """def my_softmax(x):
    # your code here
    raise NotImplementedError


softmax_ex.check(my_softmax)"""

SETUP = "import torch\nfrom transformer_nb.exercises.warmup import softmax_ex\n\nk = 3  # an offset, as in notebook 04"
REBIND = "q, k, v = torch.randn(3, 2, 2)  # a later section reuses the name k for a tensor"
FOLLOW_UP = """fn = softmax_ex.use(my_softmax)
if fn is my_softmax:  # runs only with a correct answer: nbval, which runs the stub, never gets here
    print(fn(torch.zeros(int(k))))"""
THIS_CHECKOUT = f"import transformer_nb as t\nassert t.__file__.startswith({str(ROOT)!r}), t.__file__"  # not another


def _notebook(tmp_path, cells, name="demo.ipynb"):
    nb = nbformat.v4.new_notebook()
    for source, tags in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = tags
        nb.cells.append(cell)
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


def test_solve_cell_replaces_the_stub_and_asserts_the_check():
    scope = {
        "softmax_ex": solutions.exercise_names(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SETUP)]))[
            "softmax_ex"
        ]
    }
    source, titles = solutions.solve_cell(STUB, scope)
    assert titles == ["Warm-up 1 · stable softmax"]
    assert "raise NotImplementedError" not in source and "def my_softmax(x):" in source
    assert (
        "softmax_ex.check(my_softmax)" in source
        and "assert softmax_ex.last is not None and softmax_ex.last.passed" in source
    )


def test_a_cell_that_checks_nothing_is_refused():
    with pytest.raises(solutions.SolutionsError, match="calls no known exercise"):
        solutions.solve_cell("def f(x):\n    raise NotImplementedError\n", {})


def test_fails_when_a_follow_up_breaks_on_a_correct_answer_and_passes_once_fixed_with_this_checkout(tmp_path):
    broken = _notebook(tmp_path, [(SETUP, []), (REBIND, []), (STUB, ["exercise"]), (FOLLOW_UP, [])])
    with pytest.raises(solutions.SolutionsError) as err:
        solutions.run(broken, timeout=120)
    message = str(err.value)
    assert "cell 3" in message and "a cell after Warm-up 1" in message
    assert "only one element tensors can be converted to Python scalars" in message
    cells = [(SETUP, []), (STUB, ["exercise"]), (FOLLOW_UP, []), (THIS_CHECKOUT, [])]
    fixed = _notebook(tmp_path, cells, "fixed.ipynb")
    report = solutions.run(fixed, timeout=120)
    assert report["exercises"] == 1 and not report.get("skipped")


def test_notebooks_without_exercises_are_not_run(tmp_path):
    assert solutions.run(_notebook(tmp_path, [("raise SystemExit('must not run')", [])]))["skipped"]
