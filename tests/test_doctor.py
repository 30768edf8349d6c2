"""`make doctor` (transformer_nb.doctor): a good set-up passes with exit code 0; each way of breaking it (no
WikiText-2, an ipywidgets older than the companion needs, an unwritable model cache) gets its own message
and the command that fixes it; the minimums come from pyproject.toml; nothing in the core imports it."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_nb import doctor
from transformer_nb.wikitext_files import find_data_dir

ROOT = Path(__file__).resolve().parents[1]


def _has_data() -> bool:
    try:
        find_data_dir(download=False)
    except FileNotFoundError:
        return False
    return True


def _run(monkeypatch, **env) -> tuple[list, str]:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(doctor, "_lecture", lambda report, data_ok: data_ok)  # loading models is not tested here
    lines = []
    return doctor.diagnose(out=lines.append), "\n".join(lines)


@pytest.mark.skipif(not _has_data(), reason="WikiText-2 not found: set TNB_DATA_DIR or provide ../shared/data")
def test_a_good_setup_passes_with_exit_code_0(tmp_path):
    env = {**os.environ, "TNB_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "transformer_nb.doctor"], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    for what in ("Python", "torch", "ipywidgets", "jupyterlab", "nbval", "device", "WikiText-2", "model cache"):
        assert re.search(rf"^ok +{what}", run.stdout, flags=re.M | re.I), (what, run.stdout)
    assert "sha256 verified" in run.stdout and "notebooks that run as they are" in run.stdout
    assert run.stdout.rstrip().endswith("doctor: everything the companion needs is here")


def test_no_data_names_the_command_that_fetches_it(tmp_path, monkeypatch):
    problems, out = _run(monkeypatch, TNB_DATA_DIR=str(tmp_path / "empty"), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert [what for what, _ in problems] == [f"WikiText-2: not found (TNB_DATA_DIR={tmp_path / 'empty'})"]
    assert "find_data_dir()" in problems[0][1] and "TNB_DATA_DIR" in problems[0][1]
    assert "10-12: only online" in out


def test_an_old_ipywidgets_names_the_pip_command_that_upgrades_it(monkeypatch, tmp_path):
    real = doctor.installed
    monkeypatch.setattr(doctor, "installed", lambda p: "7.6.5" if p == "ipywidgets" else real(p))
    problems, out = _run(monkeypatch, TNB_CACHE_DIR=str(tmp_path))
    need = doctor.requirements()["ipywidgets"]
    assert problems[0] == (
        f"ipywidgets 7.6.5 is older than the companion needs (>= {need}, for the widgets (00-10, 14))",
        f'{sys.executable} -m pip install "ipywidgets>={need}"',
    )
    assert "00-09, 13: yes, without their widgets" in out


def test_an_unwritable_cache_names_the_variable_that_moves_it(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    problems, _ = _run(monkeypatch, TNB_CACHE_DIR=str(blocker / "cache"))
    assert [what.split(" (")[0] for what, _ in problems] == [f"model cache {blocker / 'cache'} is not writable"]
    assert problems[0][1].startswith("export TNB_CACHE_DIR=")


def test_a_missing_nbval_is_a_note_not_a_problem(monkeypatch, tmp_path):
    real = doctor.installed
    monkeypatch.setattr(doctor, "installed", lambda p: None if p == "nbval" else real(p))
    problems, out = _run(monkeypatch, TNB_CACHE_DIR=str(tmp_path))
    assert not [p for p in problems if "nbval" in p[0]] and "--   nbval: not installed" in out


def test_the_minimums_are_the_ones_pyproject_states():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    need = doctor.requirements()
    assert f'requires-python = ">={need["python"]}"' in text
    for package in doctor.PACKAGES:
        assert re.search(rf'"{package}>={re.escape(need[package])}"', text), package


def test_versions_compare_by_release_numbers():
    assert doctor.release("2.13.0+cpu") == (2, 13, 0) and doctor.release("8.1.9") > doctor.release("7.7.1")
    assert doctor.release("7.10") > doctor.release("7.7.1") and doctor.release("0.11.0") >= doctor.release("0.11")


def test_nothing_in_the_package_imports_the_doctor():
    users = [
        p.relative_to(ROOT)
        for p in (ROOT / "transformer_nb").rglob("*.py")
        if p.name != "doctor.py"
        and re.search(r"import doctor|transformer_nb\.doctor|from \. import doctor", p.read_text())
    ]
    assert users == []
