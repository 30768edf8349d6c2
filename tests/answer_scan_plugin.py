"""A pytest plugin: while nbval runs a notebook top to bottom with its stubs untouched (``make test``), every
cell's FRESH outputs are scanned for exercise answers (``transformer_nb.exercises.leaks.scan_cell``): the
declared numbers, a reference's or a solution's source. A leak fails that cell's test, naming what it shows.

This is what a student sees after Run All (or Shift-Enter through the cells): outputs_hidden hides only the
stored outputs, so a solution cell's fresh outputs count like any other's. Load it with ``-p
answer_scan_plugin`` (``tests/`` is on the path).
"""

import pytest


def _cell_dict(item) -> dict:
    """The executed cell as the scanner reads it: its source, tags and the outputs nbval just received."""
    cell = item.cell
    return {
        "cell_type": "code",
        "source": cell.source,
        "metadata": dict(cell.metadata),
        "outputs": [dict(o) for o in (item.test_outputs or [])],
    }


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or not report.passed or not hasattr(item, "test_outputs") or not hasattr(item, "cell"):
        return
    from transformer_nb.exercises.leaks import scan_cell

    nb = item.parent.nb
    index = next(i for i, c in enumerate(nb.cells) if c is item.cell)
    leaks = scan_cell(item.parent.path.stem, nb, index, _cell_dict(item))
    if leaks:
        report.outcome = "failed"
        report.longrepr = "Run with its stubs untouched, this cell shows an exercise's answer:\n" + "\n".join(
            map(str, leaks)
        )
