"""A code edit to a core module stales exactly the notebooks that run it (issue 35).

A notebook's refresh stamp records every ``transformer_nb`` module loaded when it ran, and a code edit to one of
them makes the notebook stale. So a notebook must load only what it runs: the first notebooks neither RoPE nor the
whole model, and attention is loaded by the notebooks that run attention and by no other.

Two witnesses of what a notebook loads:
- its twin's import statements, run where no package module is loaded yet (what the notebook loads before it
  runs anything);
- the stored stamps, in a copy of the project where the module was edited: the notebooks the harness then finds
  stale because of that module (``tools/refresh.py --stale --list``). The stamps are rewritten when the notebooks
  are refreshed, so this one speaks for the last refresh.
"""

import ast
import json
import os
import shutil
import subprocess
import sys

import notebook_harness as harness
import pytest

ROOT = harness.ROOT
ALL = [p.stem[:2] for p in harness.twins_in(ROOT)]
ATTENTION, ROPE, MODEL = (f"transformer_nb/core/{m}.py" for m in ("attention", "rope", "transformer"))
#: The notebooks whose import statements load scaled dot-product attention: every one but the start page and the
#: claims ledger.
IMPORTS_ATTENTION = set(ALL) - {"00", "13"}
#: The notebooks that run it: those, and the start page (00), which lists every checker when it runs (its exercise
#: map and catalogue import them all), and the checkers compare answers with the package's attention.
RUNS_ATTENTION = IMPORTS_ATTENTION | {"00"}
#: Each notebook listed must not load the module (a code edit to it must leave the notebook fresh).
NEVER = {ROPE: {"01", "02", "03"}, MODEL: {"01", "02", "03", "04", "05"}}
#: Each notebook listed must load the module (its outputs depend on it).
ALWAYS = {ROPE: {"05", "10"}, MODEL: {"08", "09", "10"}}


def _twin(nb: str):
    return next(p for p in harness.twins_in(ROOT) if p.stem.startswith(nb))


def import_statements(nb: str) -> str:
    """The twin's ``transformer_nb`` import statements."""
    tree = ast.parse(_twin(nb).read_text(encoding="utf-8"))
    return "\n".join(
        ast.unparse(node)
        for node in ast.walk(tree)
        if (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == harness.PACKAGE)
        or (isinstance(node, ast.Import) and any(a.name.split(".")[0] == harness.PACKAGE for a in node.names))
    )


#: One interpreter imports the libraries once, then runs each notebook's import statements in a fork of itself (a
#: fresh ``transformer_nb`` each time) and prints the package files they loaded: 15 fresh interpreters cost 40 s.
FORKS = f"""
import json, os, sys, traceback
import torch, numpy, matplotlib.pyplot, ipywidgets, IPython
for nb, code in json.loads(sys.stdin.read()).items():
    sys.stdout.flush()
    if os.fork() == 0:
        try:
            exec(code, {{}})
            files = [m.__file__ for n, m in list(sys.modules.items()) if n.split(".")[0] == {harness.PACKAGE!r}]
            print(json.dumps([nb, files]))
        except BaseException:
            print(json.dumps([nb, traceback.format_exc()]))
        sys.stdout.flush()
        os._exit(0)
    os.wait()
"""


@pytest.fixture(scope="module")
def loaded() -> dict:
    """``{notebook: frozenset of the package files its imports load}``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    codes = json.dumps({nb: import_statements(nb) for nb in ALL})
    out = subprocess.run([sys.executable, "-c", FORKS], input=codes, cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    runs = dict(json.loads(line) for line in out.stdout.splitlines())
    fails = {nb: files for nb, files in runs.items() if isinstance(files, str)}
    assert not fails and set(runs) == set(ALL), f"these notebooks' imports fail: {fails}"
    return {nb: frozenset(harness.module_hashes(files, ROOT)) for nb, files in runs.items()}


def stale_after_editing(rel: str, tmp_path) -> set:
    """The notebooks that ``harness.stamp_problems`` finds stale because of ``rel``, in a copy of the project where
    one line of code was added to ``rel``."""
    (tmp_path / "notebooks").mkdir()
    for nb in harness.notebooks_in(ROOT):
        shutil.copy(nb, tmp_path / "notebooks" / nb.name)
    shutil.copytree(ROOT / harness.PACKAGE, tmp_path / harness.PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / rel, "a", encoding="utf-8") as f:
        f.write("\n_AN_EDIT = 1\n")
    stale = set()
    for nb in harness.notebooks_in(tmp_path):
        if any(f"code of {rel} changed" in p for p in harness.stamp_problems(nb)):
            stale.add(nb.stem[:2])
    return stale


@pytest.mark.parametrize("nb", ALL)
def test_a_notebook_imports_attention_only_if_it_runs_attention(loaded, nb):
    assert (ATTENTION in loaded[nb]) == (nb in IMPORTS_ATTENTION), (
        f"notebook {nb} {'runs' if nb in IMPORTS_ATTENTION else 'does not run'} attention, but its imports "
        f"{'do not load' if ATTENTION not in loaded[nb] else 'load'} {ATTENTION}"
    )


@pytest.mark.parametrize("rel", sorted(NEVER))
def test_the_first_notebooks_import_neither_rope_nor_the_whole_model(loaded, rel):
    assert not {nb for nb in NEVER[rel] if rel in loaded[nb]}, f"these notebooks' imports load {rel}"
    assert {nb for nb in ALWAYS[rel] if rel not in loaded[nb]} == set(), f"these notebooks run {rel}"


def test_an_edit_to_attention_stales_exactly_the_notebooks_that_run_it(tmp_path):
    stale = stale_after_editing(ATTENTION, tmp_path)
    assert stale == RUNS_ATTENTION, (
        f"stale but not running attention: {sorted(stale - RUNS_ATTENTION)}; "
        f"running attention but left fresh: {sorted(RUNS_ATTENTION - stale)}"
    )


@pytest.mark.parametrize("rel", sorted(NEVER))
def test_an_edit_to_rope_or_the_model_stales_none_of_the_first_notebooks(tmp_path, rel):
    stale = stale_after_editing(rel, tmp_path)
    assert not stale & NEVER[rel], f"a code edit to {rel} stales {sorted(stale & NEVER[rel])}"
    assert ALWAYS[rel] <= stale, f"a code edit to {rel} leaves {sorted(ALWAYS[rel] - stale)} fresh"
