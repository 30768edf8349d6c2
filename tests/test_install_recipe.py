"""`make install`'s recipe, run against a fake venv whose python and uv only log their arguments: uv when
`pip install uv` works, pip otherwise or with INSTALLER=pip; torch first (TORCH_SPEC, TORCH_INDEX_URL), then the
package; no `.installed` marker after a failed install."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CUDA = "https://download.pytorch.org/whl/cu126"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")

# The fake python: `-m pip install --target DIR uv` makes DIR/bin/uv (a logger exiting $FAKE_UV_RC) unless
# $FAKE_NO_UV; tools/uv_args.py runs for real; any other call is logged and succeeds.
FAKE_PYTHON = """#!/bin/bash
echo "python $*" >> "$FAKE_LOG"
if [[ "$1" == tools/uv_args.py ]]; then exec {python} "$@"; fi
if [[ "$*" == *"--target "*" uv" ]]; then
  [[ -n "${{FAKE_NO_UV:-}}" ]] && exit 1
  all="$*"; target="${{all##*--target }}"; target="${{target%% *}}"; mkdir -p "$target/bin"
  printf '#!/bin/bash\\necho "uv $*" >> "$FAKE_LOG"\\nexit ${{FAKE_UV_RC:-0}}\\n' > "$target/bin/uv"
  chmod +x "$target/bin/uv"
fi
"""


def make_install(tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess, list[str], Path]:
    """`make install` into a fake venv under tmp_path: (the run, the logged calls, the marker's path)."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(FAKE_PYTHON.format(python=sys.executable))
    python.chmod(0o755)
    log = tmp_path / "log"
    log.touch()
    run = subprocess.run(
        ["make", "--no-print-directory", "install", f"VENV={venv}", f"UV_DIR={tmp_path / 'uv'}", *args],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "FAKE_LOG": str(log), **env},
        capture_output=True,
        text=True,
    )
    return run, log.read_text().splitlines(), venv / ".installed"


def installs(calls: list[str]) -> list[str]:
    return [c for c in calls if " install " in c and "--target" not in c]


def test_uv_installs_torch_from_its_index_then_the_package(tmp_path):
    run, calls, marker = make_install(tmp_path, f"TORCH_INDEX_URL={CUDA}", "TORCH_SPEC=torch")
    assert run.returncode == 0, run.stderr
    assert "install: with uv" in run.stdout
    torch, package = installs(calls)
    assert torch.startswith("uv pip install") and f"--index-url {CUDA}" in torch and torch.endswith(" torch")
    assert "--index-strategy unsafe-best-match" in torch
    assert "--compile-bytecode" in torch and "--compile-bytecode" in package  # like pip: .pyc files at install
    assert package.startswith("uv pip install") and CUDA not in package and package.endswith("-e .[test]")
    assert marker.exists()


def test_failed_uv_install_leaves_no_marker(tmp_path):
    run, calls, marker = make_install(tmp_path, FAKE_UV_RC="1")
    assert run.returncode != 0
    assert len(installs(calls)) == 1  # stopped after torch
    assert not marker.exists()


def test_without_a_uv_wheel_pip_installs_and_says_so(tmp_path):
    run, calls, marker = make_install(tmp_path, FAKE_NO_UV="1")
    assert run.returncode == 0, run.stderr
    assert "install: with pip (`pip install uv` failed)" in run.stdout
    torch, package = installs(calls)
    assert torch.startswith("python -m pip install") and torch.endswith(" torch==2.13.0")
    assert package.endswith("-e .[test]")
    assert marker.exists()


def test_installer_pip_forces_pip_with_the_torch_index(tmp_path):
    run, calls, marker = make_install(tmp_path, "INSTALLER=pip", f"TORCH_INDEX_URL={CUDA}")
    assert run.returncode == 0, run.stderr
    assert "install: with pip\n" in run.stdout
    assert not any("--target" in c for c in calls)
    torch, package = installs(calls)
    assert torch.startswith("python -m pip install") and f"--index-url {CUDA}" in torch
    assert package.startswith("python -m pip install") and CUDA not in package
    assert marker.exists()


def test_unknown_installer_is_refused_before_installing(tmp_path):
    run, calls, marker = make_install(tmp_path, "INSTALLER=conda")
    assert run.returncode != 0
    assert "INSTALLER=conda: auto (uv when it installs, else pip) or pip" in run.stderr
    assert calls == [] and not marker.exists()
