"""The notebooks' environment: the quick/full profile, the device, seeding, environment variables and paths.

The profile is chosen by the environment variable ``TNB_PROFILE``:
``full`` (default; what a student gets and what stored outputs come from) or
``quick`` (what ``make test`` and CI run). Also the argument checks that only the companion uses
(``as_path``, ``check_module``). Companion code: no core module imports it.
"""

import os
import platform
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from transformer_nb.core.utils import as_int, available_devices

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
    if (seed := as_int("seed", seed)) >= 2**32:
        raise ValueError(f"seed must be in 0 .. 2**32 - 1 (numpy's range), got {seed}")
    return seed


# --------------------------------------------------------------------------- argument checks of the companion


def as_path(name: str, value) -> Path:
    """``value`` (a ``str`` or ``os.PathLike``) as a ``Path``; an int (a file descriptor to ``open``) is refused."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got {type(value).__name__} {value!r}")
    return Path(value)


def check_module(name: str, value) -> None:
    """``value`` must be a ``torch.nn.Module``; else a ``TypeError`` naming ``name``."""
    if not isinstance(value, torch.nn.Module):
        raise TypeError(f"{name} must be an nn.Module, got {type(value).__name__}")


# --------------------------------------------------------------------------- the notebook's set-up


def seed_everything(seed: int = 0) -> None:
    """Seed Python, torch (CPU and CUDA) and numpy. ``seed``: an int in ``0 .. 2**32 - 1``."""
    seed = _check_seed(seed)
    random.seed(seed)
    torch.manual_seed(seed)
    np.random.seed(seed)


@dataclass(frozen=True)
class _Env:
    """What a notebook runs with (``setup()`` builds it from checked values). ``device`` is a ``torch.device``."""

    profile: str
    device: torch.device
    seed: int
    threads: int

    def __str__(self) -> str:
        return (
            f"profile: {self.profile} | device: {self.device.type} | threads: {self.threads}"
            f" | torch {torch.__version__} | python {platform.python_version()}"
        )


def setup(seed: int = 0, threads: int | None = None, quiet: bool = False) -> _Env:
    """Seed everything, pick the device, and print profile and device.

    Call it in the first code cell of every notebook. ``threads`` limits torch's CPU
    threads (default: leave torch's choice). The environment is checked first: ``TNB_PROFILE``
    must be a known profile and ``TNB_DEVICE`` a device that exists here (the error lists both).
    """
    seed, threads = _check_seed(seed), threads if threads is None else as_int("threads", threads, 1)
    env_profile, device = profile(), get_device()  # both raise with the choices before anything changes
    if threads is not None:
        torch.set_num_threads(threads)
    seed_everything(seed)
    env = _Env(profile=env_profile, device=device, seed=seed, threads=torch.get_num_threads())
    if not quiet:
        print(env)
    return env
