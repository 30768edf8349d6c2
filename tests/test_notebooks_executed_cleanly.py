"""Stored notebooks look like a clean Restart & Run All in the full profile: execution counts
1..n in order, no stored errors outside cells tagged raises-exception."""

import notebook_harness as h
import pytest


@pytest.mark.parametrize("name", h.parametrize_notebooks(h.notebooks_in()))
def test_notebook_was_run_top_to_bottom_without_errors(name):
    problems = h.execution_problems(h.ROOT / "notebooks" / f"{name}.ipynb")
    assert not problems, "\n".join(problems)
