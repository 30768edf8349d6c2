"""Device selection, seeding and the quick/full profile.

The profile is chosen by the environment variable ``TNB_PROFILE``:
``full`` (default; what a student gets and what stored outputs come from) or
``quick`` (what ``make test`` and CI run).
"""

import math
import numbers
import operator
import os
import platform
import random
import threading
from dataclasses import dataclass
from pathlib import Path

import torch

PROFILES = ("quick", "full")
ON, OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def env_flag(name: str) -> bool:
    """The environment switch ``name``: ``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``, in any
    case and with spaces around; unset or empty is off. Anything else is a ``ValueError`` naming ``name``."""
    value = os.environ.get(name, "").strip().lower()
    if value in ON or value in (*OFF, ""):
        return value in ON
    raise ValueError(f"{name} must be one of {', '.join(ON)} (on) or {', '.join(OFF)} (off), got {os.environ[name]!r}")


def env_path(name: str) -> Path | None:
    """The path in the environment variable ``name``, spaces around it stripped, ``~`` expanded; None if unset."""
    if not isinstance(name, str):
        raise TypeError(f"name must be the name of an environment variable, got {type(name).__name__}")
    value = os.environ.get(name, "").strip()
    return Path(value).expanduser() if value else None


def profile() -> str:
    """Return the active profile, ``"quick"`` or ``"full"`` (env ``TNB_PROFILE``)."""
    name = os.environ.get("TNB_PROFILE", "full").strip().lower() or "full"
    if name not in PROFILES:
        raise ValueError(f"TNB_PROFILE must be one of {', '.join(PROFILES)}, got {name!r}")
    return name


def pick(*, quick, full):
    """Return ``quick`` or ``full`` depending on the active profile."""
    return quick if profile() == "quick" else full


def available_devices() -> list[str]:
    """The device names that work here: ``cpu``, then ``cuda`` and ``cuda:N`` per GPU, then ``mps``."""
    names = ["cpu"]
    if torch.cuda.is_available():
        names += ["cuda"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        names.append("mps")
    return names


def get_device(prefer: str | None = None) -> torch.device:
    """The device to compute on: ``prefer`` (or env ``TNB_DEVICE``), else CUDA, else MPS, else CPU.

    A named device must exist here (``available_devices()``); ``meta``, a GPU that is not there
    or a typo is a ``ValueError`` that lists the choices.
    """
    if prefer is not None and not isinstance(prefer, (str, torch.device)):
        raise TypeError(f"prefer must be a device name such as 'cpu', got {type(prefer).__name__}")
    where = "prefer" if prefer is not None else "TNB_DEVICE"
    name = str(prefer if prefer is not None else os.environ.get("TNB_DEVICE", "")).strip().lower()
    choices = available_devices()
    if not name:  # the best device here: CUDA, else MPS, else CPU
        return torch.device("cuda" if "cuda" in choices else "mps" if "mps" in choices else "cpu")
    if name not in choices:
        raise ValueError(
            f"{where} must name a device that exists on this machine, one of {', '.join(choices)}; got {name!r}"
            + (" (torch sees no CUDA GPU here)" if name.startswith("cuda") else "")
        )
    return torch.device(name)


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    if not 0 <= seed < 2**32:
        raise ValueError(f"seed must be in 0 .. 2**32 - 1 (numpy's range), got {seed}")
    return seed


# --------------------------------------------------------------------------- argument checks (used by every module)


def as_int(name: str, value, minimum: int = 0) -> int:
    """``value`` as a Python int ``>= minimum``; else a ``TypeError`` / ``ValueError`` that names ``name``.

    Accepts ints, numpy ints and 0-d integer tensors; refuses bools, floats (even ``2.0``) and strings.
    """
    if isinstance(value, bool) or (isinstance(value, torch.Tensor) and value.dtype == torch.bool):
        raise TypeError(f"{name} must be an int, got {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}") from None
    if n < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {n}")
    return n


def as_real(name: str, value, positive: bool = False) -> float:
    """``value`` as a finite Python float (``> 0`` if ``positive``); bools, strings and NaN/inf are refused."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.dtype != torch.bool:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    x = float(value)
    if not math.isfinite(x) or (positive and x <= 0):
        raise ValueError(f"{name} must be a finite{' positive' if positive else ''} number, got {value!r}")
    return x


def as_path(name: str, value) -> Path:
    """``value`` (a ``str`` or ``os.PathLike``) as a ``Path``; an int (a file descriptor to ``open``) is refused."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got {type(value).__name__} {value!r}")
    return Path(value)


def check_module(name: str, value) -> None:
    """``value`` must be a ``torch.nn.Module``; else a ``TypeError`` naming ``name``."""
    if not isinstance(value, torch.nn.Module):
        raise TypeError(f"{name} must be an nn.Module, got {type(value).__name__}")


def as_device(name: str, device) -> torch.device | None:
    """``None``, or a ``torch.device`` that exists here (``meta`` included); else an error naming ``name``."""
    if device is None:
        return None
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"{name} must be a device name such as 'cpu', got {type(device).__name__}")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ValueError(f"{name} must be one of {', '.join([*available_devices(), 'meta'])}, got {device!r}") from None
    if dev.type not in ("cpu", "meta") and str(dev) not in available_devices():
        raise ValueError(
            f"{name}={str(dev)!r} is not on this machine; the devices here: {', '.join(available_devices())}"
        )
    return dev


