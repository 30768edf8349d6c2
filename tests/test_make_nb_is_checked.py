"""`make refresh|slides|solutions NB=...`: NB must name notebooks; nothing in it reaches a shell. Run against a fake
installed venv whose python only logs its arguments."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def make(tmp_path: Path, target: str, nb: str | None) -> tuple[subprocess.CompletedProcess, str]:
    """`make TARGET NB=nb` with a fake venv (its marker newer than pyproject.toml and the lock): (the run, the log)."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    python = venv / "bin" / "python"
    python.write_text('#!/bin/bash\necho "python $*" >> "$FAKE_LOG"\nexit 1\n')  # a failing tool, as refresh.py
    python.chmod(0o755)
    (venv / ".installed").touch()
    log = tmp_path / "log"
    log.touch()
    cmd = ["make", "--no-print-directory", "-C", str(ROOT), target, f"VENV={venv}", *([f"NB={nb}"] * (nb is not None))]
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "FAKE_LOG": str(log)}
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
    return run, log.read_text()


@pytest.mark.parametrize("target", ["refresh", "slides", "solutions"])
@pytest.mark.parametrize(
    "nb", ["bogus || touch {x}", "`touch {x}`", "$(touch {x})", "$(shell touch {x})", "a;touch {x}"]
)
def test_nb_that_is_not_a_notebook_is_refused_and_never_run(tmp_path, target, nb):
    marker = tmp_path / "X"
    run, log = make(tmp_path, target, nb.format(x=marker))
    assert run.returncode == 2
    assert "is not a notebook; name one of 00_start_here" in run.stderr
    assert not marker.exists()
    assert log == ""  # no tool ran


@pytest.mark.parametrize("target", ["refresh", "slides"])
def test_refresh_and_slides_need_a_notebook(tmp_path, target):
    run, log = make(tmp_path, target, None)
    assert run.returncode == 2 and f"usage: make {target} NB=01_scaled_attention" in run.stderr
    assert log == ""


def test_a_notebook_named_any_usual_way_reaches_the_tool_as_its_name(tmp_path):
    run, log = make(tmp_path, "refresh", "notebooks/01_scaled_attention.ipynb notebooks/py/02_masking.py 05_rope")
    assert log == "python tools/refresh.py 01_scaled_attention 02_masking 05_rope\n"
    run, log = make(tmp_path / "s", "solutions", "")
    assert log.strip() == "python tools/solutions.py"
