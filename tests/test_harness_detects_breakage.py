"""The notebook harness catches what it is meant to catch.

A tiny project (notebooks/py/99_tiny.py plus a stand-in `transformer_nb` package) is
refreshed once with the real tools/refresh.py; each test then breaks one thing in a copy
and asserts that the matching harness check names the notebook, the cause and the fix.
"""

import json
import os
import shutil
import subprocess
import sys

import notebook_harness as h
import pytest

REFRESH = h.ROOT / "tools" / "refresh.py"
NAME = "99_tiny"
TWIN = """# %% [markdown]
# # 99 · Tiny
# A notebook for testing the harness.

# %%
import os
import transformer_nb
print(os.environ["TNB_PROFILE"], transformer_nb.VALUE)

# %% tags=["nbval-check-output"]
print(transformer_nb.helpers.double(21))

# %% tags=["raises-exception"]
transformer_nb.helpers.double(None)

# %%
import ipywidgets
ipywidgets.IntSlider(value=3)
"""


def run_refresh(root, *args, profile=None):
    env = {k: v for k, v in os.environ.items() if k != "TNB_PROFILE"}
    # The kernel imports the stand-in package first; an install made through PYTHONPATH (wheels unpacked
    # into a folder, as on the offline GPU host) stays reachable behind it.
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(root), os.environ.get("PYTHONPATH", "")] if p)
    if profile:
        env["TNB_PROFILE"] = profile
    return subprocess.run(
        [sys.executable, str(REFRESH), *map(str, args)], env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def refreshed(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    (root / "notebooks" / "py").mkdir(parents=True)
    (root / "notebooks" / "py" / f"{NAME}.py").write_text(TWIN)
    (root / "transformer_nb").mkdir()
    (root / "transformer_nb" / "__init__.py").write_text("from . import helpers\nVALUE = 1\n")
    (root / "transformer_nb" / "helpers.py").write_text("def double(x):\n    return 2 * x\n")
    result = run_refresh(root, root / "notebooks" / "py" / f"{NAME}.py")
    assert result.returncode == 0, result.stdout + result.stderr
    return root


@pytest.fixture
def project(refreshed, tmp_path):
    """A fresh copy of the refreshed project, to break."""
    shutil.copytree(refreshed, tmp_path / "p")
    return tmp_path / "p"


def paths(root):
    return root / "notebooks" / f"{NAME}.ipynb", root / "notebooks" / "py" / f"{NAME}.py"


def edit(ipynb, change):
    nb = json.loads(ipynb.read_text())
    change(nb)
    ipynb.write_text(json.dumps(nb, indent=1))


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def all_problems(root):
    ipynb, twin = paths(root)
    return h.twin_problems(ipynb, twin) + h.stamp_problems(ipynb) + h.execution_problems(ipynb)


def assert_flags(problems, *words):
    text = "\n".join(problems)
    print(text)  # shown with -s: the message a developer would read
    for word in (f"{NAME}.ipynb", f"make refresh NB={NAME}", *words):
        assert word in text, f"{word!r} not in:\n{text}"


def test_refreshed_notebook_passes_every_check(refreshed):
    ipynb, _ = paths(refreshed)
    assert all_problems(refreshed) == []
    nb = json.loads(ipynb.read_text())
    stamp = nb["metadata"]["transformer_nb"]
    assert stamp["profile"] == "full"
    assert sorted(stamp["modules"]) == ["transformer_nb/__init__.py", "transformer_nb/helpers.py"]
    cells = code_cells(nb)
    assert [c["execution_count"] for c in cells] == [1, 2, 3, 4]  # the modules cell is gone
    assert "".join(cells[0]["outputs"][0]["text"]) == "full 1\n"
    assert cells[2]["outputs"][0]["ename"] == "TypeError"  # allowed: tagged raises-exception
    assert not any("execution" in c["metadata"] for c in cells)
    assert "widgets" in nb["metadata"]


def test_refresh_that_changes_nothing_leaves_no_diff(refreshed):
    ipynb, twin = paths(refreshed)  # same place: tracebacks hold absolute paths
    before = ipynb.read_bytes()
    result = run_refresh(refreshed, twin)
    assert result.returncode == 0, result.stderr
    assert ipynb.read_bytes() == before


def test_refresh_refuses_the_quick_profile_and_list_without_stale(refreshed, monkeypatch, capsys):
    sys.path.insert(0, str(REFRESH.parent))
    import refresh

    monkeypatch.setenv("TNB_PROFILE", "quick")
    assert refresh.main([str(paths(refreshed)[1])]) == 2
    assert "refusing to run with TNB_PROFILE=quick" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        refresh.main(["--list", "--root", str(refreshed)])
    assert stop.value.code == 2 and "--list goes with --stale" in capsys.readouterr().err


def test_refresh_fails_loudly_on_an_error_and_keeps_the_stored_notebook(project):
    ipynb, twin = paths(project)
    before = ipynb.read_bytes()
    twin.write_text(TWIN + "\n# %%\nundefined_name + 1\n")
    result = run_refresh(project, twin)
    assert result.returncode == 1
    assert "NameError" in result.stderr and f"{NAME} FAILED" in result.stderr
    assert ipynb.read_bytes() == before


def test_edited_twin_is_out_of_sync(project):
    _, twin = paths(project)
    twin.write_text(TWIN.replace("double(21)", "double(22)"))
    assert_flags(
        h.twin_problems(*paths(project)),
        "cell 3 (code) differs in source, line 1",
        "twin has 'print(transformer_nb.helpers.double(22))'",
    )


def test_changed_tags_in_twin_are_out_of_sync(project):
    _, twin = paths(project)
    twin.write_text(TWIN.replace('# %% tags=["nbval-check-output"]', "# %%"))
    assert_flags(h.twin_problems(*paths(project)), "cell 3 (code) differs in tags")


def test_missing_twin_and_missing_notebook_are_flagged(project):
    ipynb, twin = paths(project)
    twin.unlink()
    assert_flags(h.twin_problems(ipynb, twin), "has no text twin", f"notebooks/py/{NAME}.py")
    twin.write_text(TWIN)
    ipynb.unlink()
    assert_flags(h.twin_problems(ipynb, twin), "has no notebook")


def test_a_comment_edit_in_shown_source_is_stale_only_where_the_source_is_shown(project):
    ipynb, _ = paths(project)
    helpers = project / "transformer_nb" / "helpers.py"
    shown = {"output_type": "display_data", "metadata": {}, "data": {"text/plain": "# transformer_nb/helpers.py\n"}}
    shown["data"]["text/plain"] += helpers.read_text()  # what show_source(helpers.double) displays
    edit(ipynb, lambda nb: code_cells(nb)[1]["outputs"].append(shown))
    assert h.stamp_problems(ipynb) == []
    helpers.write_text("def double(x):\n    return 2 * x  # twice\n")  # a comment: the digest is the same
    assert_flags(h.stamp_problems(ipynb), "shows source of transformer_nb/helpers.py", "no longer holds")
    edit(ipynb, lambda nb: code_cells(nb)[1]["outputs"].remove(shown))
    assert h.stamp_problems(ipynb) == []  # not shown: a comment edit stales nothing


def test_a_figure_printed_from_another_notebook_is_stale_when_that_notebook_changes_it(project):
    (project / h.LEDGER_DATA).mkdir(parents=True)  # the figures' labels: data/figures.toml
    shutil.copy(h.ROOT / h.LEDGER_DATA / "figures.toml", project / h.LEDGER_DATA)
    shutil.copy(h.ROOT / h.FIGURES_FILE, project / h.FIGURES_FILE)  # the ledger's reader of stored figures
    other = project / "notebooks" / "02_other.ipynb"

    def store(percent):  # notebook 02 prints the figure "02:unmasked_rule_kept"
        text = f"without mask: x\n rule kept: ✗ ({percent}% of 7 tokens)\n"
        out = {"output_type": "stream", "name": "stdout", "text": text}
        cell = {"cell_type": "code", "metadata": {}, "source": "", "execution_count": 1, "outputs": [out]}
        other.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
        os.utime(other, (0, len(percent)))  # a new modification time: the reader caches by it

    store("14.2")
    ipynb, _ = paths(project)
    said = {"output_type": "stream", "name": "stdout", "text": "kept 14.2% of the time (see 001-19.14.2)\n"}
    edit(ipynb, lambda nb: code_cells(nb)[1]["outputs"].append(said))
    nb = h.load(ipynb)
    assert h.printed_figures(nb, NAME, project) == {"02:unmasked_rule_kept": "14.2"}  # "19.14.2" is no match
    edit(ipynb, lambda nb: nb["metadata"][h.STAMP_KEY].update(figures=h.printed_figures(nb, NAME, project)))
    assert h.stamp_problems(ipynb) == []
    store("15.0")
    assert_flags(h.stamp_problems(ipynb), "prints 02:unmasked_rule_kept = 14.2", "now give 15.0")


def test_refresh_stale_refreshes_exactly_the_stale_notebooks_a_changed_printed_figure_included(project):
    (project / h.LEDGER_DATA).mkdir(parents=True)  # a ledger reader with one figure: what notebook 98 prints
    shutil.copy(h.ROOT / h.FIGURES_FILE, project / h.FIGURES_FILE)
    (project / h.LEDGER_DATA / "figures.toml").write_text('"98:value" = ["98", "value", \' (\\d+)\']\n')
    first = project / "notebooks" / "py" / "98_first.py"
    first.write_text("# %% [markdown]\n# # 98 · First\n\n# %%\nprint('value', 41)\n")
    (project / "notebooks" / "py" / f"{NAME}.py").write_text(TWIN + "\n# %%\nprint('the first notebook printed 41')\n")
    assert run_refresh(project, "--all", "--root", project).returncode == 0
    ipynb, _ = paths(project)
    assert h.load(ipynb)["metadata"][h.STAMP_KEY]["figures"] == {"98:value": "41"} and h.stamp_problems(ipynb) == []
    untouched = run_refresh(project, "--stale", "--root", project)
    assert untouched.returncode == 0 and "no stale notebook" in untouched.stdout, untouched.stdout + untouched.stderr
    first.write_text(first.read_text().replace("41", "42"))  # 98's code changes, and so does its figure
    before = ipynb.read_bytes()
    listed = run_refresh(project, "--stale", "--list", "--root", project)  # names them, runs nothing
    assert listed.returncode == 0 and "98_first is stale" in listed.stdout, listed.stdout + listed.stderr
    assert ipynb.read_bytes() == before
    result = run_refresh(project, "--stale", "--root", project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "98_first is stale" in result.stdout and f"{NAME} is stale" in result.stdout, result.stdout
    assert "2 refreshed, 0 failed" in result.stdout and all_problems(project) == []


ERROR = {"output_type": "error", "ename": "ValueError", "evalue": "boom", "traceback": []}
STORED = "cell 3 stores an error output (ValueError: boom)"
OUTPUT_WIDGET = {"model_name": "OutputModel", "state": {"outputs": [ERROR]}}  # where interact keeps what it caught


def third(**change):  # the notebook's third cell (its second code cell), changed
    return lambda nb: code_cells(nb)[1].update(**change)


def no_stamp(nb):
    nb["metadata"].pop(h.STAMP_KEY)


#: a stored notebook broken in one way -> the check that flags it, and what it says
BROKEN_NOTEBOOK = {
    "code edited": (third(source="print(2)"), h.stamp_problems, "code cells changed"),
    "no stamp": (no_stamp, h.stamp_problems, "has no refresh stamp"),
    "no stamp, no profile": (no_stamp, h.execution_problems, "not refreshed in the full profile"),
    "quick": (lambda nb: nb["metadata"][h.STAMP_KEY].update(profile="quick"), h.execution_problems, "profile: quick"),
    "count cleared": (third(execution_count=None), h.execution_problems, "cell 3 has never been executed"),
    "count out of order": (third(execution_count=7), h.execution_problems, "cell 3 has execution_count 7, expected 2"),
    "error": (lambda nb: code_cells(nb)[1]["outputs"].append(ERROR), h.execution_problems, STORED),
    "error in an Output widget": (
        lambda nb: nb["metadata"]["widgets"][h.WIDGET_STATE]["state"].update(abcdef0123=OUTPUT_WIDGET),
        h.execution_problems,
        "widget abcdef01 (an Output widget, e.g. of interact) stores an error output (ValueError",
    ),
}


@pytest.mark.parametrize("how", BROKEN_NOTEBOOK)
def test_a_broken_stored_notebook_is_flagged(project, how):
    change, check, says = BROKEN_NOTEBOOK[how]
    ipynb, _ = paths(project)
    edit(ipynb, change)
    assert_flags(check(ipynb), says)


#: helpers.py (which the notebook imported) or a module beside it, rewritten (None: deleted) -> what the stamp says
MODULE_EDITS = {
    "code changed": ("helpers.py", "def double(x):\n    return x + x\n", "transformer_nb/helpers.py changed"),
    "deleted": ("helpers.py", None, "transformer_nb/helpers.py, which no longer exists"),
    "comments, docstrings, layout": (
        "helpers.py",
        '"""Helpers."""\n\n\ndef double( x ):  # twice\n    """Twice x."""\n\n    return 2*x\n',
        None,
    ),
    "a module it never imported": ("other.py", "def triple(x):\n    return 3 * x\n", None),
}


@pytest.mark.parametrize("how", MODULE_EDITS)
def test_a_code_edit_to_a_module_it_ran_stales_the_notebook_and_nothing_else_does(project, how):
    name, text, says = MODULE_EDITS[how]
    module = project / "transformer_nb" / name
    module.unlink() if text is None else module.write_text(text)
    problems = h.stamp_problems(paths(project)[0])
    if says:
        assert_flags(problems, says)
    else:
        assert problems == []


SHOWN_ERRORS = {
    "showtraceback": "try:\n    1 / 0\nexcept ZeroDivisionError:\n    get_ipython().showtraceback()\n",
    "interact": "import ipywidgets\nipywidgets.interact(lambda x: 1 / x, x=ipywidgets.fixed(0))\n",
    "print_exc": "import traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    traceback.print_exc()\n",
    "logging": "import logging\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    logging.exception('failed')\n",
    "thread": "import threading\nt = threading.Thread(target=lambda: 1 / 0)\nt.start()\nt.join()\n",
}


#: how each way of SHOWN_ERRORS is named in the refresh's failure ({cell}: its cell's number in the notebook)
SHOWN_AS = {
    "showtraceback": "cell {cell} stores an error output (ZeroDivisionError: division by zero)",
    "interact": "(an Output widget, e.g. of interact) stores an error output (ZeroDivisionError: division by zero)",
    "print_exc": "cell {cell} stores an error output (a traceback printed to stderr, ending 'ZeroDivisionError",
    "logging": "cell {cell} stores an error output (a traceback printed to stderr, ending 'ZeroDivisionError",
    "thread": "cell {cell} stores an error output (a traceback printed to stderr, ending 'ZeroDivisionError",
}


@pytest.fixture(scope="module")
def shown_errors(refreshed, tmp_path_factory):
    """One refresh of a copy whose twin ends with one cell per way of SHOWN_ERRORS (one kernel for all five):
    ``(result, {how: its cell's number}, notebook path, its bytes before)``."""
    project = tmp_path_factory.mktemp("shown") / "p"
    shutil.copytree(refreshed, project)
    ipynb, twin = paths(project)
    before = ipynb.read_bytes()
    first = len(json.loads(before)["cells"]) + 1
    cells = {how: first + k for k, how in enumerate(sorted(SHOWN_ERRORS))}
    twin.write_text(TWIN + "".join(f"\n# %%\n{SHOWN_ERRORS[how]}" for how in cells))
    return run_refresh(project, twin), cells, ipynb, before


@pytest.mark.parametrize("how", sorted(SHOWN_ERRORS))
def test_an_error_shown_without_raising_fails_the_refresh_and_keeps_the_stored_notebook(shown_errors, how):
    """An error reported without raising -- showtraceback() in an except block (ipywidgets interact does
    this), a traceback printed by traceback.print_exc() or logging.exception(), or an exception raised in
    a thread -- fails the refresh, naming its cell, before anything is written."""
    result, cells, ipynb, before = shown_errors
    assert result.returncode == 1, result.stdout + result.stderr
    assert SHOWN_AS[how].format(cell=cells[how]) in result.stderr, result.stderr
    assert f"{NAME} FAILED" in result.stderr and "stored notebook is unchanged" in result.stderr
    assert ipynb.read_bytes() == before
    assert not [p.name for p in ipynb.parent.iterdir() if p.name.endswith(".tmp")]
