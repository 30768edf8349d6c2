"""A solution cell's code stays closed until the student opens it: in JupyterLab (``jupyter.source_hidden``) and in
Colab, which ignores that flag and hides a cell's code only in its form view (``cellView: "form"``)."""

import jupytext
import notebook_harness as h
import pytest

CLOSED = {"cellView": "form", "source_hidden": True, "outputs_hidden": True}


def closed_flags(cell) -> dict:
    meta = cell.get("metadata", {})
    return {
        "cellView": meta.get("cellView"),
        **{k: meta.get("jupyter", {}).get(k) for k in ("source_hidden", "outputs_hidden")},
    }


def solution_cells(cells) -> list:
    return [c for c in cells if "solution" in c.get("metadata", {}).get("tags", [])]


@pytest.mark.parametrize("name", h.parametrize_notebooks(h.notebooks_in()))
def test_every_solution_cell_is_closed_in_jupyterlab_and_in_colab(name):
    twin = jupytext.read(h.ROOT / "notebooks" / "py" / f"{name}.py")
    stored = h.load(h.ROOT / "notebooks" / f"{name}.ipynb")
    for where, cells in (("twin", twin.cells), ("stored notebook", stored["cells"])):
        for cell in solution_cells(cells):
            first = h.source(cell).splitlines()[0]
            assert closed_flags(cell) == CLOSED, f"{name} ({where}): the solution cell {first!r} is not closed"


def test_the_check_notices_an_open_solution_cell():
    cell = {"metadata": {"tags": ["solution"], "jupyter": {"source_hidden": True, "outputs_hidden": True}}}
    assert closed_flags(solution_cells([cell])[0]) != CLOSED  # no cellView: open in Colab
