"""tools/gpu_check.py: every step is recorded (passed, failed, timed out), per test file and notebook, with the
benchmarks' figures, and the report is written even when a step fails or the GPU is missing."""

import json
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import gpu_check

PY = sys.executable
# The check's own environment must not leak into the runs below (in `make gpu-check` these tests run under it).
CLEAN = {"GPU_CHECK_RESULTS": "", "PYTEST_XDIST_WORKER": ""}
TESTS = """
import pytest
def test_ok(): pass
def test_bad(): assert 1 == 2
@pytest.mark.skip(reason="x")
def test_skipped(): pass
"""


def fake_run(tmp_path, monkeypatch, steps, machine, dry=True, budget=60.0):
    """``gpu_check.run`` with ``steps`` instead of its plan, no install, and a probe that prints ``machine``."""
    for k in CLEAN:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(gpu_check, "install_steps", lambda *a: [])
    monkeypatch.setattr(gpu_check, "PROBE", f"import json; print(json.dumps({machine!r}))")
    monkeypatch.setattr(gpu_check, "plan", lambda *a: ([[s] for s in steps], {"notebooks-full": "why not"}))
    out = tmp_path / "out"
    rc = gpu_check.run(out, tmp_path / "kit", dry, budget, work=tmp_path / "work", python=PY)
    return rc, json.loads((out / "report.json").read_text()), (out / "report.md").read_text(), out


def test_a_failing_step_is_recorded_and_every_later_step_still_runs_and_reports(tmp_path, monkeypatch):
    (tmp_path / "test_demo.py").write_text(TESTS)
    results = tmp_path / "work" / "tests.jsonl"
    pytest_argv = [PY, "-m", "pytest", "-q", "-p", "gpu_check", "-p", "no:cacheprovider", "--rootdir", str(tmp_path)]
    tools = {"PYTHONPATH": str(gpu_check.ROOT / "tools"), "GPU_CHECK_RESULTS": str(results)}
    steps = [
        gpu_check.Step(
            "tests", [*pytest_argv, str(tmp_path / "test_demo.py")], 60, "pytest", tools, ["tests/test_never_ran.py"]
        ),
        gpu_check.Step("bench-demo", [PY, "-c", "print('warming up'); print('{\"tokens_per_s\": 12.5}')"], 30, "bench"),
        gpu_check.Step("slow", [PY, "-c", "import time; time.sleep(60)"], 1),
    ]
    rc, report, md, out = fake_run(tmp_path, monkeypatch, steps, {"python": "3.12", "cuda_available": False})
    assert rc == 1 and report["passed"] is False
    status = {s["name"]: s["status"] for s in report["steps"]}
    assert status == dict(venv="passed", probe="passed", tests="failed", **{"bench-demo": "passed"}, slow="timed out")
    demo = report["test_files"]["test_demo.py"]  # node ids are relative to pytest's rootdir
    assert (demo["passed"], demo["failed"], demo["skipped"], demo["status"]) == (1, 1, 1, "failed")
    assert demo["failures"] == ["test_demo.py::test_bad"]
    assert report["test_files"]["tests/test_never_ran.py"]["status"] == "not run"
    assert report["benchmarks"] == {"demo": {"tokens_per_s": 12.5}}
    assert report["machine"]["python"] == "3.12" and report["skipped_steps"] == {"notebooks-full": "why not"}
    for key in ("mode", "started", "seconds", "commit", "notebooks", "deselected"):
        assert key in report
    assert "NOT PASSED" in md and "| slow | timed out |" in md and "test_bad` failed" in md
    assert "===== slow: timed out" in (out / "log.txt").read_text()


def test_without_a_cuda_gpu_the_check_stops_after_the_probe_and_says_why(tmp_path, monkeypatch):
    never = gpu_check.Step("never", [PY, "-c", "raise SystemExit('must not run')"], 10)
    rc, report, md, _ = fake_run(tmp_path, monkeypatch, [never], {"cuda_available": False}, dry=False)
    assert rc == 1 and [s["name"] for s in report["steps"]] == ["venv", "probe"]
    assert report["skipped_steps"]["the rest"] == "torch sees no CUDA GPU"
    assert "torch sees no CUDA GPU" in md


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has ended; only its exit status waits to be collected


def test_a_step_past_its_limit_is_stopped_with_its_children(tmp_path):
    # Like an nbval kernel: a child process that would outlive the step if only the step's own process ended.
    child = (
        "import subprocess, sys, time; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print('child', p.pid, flush=True); time.sleep(60)"
    )
    t0 = time.monotonic()
    rec = gpu_check.run_step(gpu_check.Step("hang", [PY, "-c", child], 1), tmp_path)
    assert rec["status"] == "timed out" and rec["returncode"] is None
    assert time.monotonic() - t0 < 20
    log = (tmp_path / "hang.log").read_text()
    assert "stopped after its limit of 1 s" in log
    pid = int(log.split("child ", 1)[1].split()[0])
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid)


def test_the_deadline_shortens_a_step_limit(tmp_path):
    rec = gpu_check.run_step(gpu_check.Step("quick", [PY, "-c", "pass"], 300), tmp_path, time.monotonic() + 30)
    assert rec["status"] == "passed" and rec["limit_s"] <= 30


@pytest.mark.parametrize("flag", ["--budget=0", "--budget=-5"])
def test_a_budget_that_is_not_positive_is_refused(flag, capsys):
    with pytest.raises(SystemExit):
        gpu_check.main(["run", "--out", os.devnull, flag])
    assert "--budget must be positive" in capsys.readouterr().err
