"""A pytest plugin: while nbval runs a notebook top to bottom with its stubs untouched (``make test``), every
cell's FRESH outputs are checked for an exercise's answer (``transformer_nb.exercises.shown_answers``: its
solution's code, a number it asks for). One that shows an answer fails that cell's test, naming it.

This is what a student sees after Run All: outputs_hidden hides only the stored outputs, so a solution cell's
fresh outputs count like any other's. Load it with ``-p answer_scan_plugin`` (``tests/`` is on the path).
"""

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or not report.passed or not hasattr(item, "test_outputs"):
        return
    from notebook_harness import output_text

    from transformer_nb.exercises import shown_answers

    shown = shown_answers("\n".join(output_text(o) for o in item.test_outputs or []))
    if shown:
        report.outcome = "failed"
        report.longrepr = "Run with its stubs untouched, this cell shows " + "; ".join(shown)
