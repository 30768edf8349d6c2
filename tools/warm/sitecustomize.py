"""`make test` only (PYTHONPATH): ``python -m ipykernel_launcher ...`` asks tools/warm_kernels.py for a fork of its warm
process, stays as the kernel's process and passes signals on; with no such server, the kernel starts as usual."""

import os
import sys

if sys.orig_argv[1:3] == ["-m", "ipykernel_launcher"] and os.environ.get("TNB_WARM_KERNELS"):
    import json
    import signal
    import socket

    ask = dict(argv=sys.orig_argv[3:], env=dict(os.environ), cwd=os.getcwd(), path=sys.path, prefix=sys.prefix)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(os.environ["TNB_WARM_KERNELS"])
        socket.send_fds(s, [json.dumps(ask).encode()], [0, 1, 2])
        said = s.recv(64).split()
    except OSError:
        said = []
    if said[:1] == [b"pid"]:  # else refused (another Python, other settings) or failed: start as usual
        pid = int(said[1])
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(sig, lambda n, _: os.kill(pid, n))
        said = s.recv(64).split()
        os._exit(int(said[1]) if said[:1] == [b"exit"] else 1)  # the kernel's exit code, or 1 if it vanished
