"""Nothing shows an exercise's answer before the student asks, Run All included: a worked-solution cell runs
its body only once its exercise is unlocked, and no stored output or visible text (stored notebooks are a Run
All with the stubs untouched) shows a solution's code or a number an exercise asks for. While ``make test``
runs the notebooks, ``tests/answer_scan_plugin.py`` checks every fresh output the same way."""

import ast
from pathlib import Path

import jupytext
import nbformat
import notebook_harness as h
import pytest

from transformer_nb.exercises import shown_answers
from transformer_nb.exercises.params import breakdown_ex

ROOT = Path(__file__).resolve().parents[1]


def _gated(statement) -> bool:
    """An ``if ...unlocked():`` block, or ``name = some_ex.use(fn)`` (which prints only whose function it is)."""
    if isinstance(statement, ast.If):
        return "unlocked()" in ast.unparse(statement.test)
    return isinstance(statement, ast.Assign) and ".use(" in ast.unparse(statement.value)


@pytest.mark.parametrize("name", h.parametrize_notebooks(h.notebooks_in()))
def test_solution_cells_run_only_once_unlocked(name):
    for cell in jupytext.read(h.ROOT / "notebooks" / "py" / f"{name}.py").cells:
        if "solution" in h.tags(cell):
            body = ast.parse(h.source(cell)).body
            assert body and all(map(_gated, body)), f"{name}: ungated solution cell {h.source(cell)[:80]!r}"


@pytest.mark.parametrize("name", h.parametrize_notebooks(h.notebooks_in()))
def test_stored_notebooks_show_no_answer(name):
    for i, cell in enumerate(h.load(h.ROOT / "notebooks" / f"{name}.ipynb")["cells"]):
        shown = "" if "solution" in h.tags(cell) else h.source(cell)  # a solution cell's code is collapsed
        shown += "\n".join(h.output_text(o) for o in cell.get("outputs", []))
        assert not shown_answers(shown), f"{name}, cell {i}: shows {shown_answers(shown)}"


def test_shown_answers_finds_a_solution_or_an_answer_and_nothing_else():
    assert shown_answers(breakdown_ex.solution_source())
    assert shown_answers("grand total: 35,270,656") and shown_answers("35270656 parameters")
    assert not shown_answers("135,270,656 and 35.27 are other numbers")


def test_a_run_that_shows_an_answer_fails_the_cell_under_nbval(pytester):
    cells = [nbformat.v4.new_code_cell("print(f'grand total: {35_270_656:,}')")]  # a kernel without torch: quick
    nbformat.write(nbformat.v4.new_notebook(cells=cells), pytester.path / "07_parameter_counting.ipynb")
    args = ["--nbval-lax", "--nbval-current-env", "-p", "answer_scan_plugin", "-p", "no:cacheprovider"]
    run = pytester.runpytest_inprocess(*args, "-o", "addopts=", "07_parameter_counting.ipynb")
    assert run.ret != 0 and "the answer of Exercise 8.2" in run.stdout.str(), run.stdout.str()
