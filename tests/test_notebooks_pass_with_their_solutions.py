"""The solutions run (``pytest --solutions``, part of ``make test``): every notebook with exercise cells runs top
to bottom in the quick profile with each stub replaced by its solution; every check passes and every later cell
runs (``tools/solutions.py`` does the work; ``tests/test_exercise_solutions_run.py`` proves that it can fail)."""

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import solutions  # noqa: E402

WITH_EXERCISES = [
    p.stem
    for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
    if any("exercise" in c.metadata.get("tags", []) for c in nbformat.read(p, as_version=4).cells)
]


def test_most_notebooks_have_exercises():
    assert len(WITH_EXERCISES) >= 10, WITH_EXERCISES


@pytest.mark.parametrize("solved_notebook", WITH_EXERCISES)
def test_notebook_passes_with_its_solutions(solved_notebook, request, tmp_path):
    if not request.config.getoption("--solutions"):
        pytest.skip("the solutions run: pytest --solutions (make test does)")
    report = solutions.run(ROOT / "notebooks" / f"{solved_notebook}.ipynb", tmp_path)
    assert report["exercises"] > 0 and not report.get("skipped"), report
