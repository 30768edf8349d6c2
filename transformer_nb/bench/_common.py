"""What the benchmarks share: the common options (``parser``), the device and threads (``start``), timing
(``sync``, ``best_time``) and the JSON line (``finish``).
"""

import argparse
import json
import math
import os
import time

import torch


def at_least(low: int):
    """An argparse type: an int ``>= low`` (argparse names the option in its error)."""

    def parse(text: str) -> int:
        n = int(text)
        if n < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {n}")
        return n

    parse.__name__ = "int"  # argparse's message: "invalid int value"
    return parse


def parser(name: str, doc: str) -> argparse.ArgumentParser:
    """The benchmark's argument parser, with ``--device`` and ``--threads``."""
    p = argparse.ArgumentParser(
        prog=f"python -m transformer_nb.bench {name}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:1, mps")
    p.add_argument("--threads", type=at_least(1), default=2, help="torch CPU threads (default 2)")
    return p


def load_avg() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def start(args: argparse.Namespace) -> tuple[torch.device, float]:
    """``args.device`` (refused if this machine lacks it), with ``args.threads`` set; and the load average now."""
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device}: this machine has no CUDA device (torch {torch.__version__})")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise SystemExit(f"--device {args.device}: MPS is not available on this machine")
    if device.type == "meta":
        raise SystemExit("--device meta holds no values: choose cpu, cuda or mps")
    torch.set_num_threads(args.threads)
    return device, load_avg()


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def best_time(fn, repeats: int, device: torch.device):
    """``(best seconds of fn() over repeats, fn()'s last result)``, each run timed between two ``sync``."""
    best, out = math.inf, None
    for _ in range(repeats):
        sync(device)
        t0 = time.perf_counter()
        out = fn()
        sync(device)
        best = min(best, time.perf_counter() - t0)
    return best, out


def finish(result: dict, load_start: float) -> None:
    """Add the machine's facts to ``result`` and print it as the last line, one JSON object."""
    result.update(threads=torch.get_num_threads(), torch=torch.__version__, cpu_count=os.cpu_count())
    result.update(load_avg_start=round(load_start, 2), load_avg_end=round(load_avg(), 2))
    print(json.dumps(result))
