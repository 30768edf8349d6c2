"""``utils.as_int``, ``as_real``, ``as_device`` and ``check_memory``: the argument checks every module uses."""

import math

import numpy as np
import pytest
import torch

from transformer_nb.core.utils import as_device, as_int, as_real, available_devices, check_memory, memory_of


def test_as_int_accepts_integers_and_refuses_the_rest():
    for good in (3, np.int64(3), torch.tensor(3)):
        assert as_int("n", good) == 3 and type(as_int("n", good)) is int
    for bad in (2.0, True, "3", None, torch.tensor(True)):
        with pytest.raises(TypeError, match="size must be an int"):
            as_int("size", bad)
    with pytest.raises(ValueError, match="size must be >= 1, got 0"):
        as_int("size", 0, minimum=1)


def test_as_real():
    assert as_real("x", 2) == 2.0 and as_real("x", np.float32(0.5)) == 0.5 and as_real("x", torch.tensor(1.5)) == 1.5
    for bad, exc in [(math.nan, ValueError), (-math.inf, ValueError), (True, TypeError), ("1", TypeError)]:
        with pytest.raises(exc, match="x must be a"):
            as_real("x", bad)
    with pytest.raises(ValueError, match="x must be a finite positive number"):
        as_real("x", 0.0, positive=True)


def test_as_device():
    assert as_device("device", None) is None and as_device("device", "cpu") == torch.device("cpu")
    assert as_device("device", "meta").type == "meta"
    with pytest.raises(ValueError, match="device must be one of cpu"):
        as_device("device", "banana")
    with pytest.raises(TypeError, match="device must be a device name"):
        as_device("device", 3)
    if "cuda" not in available_devices():
        with pytest.raises(ValueError, match="device='cuda' is not on this machine"):
            as_device("device", "cuda")


def test_check_memory():
    check_memory("a small tensor", 1024)
    check_memory("anything on meta", 10**30, "meta")  # meta tensors allocate nothing
    with pytest.raises(ValueError, match="a huge mask would need .* GiB, more than the"):
        check_memory("a huge mask", 10 * memory_of("cpu"))


def test_memory_of_checks_its_device():
    assert memory_of("cpu") > 0 and memory_of("meta") is None
    with pytest.raises(ValueError, match="device must be one of"):
        memory_of("gpu")


def test_pick_needs_both_profiles():
    from transformer_nb.env import pick

    with pytest.raises(TypeError, match="full"):
        pick(quick=1)
