"""`make install`'s recipe, run against a fake venv whose python and uv only log their arguments: uv (a pinned
release) when `pip install uv==...` works, pip otherwise or with INSTALLER=pip; torch first (TORCH_SPEC,
TORCH_INDEX_URL), then requirements.lock (hashes required), then the package; LOCKED= (make install-latest) skips
the lock; no `.installed` marker after a failed install. And the lock pins what pyproject.toml asks for."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CUDA = "https://download.pytorch.org/whl/cu126"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")

# The fake python: `-m pip install --target DIR uv==VERSION` makes DIR/bin/uv (a logger exiting $FAKE_UV_RC) unless
# $FAKE_NO_UV; tools/uv_args.py runs for real; any other call is logged and succeeds.
FAKE_PYTHON = """#!/bin/bash
echo "python $*" >> "$FAKE_LOG"
if [[ "$1" == tools/uv_args.py ]]; then exec {python} "$@"; fi
if [[ "$*" == *"--target "*" uv=="* ]]; then
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
    cmd = ["make", "--no-print-directory", "install", f"VENV={venv}", f"UV_DIR={tmp_path / 'uv'}", *args]
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "FAKE_LOG": str(log), **env}
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    return run, log.read_text().splitlines(), venv / ".installed"


def installs(calls: list[str]) -> list[str]:
    return [c for c in calls if " install " in c and "--target" not in c]


def test_uv_installs_torch_from_its_index_then_the_package(tmp_path):
    run, calls, marker = make_install(tmp_path, f"TORCH_INDEX_URL={CUDA}", "TORCH_SPEC=torch")
    assert run.returncode == 0 and "install: with uv" in run.stdout, run.stderr
    assert any(c.endswith(" --target " + str(tmp_path / "uv") + " uv==0.13.9") for c in calls)  # a pinned uv
    torch, lock, package = installs(calls)
    assert lock.startswith("uv pip install") and lock.endswith(" --require-hashes -r requirements.lock")
    assert torch.startswith("uv pip install") and f"--index-url {CUDA}" in torch and torch.endswith(" torch")
    assert "--index-strategy unsafe-best-match" in torch
    assert "--compile-bytecode" in torch and "--compile-bytecode" in package  # like pip: .pyc files at install
    assert package.startswith("uv pip install") and CUDA not in package and package.endswith("--no-deps -e .[test]")
    assert marker.exists()


def test_install_latest_skips_the_lock(tmp_path):
    run, calls, marker = make_install(tmp_path, "LOCKED=")
    assert run.returncode == 0, run.stderr
    torch, package = installs(calls)
    assert "--no-deps" not in package and package.endswith(" -e .[test]")


def test_failed_uv_install_leaves_no_marker(tmp_path):
    run, calls, marker = make_install(tmp_path, FAKE_UV_RC="1")
    assert run.returncode != 0 and len(installs(calls)) == 1 and not marker.exists()  # stopped after torch


def test_without_a_uv_wheel_pip_installs_and_says_so(tmp_path):
    run, calls, marker = make_install(tmp_path, FAKE_NO_UV="1")
    assert run.returncode == 0 and "install: with pip (`pip install uv` failed)" in run.stdout, run.stderr
    torch, lock, package = installs(calls)
    assert torch.startswith("python -m pip install") and torch.endswith(" torch==2.13.0")
    assert lock.endswith(" --require-hashes -r requirements.lock") and package.endswith("--no-deps -e .[test]")
    assert marker.exists()


def test_installer_pip_forces_pip_with_the_torch_index(tmp_path):
    run, calls, marker = make_install(tmp_path, "INSTALLER=pip", f"TORCH_INDEX_URL={CUDA}")
    assert run.returncode == 0 and "install: with pip\n" in run.stdout and not any("--target" in c for c in calls)
    torch, lock, package = installs(calls)
    assert torch.startswith("python -m pip install") and f"--index-url {CUDA}" in torch
    assert CUDA not in lock and package.startswith("python -m pip install") and CUDA not in package
    assert marker.exists()


def test_unknown_installer_is_refused_before_installing(tmp_path):
    run, calls, marker = make_install(tmp_path, "INSTALLER=conda")
    assert run.returncode != 0 and "INSTALLER=conda: auto (uv when it installs, else pip) or pip" in run.stderr
    assert calls == [] and not marker.exists()


def test_the_lock_pins_with_hashes_every_dependency_pyproject_names_but_torch():
    import tomllib
    from packaging.markers import Marker

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    lock = (ROOT / "requirements.lock").read_text(encoding="utf-8")
    pins = dict(re.findall(r"^([a-z0-9_.-]+)==(\S+) \\\n\s+--hash=sha256:", lock, flags=re.M))
    assert "torch" not in pins  # TORCH_SPEC installs torch: the CPU or CUDA build the user chose
    for line in wanted:
        if ";" in line and not Marker(line.split(";", 1)[1].split("#")[0]).evaluate():
            continue  # e.g. tomli before Python 3.11: not for this interpreter, which the lock was made for
        name, minimum = re.match(r"([A-Za-z0-9_.-]+)(?:\[.*\])?\s*(?:>=\s*([0-9.]+))?", line).groups()
        if name in ("torch", "transformer-nb"):
            continue
        assert name.lower() in pins, f"{name} is not in requirements.lock: run `make lock`"
        have = tuple(int(x) for x in re.match(r"[0-9.]+", pins[name.lower()]).group(0).strip(".").split("."))
        assert have >= tuple(int(x) for x in minimum.split(".")), f"the lock's {name} is older than pyproject's"
