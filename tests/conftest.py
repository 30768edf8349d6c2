"""Shared fixtures for the unit tests, and the one place the tests choose a matplotlib backend."""

import matplotlib

matplotlib.use("Agg")  # before any test imports pyplot: figures render off-screen

import pytest
import torch


@pytest.fixture
def one_thread():
    """Tiny tensors: one thread is fastest, and immune to other jobs on the machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
