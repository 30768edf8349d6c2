"""`make doctor` (transformer_nb.doctor): a good set-up passes with exit code 0; each way of breaking it (no
WikiText-2, an ipywidgets older than the companion needs, an unwritable model cache, an environment variable the
package refuses) gets the package's own message and the command that fixes it; the minimums come from
pyproject.toml."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_nb import doctor, env
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
    lines = []
    return doctor.diagnose(out=lines.append), "\n".join(lines)


@pytest.mark.skipif(not _has_data(), reason="WikiText-2 not found: set TNB_DATA_DIR or provide ../shared/data")
def test_a_good_setup_passes_with_exit_code_0(tmp_path):
    env = {**os.environ, "TNB_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "transformer_nb.doctor"], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    for what in ("Python", "torch", r"\[notebook\] jupyterlab", r"\[test\] pytest", "device", "WikiText-2", "model"):
        assert re.search(rf"^ok +{what}", run.stdout, flags=re.M | re.I), (what, run.stdout)
    assert "sha256 verified" in run.stdout and "nbval" in run.stdout
    assert run.stdout.rstrip().endswith("doctor: everything the companion needs is here")


def test_no_data_says_where_it_looked_and_names_the_command_that_fetches_it(tmp_path, monkeypatch):
    problems, out = _run(monkeypatch, TNB_DATA_DIR=str(tmp_path / "empty"), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    [(what, fix)] = problems
    assert what.startswith("data: FileNotFoundError: WikiText-2 not found. Looked at, in order:")
    assert f"TNB_DATA_DIR={tmp_path / 'empty'}" in what and str(tmp_path / "xdg") in what
    assert "find_data_dir()" in fix and "TNB_DATA_DIR" in fix


@pytest.mark.parametrize(
    "variable, value, package_check",
    [
        ("TNB_OFFLINE", "maybe", lambda: env.env_flag("TNB_OFFLINE")),
        ("TNB_RETRAIN", "2", lambda: env.env_flag("TNB_RETRAIN")),
        ("TNB_PROFILE", "fast", env.profile),
        ("TNB_DEVICE", "cuda:9", env.get_device),
    ],
)
def test_an_environment_variable_the_package_refuses_is_a_problem_with_the_package_s_message(
    monkeypatch, tmp_path, variable, value, package_check
):
    problems, _ = _run(monkeypatch, TNB_CACHE_DIR=str(tmp_path), **{variable: value})
    with pytest.raises(ValueError) as refused:
        package_check()
    assert len(problems) == 1 and str(refused.value) in problems[0][0], problems


def test_an_old_ipywidgets_names_the_pip_command_and_a_missing_nbval_is_a_note(monkeypatch, tmp_path):
    real = doctor.installed
    monkeypatch.setattr(doctor, "installed", lambda p: {"ipywidgets": "7.6.5", "nbval": None}.get(p, real(p)))
    problems, out = _run(monkeypatch, TNB_CACHE_DIR=str(tmp_path))
    need = re.search(r'"ipywidgets>=([\d.]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    [(what, fix)] = problems  # the missing nbval (an extra) is no problem
    assert "ipywidgets 7.6.5" in what and what.endswith(f'needs "ipywidgets>={need}"')
    assert fix == f'{sys.executable} -m pip install "ipywidgets>={need}"'
    assert re.search(r"^-- +\[test\] .*nbval missing.*; needs .*nbval>=", out, flags=re.M)


def test_an_unwritable_cache_names_the_variable_that_moves_it(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    problems, _ = _run(monkeypatch, TNB_CACHE_DIR=str(blocker / "cache"))
    [(what, fix)] = problems
    assert what.startswith("cache: ") and str(blocker) in what and fix.startswith("export TNB_CACHE_DIR=")


def test_the_minimums_are_the_ones_pyproject_states_compared_by_release_numbers():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for extra in (None, "notebook", "test"):
        found, wrong = doctor.versions(extra)
        assert found and wrong == []
        for name in (f.split()[0] for f in found):
            assert re.search(rf'"{re.escape(name)}>=[\d.]+"', text), name
    assert [f.split()[0] for f in doctor.versions()[0]] == ["torch", "numpy", "matplotlib", "ipywidgets", "tqdm"]
    assert doctor.release("2.13.0+cpu") == (2, 13, 0) and doctor.release("8.1.9") > doctor.release("7.7.1")
    assert doctor.release("7.10") > doctor.release("7.7.1") and doctor.release("0.11.0") >= doctor.release("0.11")


def test_a_package_that_does_not_import_is_a_problem_not_a_traceback(monkeypatch):
    def broken():
        raise ImportError("libcudart.so.12: cannot open shared object file")

    monkeypatch.setattr(doctor, "checks", broken)
    problems, out = _run(monkeypatch)
    assert [what for what, _ in problems] == ["import: ImportError: libcudart.so.12: cannot open shared object file"]
    assert out.endswith("doctor: 1 problem(s)")
