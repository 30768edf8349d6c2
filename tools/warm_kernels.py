"""Notebook kernels that start warm: forks of one process that has imported torch, matplotlib and ipykernel.

    python tools/warm_kernels.py SOCKET     # make test runs it beside pytest, with PYTHONPATH=tools/warm

Every notebook kernel imports torch (a second of CPU), matplotlib and ipykernel before its first cell runs, and one
that trains imports torch._dynamo too (torch.optim does): `make test` starts some 40. Here they start as forks of
this server, which has imported them once. ``tools/warm/sitecustomize.py``, in every process of `make test`
(PYTHONPATH), turns ``python -m ipykernel_launcher ...`` into a request on SOCKET: this server forks; the child
takes the requester's standard streams, environment, working folder and ``sys.path``, and runs ``ipykernel_launcher``
as ``python -m`` would; the requester stays as the kernel's process (jupyter_client signals and kills it): it passes
signals on, and the child ends when the requester does. A request from another Python, or with other settings read
at import (``SAME``), is refused, and that kernel starts as usual. The package is never imported here: a notebook's
refresh stamp lists the ``transformer_nb`` modules its kernel loaded.
"""

import json
import os
import runpy
import signal
import socket
import sys
import threading

PRELOAD = "torch torch._dynamo numpy PIL.Image matplotlib.pyplot ipykernel.kernelapp"  # not matplotlib_inline: its
# import registers the figure formats with the kernel's shell
INLINE = "module://matplotlib_inline.backend_inline"
SAME = ("GLIBC_TUNABLES", "MPLBACKEND", "MPLCONFIGDIR", "PYTHONHASHSEED", "PYTHONWARNINGS", "TORCH_LOGS")


def child(conn: socket.socket, ask: dict, fds: list) -> None:
    """In the fork: become the kernel ``ask`` describes; never returns."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # not the server's SIG_IGN: the kernel waits for its children
        os.setsid()
        for fd, std in zip(fds, (0, 1, 2)):
            os.dup2(fd, std)
        os.chdir(ask["cwd"])
        os.environ.clear()
        os.environ.update(ask["env"])
        sys.path[:] = ask["path"]
        parent = (
            [f"--IPKernelApp.parent_handle={os.environ['JPY_PARENT_PID']}"] if "JPY_PARENT_PID" in os.environ else []
        )
        sys.argv = ["ipykernel_launcher", *ask["argv"], *parent]
        # what a fresh kernel reads from its environment when it imports these: its threads, its parent's pid (given
        # above), and the inline backend that ipykernel chooses before matplotlib is imported
        import matplotlib
        import torch

        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count()))
        matplotlib.rcParams["backend"] = os.environ.setdefault("MPLBACKEND", INLINE)
        conn.send(f"pid {os.getpid()}".encode())
        threading.Thread(target=lambda: (conn.recv(1), os._exit(1)), daemon=True).start()  # the requester gone: end
        runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    finally:
        try:
            conn.send(f"exit {code}".encode())
        finally:
            os._exit(code)


def serve(path: str) -> None:
    for name in PRELOAD.split():
        __import__(name)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the system reaps the children
    mine = {k: os.environ.get(k) for k in SAME}
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as server:
        server.bind(path)
        server.listen(16)
        while True:
            conn, _ = server.accept()
            msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            ask = json.loads(msg)
            if ask["prefix"] == sys.prefix and {k: ask["env"].get(k) for k in SAME} == mine and os.fork() == 0:
                server.close()
                child(conn, ask, fds)
            for fd in fds:
                os.close(fd)
            conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
