"""Device selection, seeding and the quick/full profile.

The profile is chosen by the environment variable ``TNB_PROFILE``:
``full`` (default; what a student gets and what stored outputs come from) or
``quick`` (what ``make test`` and CI run).
"""

import os
import platform
import random
from dataclasses import dataclass

import torch

PROFILES = ("quick", "full")


def profile() -> str:
    """Return the active profile, ``"quick"`` or ``"full"`` (env ``TNB_PROFILE``)."""
    name = os.environ.get("TNB_PROFILE", "full").strip().lower() or "full"
    if name not in PROFILES:
        raise ValueError(f"TNB_PROFILE must be one of {PROFILES}, got {name!r}")
    return name


def pick(*, quick, full):
    """Return ``quick`` or ``full`` depending on the active profile."""
    return quick if profile() == "quick" else full


def get_device(prefer: str | None = None) -> torch.device:
    """The device to compute on: ``prefer`` (or env ``TNB_DEVICE``), else CUDA, else MPS, else CPU."""
    prefer = prefer or os.environ.get("TNB_DEVICE")
    if prefer:
        return torch.device(prefer)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def seed_everything(seed: int = 0) -> None:
    """Seed Python, torch (CPU and CUDA) and numpy if present."""
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

    def __str__(self) -> str:
        return (
            f"profile: {self.profile} | device: {self.device.type} | threads: {self.threads}"
            f" | torch {torch.__version__} | python {platform.python_version()}"
        )


def setup(seed: int = 0, threads: int | None = None, quiet: bool = False) -> Env:
    """Seed everything, pick the device, and print profile and device.

    Call it in the first code cell of every notebook. ``threads`` limits torch's CPU
    threads (default: leave torch's choice).
    """
    if threads is not None:
        torch.set_num_threads(threads)
    seed_everything(seed)
    env = Env(profile=profile(), device=get_device(), seed=seed, threads=torch.get_num_threads())
    if not quiet:
        print(env)
    return env
