"""Every notebooks/NAME.ipynb has its twin notebooks/py/NAME.py and vice versa, with the same
cells: types, sources (trailing whitespace aside) and tags."""

import notebook_harness as h
import pytest

NOTEBOOKS = h.ROOT / "notebooks"


@pytest.mark.parametrize("name", h.parametrize_notebooks(h.notebooks_in() + h.twins_in()))
def test_notebook_and_twin_have_the_same_cells(name):
    problems = h.twin_problems(NOTEBOOKS / f"{name}.ipynb", NOTEBOOKS / "py" / f"{name}.py")
    assert not problems, "\n".join(problems)
