"""The suite on an offline GPU machine, in one go: ``make gpu-wheels`` here, then ``make gpu-check OUT=DIR`` there.

    python tools/gpu_check.py wheels [--kit build/gpu-kit]
    python tools/gpu_check.py run --out DIR [--kit build/gpu-kit] [--dry-run] [--budget S]

``wheels`` (needs the network) fills the kit folder, which travels with the working tree (33 MiB): the wheels
of the notebook and test stack for Linux x86-64, CPython 3.12 (``kit/wheels``; not numpy, matplotlib or torch: the
GPU machine has them; 21 MiB) and a copy of WikiText-2 (``kit/data``, from ``TNB_DATA_DIR``; 13 MiB).

``run`` makes a venv of the Python that runs it (``--system-site-packages``, plus that Python's own site-packages
when it is itself a venv, so the machine's torch is used), installs what is missing from the kit's wheels with no
index, then runs, each step under its own time limit and all inside ``--budget`` seconds (default 470):
the unit tests and every notebook under nbval in the quick profile (one pytest-xdist session), beside them
notebooks 09 and 10 in the full profile, then the reversal, LM and KV-cache benchmarks, all on CUDA
(``TNB_DEVICE=cuda``). ``--dry-run`` forces the CPU and the quick profile and runs a subset (a few test files, two
notebooks, the benchmarks at tiny sizes) to prove the plumbing in CI. The report (``report.md``, ``report.json``:
pass/fail and seconds per test file and notebook, the GPU, torch and CUDA versions, the benchmarks' figures) and the
steps' output (``log.txt``) go to ``--out``; the report is rewritten after every step, so a step that fails, hangs
or is killed still leaves one. The exit status is 0 only when every step passed.

The module is also a pytest plugin (``-p gpu_check``, with ``tools/`` on ``PYTHONPATH``): with ``GPU_CHECK_RESULTS``
set, the controlling process appends one JSON line per test phase to that file as the tests finish.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "build" / "gpu-kit"
WORK = ROOT / "build" / "gpu-check-work"
# What the GPU machine lacks (it has torch, numpy and matplotlib); the versions are pyproject.toml's test extra.
REQUIREMENTS = [
    "pytest>=8.4",
    "pytest-xdist>=3.8",
    "nbval>=0.11",
    "hypothesis>=6.100",
    "nbclient>=0.9",
    "nbformat",
    "ipykernel>=6.25",
    "jupyter_client",
    "ipywidgets>=7.7.1",
    "jupytext>=1.16",
    "tqdm>=4.65",
]
PLATFORMS = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64", "manylinux_2_34_x86_64"]
KIT_LIMIT_MB = 40  # the device tool carries 64 MiB in all, the repository included
NBVAL = ["--nbval-lax", "--nbval-current-env", "--nbval-sanitize-with=tests/nbval_sanitize.cfg"]
# Not run there, and why: artefacts of a machine that holds only the kit's packages.
DESELECT = {
    "tests/test_doctor.py::test_a_good_setup_passes_with_exit_code_0": "wants JupyterLab, which the kit does not carry"
}
DRY_TESTS = [
    "tests/test_profile_setup_validates_environment.py",
    "tests/test_reversal_devices.py",
    "tests/test_lm_devices.py",
    "tests/test_tied_adaptive_embedding_under_autocast.py",
]
DRY_NOTEBOOKS = ["notebooks/00_start_here.ipynb", "notebooks/01_scaled_attention.ipynb"]
FULL_NOTEBOOKS = ["notebooks/09_reversal_translation.ipynb", "notebooks/10_wikitext_lm.ipynb"]


# --------------------------------------------------------------------------- the pytest plugin


def pytest_runtest_logreport(report):
    _record({"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome, "seconds": report.duration})


def pytest_collectreport(report):
    if report.failed:
        _record({"nodeid": report.nodeid, "when": "collect", "outcome": "failed", "seconds": 0.0})


def _record(entry: dict) -> None:
    path = os.environ.get("GPU_CHECK_RESULTS")
    if path and not os.environ.get("PYTEST_XDIST_WORKER"):  # xdist: the controller sees every worker's reports
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


# --------------------------------------------------------------------------- steps


@dataclass
class Step:
    """One command of the check. ``kind``: ``pytest`` (its results are recorded per file), ``bench`` (its last line
    is a JSON object of figures) or ``cmd``. ``files``: what a pytest step should report on (missing: not run)."""

    name: str
    argv: list[str]
    timeout: float
    kind: str = "cmd"
    env: dict = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    profile: str = "quick"


def _kill(proc: subprocess.Popen) -> None:
    """End the step's whole process group (nbval's kernels, xdist's workers), politely first."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_step(step: Step, logs: Path, deadline: float = float("inf")) -> dict:
    """Run ``step`` (its output into ``logs/NAME.log``) until it ends or its time limit passes; never raises for
    what the command does. Returns the step's record: status ``passed``, ``failed`` or ``timed out``."""
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{step.name}.log"
    limit = max(1.0, min(step.timeout, deadline - time.monotonic()))
    env = {**os.environ, **step.env}
    t0 = time.monotonic()
    with open(log, "w", encoding="utf-8") as out:
        out.write("$ " + " ".join(step.argv) + "\n")
        out.flush()
        try:
            proc = subprocess.Popen(
                step.argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        except OSError as e:
            out.write(f"could not start: {e}\n")
            return _record_of(step, "failed", None, 0.0, limit, log)
        try:
            rc = proc.wait(limit)
        except subprocess.TimeoutExpired:
            _kill(proc)
            out.write(f"\n[gpu_check] stopped after its limit of {limit:.0f} s\n")
            return _record_of(step, "timed out", None, time.monotonic() - t0, limit, log)
    return _record_of(step, "passed" if rc == 0 else "failed", rc, time.monotonic() - t0, limit, log)


def _record_of(step: Step, status: str, rc, seconds: float, limit: float, log: Path) -> dict:
    rec = {
        "name": step.name,
        "kind": step.kind,
        "command": " ".join(step.argv),
        "status": status,
        "returncode": rc,
        "seconds": round(seconds, 1),
        "limit_s": round(limit),
        "log": str(log),
    }
    if step.kind == "bench":
        rec["figures"] = last_json(log)
    return rec


def last_json(log: Path) -> dict | None:
    """The last line of ``log`` that is a JSON object (what each benchmark prints last), or None."""
    for line in reversed(log.read_text(encoding="utf-8", errors="replace").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def results_by_file(jsonl: Path, expected=(), profile: str = "quick") -> dict[str, dict]:
    """Per file of a pytest step's results (``jsonl``, written by the plugin): counts of passed, failed and
    skipped tests, seconds, the failed node ids and a status (``failed`` if any test failed, ``not run`` for an
    ``expected`` file with no result, e.g. when the step was stopped)."""
    tests: dict[str, dict] = {}
    lines = jsonl.read_text(encoding="utf-8").splitlines() if jsonl.exists() else []
    for line in lines:
        r = json.loads(line)
        t = tests.setdefault(r["nodeid"], {"outcome": "passed", "seconds": 0.0})
        t["seconds"] += r["seconds"]
        if r["outcome"] == "failed":
            t["outcome"] = "failed"
        elif r["outcome"] == "skipped" and t["outcome"] != "failed":
            t["outcome"] = "skipped"
    files: dict[str, dict] = {f: {"passed": 0, "failed": 0, "skipped": 0, "seconds": 0.0} for f in expected}
    failures: dict[str, list] = {}
    for nodeid, t in tests.items():
        path = nodeid.split("::", 1)[0]
        counts = files.setdefault(path, {"passed": 0, "failed": 0, "skipped": 0, "seconds": 0.0})
        counts[t["outcome"]] += 1
        counts["seconds"] += t["seconds"]
        if t["outcome"] == "failed":
            failures.setdefault(path, []).append(nodeid)
    for path, c in files.items():
        c["seconds"] = round(c["seconds"], 1)
        c["profile"] = profile
        c["failures"] = failures.get(path, [])
        ran = c["passed"] + c["failed"] + c["skipped"]
        c["status"] = "not run" if not ran else "failed" if c["failed"] else "passed" if c["passed"] else "skipped"
    return files


# --------------------------------------------------------------------------- the report


def write_report(report: dict, out: Path) -> None:
    """``report.json`` and ``report.md`` into ``out``, written whole each time (each file replaced atomically)."""
    out.mkdir(parents=True, exist_ok=True)
    for name, text in (("report.json", json.dumps(report, indent=1)), ("report.md", markdown(report))):
        tmp = out / f".{name}.tmp"
        tmp.write_text(text + "\n", encoding="utf-8")
        tmp.replace(out / name)


def _row(*cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def markdown(r: dict) -> str:
    m = r.get("machine") or {}
    lines = [
        f"# GPU check: {'PASSED' if r['passed'] else 'NOT PASSED'} ({r['mode']})",
        "",
        f"Started {r['started']}, {r['seconds']:.0f} s in all (budget {r['budget_s']:.0f} s); commit "
        f"{r.get('commit') or 'unknown'}.",
    ]
    if r.get("note"):
        lines += ["", r["note"]]
    if m:
        lines += [
            "",
            f"Device: {m.get('device_name', '?')} ({m.get('gpu_memory_gib', '-')} GiB, driver {m.get('driver', '-')});"
            f" torch {m.get('torch', '?')}, CUDA {m.get('cuda', '-')}, cuDNN {m.get('cudnn', '-')}; "
            f"Python {m.get('python', '?')}; {m.get('cpu_count', '?')} CPU cores.",
        ]
    lines += ["", "## Steps", "", _row("step", "status", "seconds", "limit (s)"), _row("---", "---", "---:", "---:")]
    lines += [_row(s["name"], s["status"], s["seconds"], s["limit_s"]) for s in r["steps"]]
    if r["skipped_steps"]:
        lines += ["", "Not run: " + "; ".join(f"{k} ({v})" for k, v in r["skipped_steps"].items()) + "."]
    if r["deselected"]:
        lines += ["", "Deselected: " + "; ".join(f"`{k}` ({v})" for k, v in r["deselected"].items()) + "."]
    if r["notebooks"]:
        lines += ["", "## Notebooks under nbval", "", _row("notebook", "profile", "status", "seconds", "cells")]
        lines += [_row("---", "---", "---", "---:", "---")]
        for name, c in r["notebooks"].items():
            cells = f"{c['passed']} passed, {c['failed']} failed"
            lines.append(_row(name.split(" ")[0], c["profile"], c["status"], c["seconds"], cells))
    if r["benchmarks"]:
        lines += ["", "## Benchmarks", ""]
        for name, figures in r["benchmarks"].items():
            lines.append(f"- **{name}**: `{json.dumps(figures)}`" if figures else f"- **{name}**: no figures")
    tf = r["test_files"]
    if tf:
        counts = {k: sum(c[k] for c in tf.values()) for k in ("passed", "failed", "skipped")}
        bad = {f: c for f, c in tf.items() if c["status"] in ("failed", "not run")}
        lines += [
            "",
            "## Unit tests",
            "",
            f"{len(tf)} files: {counts['passed']} tests passed, {counts['failed']} failed, {counts['skipped']} "
            f"skipped; {len(bad)} files failed or not run.",
            "",
            _row("file", "status", "passed", "failed", "skipped", "seconds"),
            _row("---", "---", "---:", "---:", "---:", "---:"),
        ]
        for f, c in sorted(tf.items(), key=lambda kv: (kv[1]["status"] == "passed", kv[0])):
            lines.append(_row(f, c["status"], c["passed"], c["failed"], c["skipped"], c["seconds"]))
        for c in bad.values():
            lines += [f"- `{n}` failed" for n in c["failures"]]
    lines += ["", "Each step's output: log.txt beside this report."]
    return "\n".join(lines)


def collect_logs(steps: list[dict], out: Path, tail_bytes: int = 400_000) -> None:
    """Every step's log (its last ``tail_bytes``) into one ``out/log.txt``."""
    with open(out / "log.txt", "w", encoding="utf-8") as f:
        for s in steps:
            data = Path(s["log"]).read_bytes() if Path(s["log"]).exists() else b""
            cut = len(data) > tail_bytes
            f.write(
                f"\n===== {s['name']}: {s['status']} in {s['seconds']} s" + (" (log cut to its end)" if cut else "")
            )
            f.write(" =====\n" + data[-tail_bytes:].decode("utf-8", errors="replace"))


# --------------------------------------------------------------------------- the plan


# What the venv runs: its versions, the device, and that transformer_nb is this checkout's (not the cwd's copy).
PROBE = r"""
import json, os, platform, shutil, subprocess, sys
sys.path = [p for p in sys.path if p != ""]  # not the cwd: what a kernel in notebooks/ imports
import torch, numpy, matplotlib, nbval, ipykernel, transformer_nb
m = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
     "cudnn": torch.backends.cudnn.version(), "cuda_available": torch.cuda.is_available(),
     "numpy": numpy.__version__, "matplotlib": matplotlib.__version__, "ipykernel": ipykernel.__version__,
     "transformer_nb": os.path.dirname(transformer_nb.__file__), "torch_path": os.path.dirname(torch.__file__),
     "cpu_count": os.cpu_count(),
     "executable": sys.executable}
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    m.update(device_name=p.name, gpu_memory_gib=round(p.total_memory / 2**30, 1),
             capability=".".join(map(str, torch.cuda.get_device_capability(0))))
else:
    m["device_name"] = "CPU (" + (platform.processor() or platform.machine()) + ")"
if shutil.which("nvidia-smi"):
    q = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
    m["driver"] = subprocess.run(q, capture_output=True, text=True, timeout=30).stdout.strip()
print(json.dumps(m))
here = os.path.join(sys.argv[1], "transformer_nb")
assert m["transformer_nb"] == here, f"the venv imports transformer_nb from {m['transformer_nb']}, not from {here}"
"""


def plan(python: str, work: Path, kit: Path, dry: bool) -> tuple[list[list[Step]], dict]:
    """The groups of steps after the install (the steps of a group run side by side) and the steps not run."""
    device = "cpu" if dry else "cuda"
    bench = [python, "-m", "transformer_nb.bench"]
    data = kit / "data"
    path = f"{Path(python).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # the venv's python for kernels too
    common = {"TNB_DEVICE": device, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT / "tools"), "PATH": path}
    if data.is_dir():
        common["TNB_DATA_DIR"] = str(data)
    quick = {**common, "TNB_PROFILE": "quick", "TNB_CACHE_DIR": str(work / "cache-quick"), "OMP_NUM_THREADS": "1"}
    full = {**common, "TNB_PROFILE": "full", "TNB_CACHE_DIR": str(work / "cache-full"), "OMP_NUM_THREADS": "2"}

    def pytest(name, paths, workers, env, timeout, profile="quick"):
        results = work / f"{name}.jsonl"
        env = {**env, "GPU_CHECK_RESULTS": str(results)}
        argv = [python, "-m", "pytest", *paths, *NBVAL, "-p", "gpu_check", "-p", "no:cacheprovider"]
        argv += ["-n", str(workers), "--dist", "loadfile", "--no-loadscope-reorder"]
        if profile == "quick":  # a cell that hangs frees its worker for the other files (the full runs' cells are long)
            argv.append("--nbval-cell-timeout=120")
        argv += ["--ignore=tests/browser", *(f"--deselect={d}" for d in DESELECT)]
        return Step(name, argv, timeout, "pytest", env, [p for p in paths if p.endswith((".py", ".ipynb"))], profile)

    notebooks = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("*.ipynb"))
    tests = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py"))
    skipped = {}
    if dry:
        run = [pytest("tests-and-notebooks-quick", DRY_TESTS + DRY_NOTEBOOKS, 2, quick, 200)]
        skipped["notebooks-full"] = "the dry run forces the quick profile: 09 and 10 full run on the GPU only"
        benches = [
            ["reversal", "--max-steps", "30", "--skip-text", "--throughput-steps", "5", "--n-eval", "50"],
            ["lm", "--budget", "3", "--skip-lstm", "--eval-tokens", "2000"],
            ["kvcache", "--new-tokens", "8", "--repeats", "1", "--long-prompt", "0", "--random-init"],
        ]
        limits = (60, 90, 60)
    else:
        run = [
            pytest("tests-and-notebooks-quick", tests + notebooks, 12, quick, 270),
            pytest("notebooks-full", FULL_NOTEBOOKS, 2, full, 270, "full"),
        ]
        benches = [["reversal"], ["lm", "--budget", "15"], ["kvcache", "--repeats", "3"]]
        limits = (45, 75, 60)
    # The benchmarks run alone, after the tests, so that their figures are the device's; kvcache times notebook
    # 10's trained weights when its full run cached them.
    benches = [
        Step(f"bench-{b[0]}", [*bench, *b, "--device", device, "--threads", "1" if dry else "2"], t, "bench", full)
        for b, t in zip(benches, limits)
    ]
    return [run, *([b] for b in benches)], skipped


def make_venv(python: str, venv: Path, logs: Path, deadline: float) -> list[dict]:
    """A venv of ``python`` that sees its packages (``--system-site-packages``, and its site-packages if ``python``
    is itself a venv) and this checkout; no pip of its own: the parent's runs in it."""
    shutil.rmtree(venv, ignore_errors=True)
    rec = run_step(Step("venv", [python, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], 60), logs)
    if rec["status"] == "passed":
        info = subprocess.run(
            [
                python,
                "-c",
                "import json, site, sys; print(json.dumps([sys.prefix != sys.base_prefix, site.getsitepackages()]))",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        is_venv, parent_sites = json.loads(info.stdout)
        vpy = venv / "bin" / "python"
        site_dir = subprocess.run(
            [str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        pth = [str(ROOT)] + [f"import site; site.addsitedir({p!r})" for p in (parent_sites if is_venv else [])]
        Path(site_dir, "_gpu_check_parent.pth").write_text("\n".join(pth) + "\n", encoding="utf-8")
    return [rec]


def install_steps(vpy: str, kit: Path, dry: bool) -> list[Step]:
    wheels = kit / "wheels"
    pip = [vpy, "-m", "pip", "install", "--disable-pip-version-check", "--no-index", "--find-links", str(wheels)]
    steps = [Step("install", [*pip, "--no-compile", *REQUIREMENTS], 120)]
    if dry:  # the kit must hold every wheel the GPU machine's install needs (this machine's Python may differ)
        target = [f"--platform={p}" for p in PLATFORMS] + ["--python-version=3.12", "--implementation=cp"]
        resolve = [*pip, "--dry-run", "--ignore-installed", "--only-binary=:all:", *target, "--target", str(WORK / "t")]
        steps.append(Step("kit-resolves-for-gpu", [*resolve, *REQUIREMENTS], 120))
    return steps


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return None
    return out.stdout.strip() or None


def run(out: Path, kit: Path, dry: bool, budget: float, work: Path = WORK, python: str = sys.executable) -> int:
    t0 = time.monotonic()
    deadline = t0 + budget
    logs = work / "logs"
    shutil.rmtree(work, ignore_errors=True)
    logs.mkdir(parents=True)
    report = {
        "mode": "dry run (CPU, quick profile, a subset)" if dry else "GPU",
        "note": (
            f"Dry run: the CPU, the quick profile, and only {len(DRY_TESTS)} test files, {len(DRY_NOTEBOOKS)} "
            "notebooks and the benchmarks at tiny sizes: it proves the plumbing, not the suite."
            if dry
            else ""
        ),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": 0.0,
        "budget_s": budget,
        "commit": git_commit(),
        "passed": False,
        "machine": {},
        "steps": [],
        "skipped_steps": {},
        "deselected": dict(DESELECT),
        "notebooks": {},
        "test_files": {},
        "benchmarks": {},
    }
    lock = threading.Lock()

    def done(rec: dict, step: Step | None = None) -> None:
        with lock:
            report["steps"].append(rec)
            if step is not None and step.kind == "pytest":
                files = results_by_file(work / f"{step.name}.jsonl", step.files, step.profile)
                for f, c in files.items():
                    if f.endswith(".ipynb"):
                        report["notebooks"][f"{Path(f).stem} ({step.profile})"] = c
                    else:
                        report["test_files"][f] = c
            if step is not None and step.kind == "bench":
                report["benchmarks"][step.name.removeprefix("bench-")] = rec["figures"]
            report["seconds"] = round(time.monotonic() - t0, 1)
            write_report(report, out)
            collect_logs(report["steps"], out)

    def stop(reason: str) -> int:
        report["skipped_steps"]["the rest"] = reason
        report["seconds"] = round(time.monotonic() - t0, 1)
        write_report(report, out)
        return 1

    write_report(report, out)
    for rec in make_venv(python, work / "venv", logs, deadline):
        done(rec)
        if rec["status"] != "passed":
            return stop("no venv")
    vpy = str(work / "venv" / "bin" / "python")
    installed = [run_step(step, logs, deadline) for step in install_steps(vpy, kit, dry)]
    for rec in installed:
        done(rec)
    if any(rec["status"] != "passed" for rec in installed):
        return stop("the install failed")
    probe = run_step(Step("probe", [vpy, "-c", PROBE, str(ROOT)], 120), logs, deadline)
    report["machine"] = last_json(Path(probe["log"])) or {}
    done(probe)
    if probe["status"] != "passed" or (not dry and not report["machine"].get("cuda_available")):
        return stop("torch sees no CUDA GPU" if probe["status"] == "passed" else "the probe failed")
    groups, skipped = plan(vpy, work, kit, dry)
    report["skipped_steps"].update(skipped)
    # Each group may run until the time the later groups need (their longest limits) is all that is left.
    reserves = [sum(max(s.timeout for s in g) for g in groups[i + 1 :]) for i in range(len(groups))]
    for group, reserve in zip(groups, reserves):
        until = deadline - reserve
        with ThreadPoolExecutor(len(group)) as pool:
            for step, rec in zip(group, pool.map(lambda s, until=until: run_step(s, logs, until), group)):
                done(rec, step)
    report["passed"] = all(s["status"] == "passed" for s in report["steps"])
    report["seconds"] = round(time.monotonic() - t0, 1)
    write_report(report, out)
    print(
        f"gpu-check: {'passed' if report['passed'] else 'NOT passed'} in {report['seconds']:.0f} s; see {out}/report.md"
    )
    return 0 if report["passed"] else 1


# --------------------------------------------------------------------------- the kit


def wheels(kit: Path, data_dir: Path | None) -> int:
    """Download the kit's wheels (for the GPU machine, not this one) and copy WikiText-2 beside them."""
    shutil.rmtree(kit, ignore_errors=True)
    target = [f"--platform={p}" for p in PLATFORMS] + ["--python-version=3.12", "--implementation=cp"]
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--only-binary=:all:"]
    subprocess.run([*cmd, *target, "-d", str(kit / "wheels"), *REQUIREMENTS], check=True)
    if data_dir is not None:
        shutil.copytree(data_dir, kit / "data", ignore=shutil.ignore_patterns("*.zip", "*.tmp"))
    else:
        print(
            "gpu-wheels: no WikiText-2 copied (TNB_DATA_DIR unset): notebooks 10-12 will fail offline", file=sys.stderr
        )
    mb = sum(f.stat().st_size for f in kit.rglob("*") if f.is_file()) / 2**20
    n = len(list((kit / "wheels").glob("*.whl")))
    print(
        f"gpu-wheels: {n} wheels{' and WikiText-2' if data_dir else ''} in {kit}: {mb:.1f} MiB (limit {KIT_LIMIT_MB})"
    )
    return 0 if mb <= KIT_LIMIT_MB else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python tools/gpu_check.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("wheels", help="download the kit: wheels for the GPU machine and WikiText-2")
    w.add_argument("--kit", type=Path, default=KIT)
    r = sub.add_parser("run", help="the check, its report into --out")
    r.add_argument("--kit", type=Path, default=KIT)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--dry-run", action="store_true", help="the CPU, the quick profile, a subset")
    r.add_argument("--budget", type=float, default=470.0, help="seconds for everything (default 470)")
    args = p.parse_args(argv)
    if args.cmd == "wheels":
        data = os.environ.get("TNB_DATA_DIR")
        return wheels(args.kit.resolve(), Path(data) if data else None)
    if args.budget <= 0:
        p.error(f"--budget must be positive, got {args.budget}")
    return run(args.out.resolve(), args.kit.resolve(), args.dry_run, args.budget)


if __name__ == "__main__":
    sys.exit(main())
