"""Stored outputs were made by tools/refresh.py from the code cells and package modules as
they are now: the stamped code digest and module hashes still match."""

import notebook_harness as h
import pytest


@pytest.mark.parametrize("name", h.parametrize_notebooks(h.notebooks_in()))
def test_stored_outputs_match_current_code(name):
    problems = h.stamp_problems(h.ROOT / "notebooks" / f"{name}.ipynb")
    assert not problems, "\n".join(problems)
