"""No notebook shows an exercise's answer outside its solution cells: not a printed number the exercise asks
for (35,270,656 / 35270656 / 35.27M / 1.07 GB ...), not the source of the package object that answers it,
not a definition that is (nearly) the solution, not a mistake demo that calls the checker. Each leak is
reported with its notebook, cell and what it shows; a planted leak is found."""

import json
from pathlib import Path

import nbformat
import pytest

from transformer_nb.exercises.leaks import answer_pattern, scan
from transformer_nb.exercises.params import breakdown_ex

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_notebooks_show_no_answer_outside_solution_cells():
    leaks = scan(NOTEBOOKS)
    assert not leaks, f"{len(leaks)} answers shown outside solution cells:\n" + "\n".join(map(str, leaks))


@pytest.mark.parametrize(
    "value, text, found",
    [
        (35_270_656, "grand total: 35,270,656", True),
        (35_270_656, "check_equal('total', n, 35_270_656)", True),
        (35_270_656, "35270656 parameters", True),
        (35_270_656, "about 35.27M parameters", True),
        (35_270_656, "35.3 million", True),
        (35_270_656, "3.53e+07", True),
        (35_270_656, "135,270,656", False),
        (35_270_656, "35.27 is not a count", False),
        (1_073_741_824, "1.07 GB per layer", True),
        (1_073_741_824, "= 1 GiB", True),
        (1_073_741_824, "1_073_741_824 bytes", True),
    ],
)
def test_answer_forms(value, text, found):
    assert bool(answer_pattern(value).search(text)) == found


STUB = """def count_82(d_model, n_heads, d_ff, n_layers, vocab):
    raise NotImplementedError  # your code here


breakdown_ex.check(count_82)"""


def _notebook(tmp_path, extra=()):
    """A clean notebook 07: the question, the stub, a solution cell that may show everything, then ``extra``."""
    cells = [
        nbformat.v4.new_markdown_cell("## Exercises\n\nCount the parameters of Exercise 8.2's Transformer."),
        nbformat.v4.new_code_cell("from transformer_nb.exercises.params import breakdown_ex"),
        nbformat.v4.new_code_cell(STUB, metadata={"tags": ["exercise"]}),
        nbformat.v4.new_code_cell(
            "# Solution · Exercise 8.2 — open after you have tried\nprint(f'{35_270_656:,}')\n"
            + breakdown_ex.solution_source(),
            metadata={"tags": ["solution"], "jupyter": {"source_hidden": True, "outputs_hidden": True}},
            outputs=[nbformat.v4.new_output("stream", name="stdout", text="35,270,656\n")],
        ),
        *extra,
    ]
    path = tmp_path / "07_parameter_counting.ipynb"  # the notebook that breakdown_ex's module names
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def test_a_clean_notebook_has_no_leak(tmp_path):
    assert scan([_notebook(tmp_path)]) == []


def test_planted_leaks_are_found_with_their_cell(tmp_path):
    printed = nbformat.v4.new_code_cell("print(total)", execution_count=1)
    printed.outputs = [nbformat.v4.new_output("stream", name="stdout", text="total: 35,270,656\n")]
    planted = [
        nbformat.v4.new_markdown_cell("The answer is about 35.27M parameters."),  # cell 4
        printed,  # cell 5
        nbformat.v4.new_code_cell("show_source(attention_flops)"),  # cell 6
        nbformat.v4.new_code_cell("breakdown_ex.check(lambda d, h, f, n, v: {})"),  # cell 7: a mistake demo
        nbformat.v4.new_code_cell(breakdown_ex.solution_source().replace("count_82", "my_count")),  # cell 8
    ]
    found = {(leak.cell, leak.what.split(" ")[0]) for leak in scan([_notebook(tmp_path, planted)])}
    assert (4, "shows") in found and (5, "shows") in found
    assert (6, "shows") in found  # the package function that answers Exercise 8.4's FLOPs
    assert (7, "calls") in found
    assert (8, "defines") in found


def test_a_filled_in_stub_is_a_leak(tmp_path):
    path = _notebook(tmp_path)
    nb = json.loads(path.read_text())
    nb["cells"][2]["source"] = breakdown_ex.solution_source() + "\n\nbreakdown_ex.check(count_82)\n"
    path.write_text(json.dumps(nb))
    leaks = scan([path])
    assert any(leak.cell == 2 and "does not raise NotImplementedError" in leak.what for leak in leaks)


def test_a_planted_leak_in_a_copy_of_a_real_notebook_is_reported_precisely(tmp_path):
    real = ROOT / "notebooks" / "00_start_here.ipynb"
    nb = nbformat.read(real, as_version=4)
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("Exercise 8.2 comes to 35,270,656 parameters."))
    copy = tmp_path / real.name
    nbformat.write(nb, copy)
    leaks = [str(leak) for leak in scan([copy]) if leak.cell == 1]
    assert leaks == [
        "00_start_here, cell 1 ('Exercise 8.2 comes to 35,270,656 parameters.'): shows the answer of "
        "Exercise 8.2: parameter count, part by part (total = 35,270,656) as '35,270,656'"
    ]


def test_every_reveal_names_an_existing_package_object():
    from transformer_nb.exercises import all_exercises
    from transformer_nb.exercises.leaks import _resolve

    missing = [
        (key, dotted) for key, ex in all_exercises().items() for dotted in ex.reveals if _resolve(dotted) is None
    ]
    assert not missing, f"reveals that name nothing (moved or renamed?): {missing}"


# --------------------------------------------------------------------------- what a run shows (nbval + the plugin)

GATED = (
    "# Solution · Exercise 8.2 — it runs once your answer passes, or after breakdown_ex.solution()\n"
    "if breakdown_ex.unlocked():\n    print(f'grand total: {35_270_656:,}')\n"
)


def _run_under_nbval(tmp_path, solution_cell: str):
    """nbval (as `make test` runs it) with the answer-scan plugin on a small notebook 07: the question, the stub,
    then ``solution_cell`` tagged and collapsed as a solution; returns (exit code, output)."""
    import os
    import subprocess
    import sys

    cells = [
        nbformat.v4.new_code_cell("from transformer_nb.exercises.params import breakdown_ex"),
        nbformat.v4.new_code_cell(STUB, metadata={"tags": ["exercise"]}),
        nbformat.v4.new_code_cell(
            solution_cell,
            metadata={"tags": ["solution"], "jupyter": {"source_hidden": True, "outputs_hidden": True}},
        ),
    ]
    path = tmp_path / "07_parameter_counting.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    args = ["--nbval-lax", "--nbval-current-env", "-p", "answer_scan_plugin", "-p", "no:cacheprovider"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *args, "-o", "addopts=", "--rootdir", str(tmp_path), str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    return run.returncode, run.stdout + run.stderr


def test_a_run_with_the_stubs_shows_no_answer_when_the_solution_cell_is_gated(tmp_path):
    code, out = _run_under_nbval(tmp_path, GATED)
    assert code == 0, out


def test_a_planted_leak_in_a_run_fails_the_cell_that_shows_it(tmp_path):
    code, out = _run_under_nbval(tmp_path, "print(f'grand total: {35_270_656:,}')\nbreakdown_ex.solution()")
    assert code != 0, out
    assert "shows the answer of Exercise 8.2" in out and "'35,270,656'" in out, out
    assert "its output shows the solution of Exercise 8.2" in out, out
