"""Shared fixtures for the unit tests, the one place the tests choose a matplotlib backend, and the
hypothesis profiles of the property-based suite (tests/test_properties_*.py).

Hypothesis profiles, chosen with ``TNB_HYPOTHESIS`` (see /work/plan/notes/robust.md):
- ``fast`` (default, what ``make test`` runs): few examples per property, derandomized, so a run is
  reproducible and quick on 2 cores;
- ``deep``: many more examples, random (a new search each run), for an on-demand hunt:
  ``TNB_HYPOTHESIS=deep .venv/bin/python -m pytest tests/test_properties_*.py``.
"""

import os

import matplotlib

matplotlib.use("Agg")  # before any test imports pyplot: figures render off-screen

import pytest
import torch
from hypothesis import HealthCheck, settings

pytest_plugins = ["pytester"]  # test_no_answer_shown.py runs nbval in a pytest session of its own, in this process

HYPOTHESIS_PROFILES = {"fast": 20, "deep": 400}  # examples per property
for _name, _n in HYPOTHESIS_PROFILES.items():
    settings.register_profile(
        _name,
        max_examples=_n,
        deadline=None,  # 2 shared cores: timings vary too much for a per-example deadline
        derandomize=_name == "fast",
        database=None,  # no .hypothesis/ folder in the checkout
        print_blob=True,  # a failure prints the @reproduce_failure line
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
_profile = os.environ.get("TNB_HYPOTHESIS", "fast")
if _profile not in HYPOTHESIS_PROFILES:
    raise ValueError(f"TNB_HYPOTHESIS must be one of {', '.join(HYPOTHESIS_PROFILES)}, got {_profile!r}")
settings.load_profile(_profile)


@pytest.fixture
def one_thread():
    """Tiny tensors: one thread is fastest, and immune to other jobs on the machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
