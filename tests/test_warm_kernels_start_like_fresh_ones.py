"""A kernel forked by tools/warm_kernels.py (make test's) sees what a kernel started afresh sees: the environment and
folder it was started with, its threads, the inline backend and its figures; a timed-out cell is interrupted; once
shut down nothing of it is left; a request from another environment gets a fresh kernel."""

import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from refresh import CurrentEnvKernelManager  # noqa: E402

PROBE = "import os, subprocess, torch, matplotlib.pyplot as plt\nprint(os.getcwd(), os.environ['PROBE'], "
PROBE += "torch.get_num_threads(), plt.get_backend(), subprocess.run('exit 3', shell=True).returncode, os.getppid())"
PROBE += "\nplt.plot([1]); plt.show()"


def _run(env: dict, where: Path, cells=(PROBE, "__import__('time').sleep(60)")) -> tuple:
    """What the probe printed and showed, how the next (a minute's sleep, cut at 1 s) ended; the kernel's parent."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(
        nb, kernel_manager_class=CurrentEnvKernelManager, interrupt_on_timeout=True, allow_errors=True,
        timeout_func=lambda c: 1 if "sleep" in c.source else 120, shutdown_kernel="immediate",
        resources={"metadata": {"path": str(where)}},
    ).execute(env=env)  # fmt: skip
    (printed, *shown), stopped = nb.cells[0].outputs, [o["ename"] for c in nb.cells[1:] for o in c.outputs]
    text, parent = printed["text"].strip().rsplit(" ", 1)
    return (text, [sorted(o["data"]) for o in shown], stopped), int(parent)


def test_a_warm_kernel_sees_what_a_fresh_one_sees(tmp_path):
    sock, env = tmp_path / "warm.sock", {**os.environ, "PROBE": "x y", "OMP_NUM_THREADS": "2", "PYTHONPATH": ""}
    server = subprocess.Popen([sys.executable, ROOT / "tools" / "warm_kernels.py", sock])
    try:
        while server.poll() is None and not sock.exists():
            time.sleep(0.1)
        warm = {**env, "TNB_WARM_KERNELS": str(sock), "PYTHONPATH": str(ROOT / "tools" / "warm")}
        (fresh, parent), (forked, forked_parent) = _run(env, tmp_path), _run(warm, tmp_path)
        inline = "module://matplotlib_inline.backend_inline"
        assert forked == fresh == (f"{tmp_path} x y 2 {inline} 3", [["image/png", "text/plain"]], ["KeyboardInterrupt"])
        assert (parent, forked_parent) == (os.getpid(), server.pid)
        for _ in range(100):  # the fork ends once it sees its requester gone: nothing is left
            if not subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True).stdout:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("a forked kernel outlived its requester by 10 s")
        assert _run({**warm, "MPLBACKEND": "agg"}, tmp_path, [PROBE])[1] == os.getpid()  # refused: a fresh kernel
    finally:
        server.kill()