def memory_of(device=None) -> int | None:
    """Bytes of memory of ``device`` (CPU: physical RAM; CUDA: the GPU's), or None if unknown/unbounded (meta)."""
    dev = as_device("device", device) or torch.device("cpu")
    if dev.type == "cuda":
        return torch.cuda.get_device_properties(dev).total_memory
    if dev.type == "cpu" and hasattr(os, "sysconf"):
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            return None
    return None


def check_memory(what: str, n_bytes: int, device=None) -> None:
    """``ValueError`` naming ``what`` when a tensor of ``n_bytes`` cannot fit in ``device``'s memory."""
    limit = memory_of(device)
    if limit is not None and n_bytes > limit:
        raise ValueError(
            f"{what} would need {n_bytes / 2**30:.3g} GiB, more than the {limit / 2**30:.3g} GiB of memory "
            f"of {torch.device(device or 'cpu')}; use smaller sizes"
        )


def seed_everything(seed: int = 0) -> None:
    """Seed Python, torch (CPU and CUDA) and numpy if present. ``seed``: an int in ``0 .. 2**32 - 1``."""
    _check_seed(seed)
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:  # numpy is optional for the package itself
        pass


@dataclass(frozen=True)
class Env:
    """What a notebook runs with. ``device`` is a ``torch.device``."""

    profile: str
    device: torch.device
    seed: int
    threads: int

    def __post_init__(self):
        if self.profile not in PROFILES:
            raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {self.profile!r}")
        if not isinstance(self.device, torch.device):
            raise TypeError(f"device must be a torch.device, got {type(self.device).__name__}")
        _check_seed(self.seed)
        as_int("threads", self.threads, minimum=1)

    def __str__(self) -> str:
        return (
            f"profile: {self.profile} | device: {self.device.type} | threads: {self.threads}"
            f" | torch {torch.__version__} | python {platform.python_version()}"
        )


def setup(seed: int = 0, threads: int | None = None, quiet: bool = False) -> Env:
    """Seed everything, pick the device, and print profile and device.

    Call it in the first code cell of every notebook. ``threads`` limits torch's CPU
    threads (default: leave torch's choice). The environment is checked first: ``TNB_PROFILE``
    must be a known profile and ``TNB_DEVICE`` a device that exists here (the error lists both).
    """
    _check_seed(seed)
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be a positive int (or None), got {threads!r}")
    env_profile, device = profile(), get_device()  # both raise with the choices before anything changes
    if threads is not None:
        torch.set_num_threads(threads)
    seed_everything(seed)
    env = Env(profile=env_profile, device=device, seed=seed, threads=torch.get_num_threads())
    if not quiet:
        print(env)
    return env


# --------------------------------------------------------------------------- tensor checks (public boundaries)


def plain_tensor(name: str, x) -> None:
    """Refuse a subclass of ``torch.Tensor`` (``nn.Parameter`` aside): its ``__torch_function__`` can answer
    every comparison, ``==``, ``allclose``, ``isfinite``, ..., with whatever it likes, so a result that rests on
    comparing it proves nothing. ``x.as_subclass(torch.Tensor)`` is the plain tensor underneath."""
    if isinstance(x, torch.Tensor) and type(x) not in (torch.Tensor, torch.nn.Parameter):
        raise TypeError(
            f"{name} is a {type(x).__name__}, a subclass of torch.Tensor that may redefine comparisons; "
            f"pass a plain tensor ({name}.as_subclass(torch.Tensor))"
        )


def check_device(name: str, x: torch.Tensor, device: torch.device) -> None:
    """``x`` must be on ``device`` (a module's); a module on the meta device takes inputs from anywhere.

    Meta inputs into a real module would otherwise compute on memory that was never written, or fail
    deep inside torch."""
    if device.type != "meta" and x.device != device:
        why = "it has shapes but no values" if x.is_meta else f"move it with .to({str(device)!r})"
        raise ValueError(f"{name} is on the {x.device} device but the model is on {device}: {why}")


def check_like(name: str, x: torch.Tensor, weight: torch.Tensor) -> None:
    """``x`` must be on ``weight``'s device and, outside autocast, have its dtype (a float16 input into
    float32 weights is a ``TypeError`` here, not torch's "mat1 and mat2 must have the same dtype")."""
    check_device(name, x, weight.device)
    if x.dtype != weight.dtype and not torch.is_autocast_enabled(x.device.type):
        raise TypeError(
            f"{name} has dtype {x.dtype} but the model's weights are {weight.dtype}; convert one of them "
            f"(x.to({weight.dtype}) or model.to({x.dtype})) or run under torch.autocast"
        )


class _Inner(threading.local):
    """Inner layers trust their callers. A module's ``forward`` checks its inputs only when
    ``not INNER.depth`` (it is the outermost checking call) and runs its body ``with INNER:``, so
    the modules it calls skip the checks its own already made. One count per thread."""

    depth = 0

    def __enter__(self):
        self.depth += 1

    def __exit__(self, *exc):
        self.depth -= 1


INNER = _Inner()
