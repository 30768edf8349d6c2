"""``setup()`` checks the environment before anything runs (issue 18, finding 8): ``TNB_DEVICE`` must
name a device that exists here, ``TNB_PROFILE`` a known profile, and the error lists the choices.
Before, ``TNB_DEVICE=cuda`` without CUDA printed "device: cuda" and failed only at the first tensor."""

import pytest
import torch

from transformer_nb import get_device, pick, profile, setup
from transformer_nb.core.utils import available_devices
from transformer_nb.env import seed_everything

ABSENT = [name for name in ("cuda", "cuda:0", "mps") if name not in available_devices()]


@pytest.mark.parametrize("value", [*ABSENT, "cuda:7", "meta", "gpu", "cpu:3", "nonsense", "cpu, cuda"])
def test_a_device_that_is_not_here_is_refused_with_the_choices(monkeypatch, capsys, value):
    monkeypatch.setenv("TNB_DEVICE", value)
    with pytest.raises(ValueError, match="TNB_DEVICE must name a device") as info:
        setup()
    assert ", ".join(available_devices()) in str(info.value) and repr(value.lower()) in str(info.value)
    assert capsys.readouterr().out == ""  # nothing printed: no "device: cuda" line


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_says_so(monkeypatch):
    monkeypatch.setenv("TNB_DEVICE", "cuda")
    with pytest.raises(ValueError, match="torch sees no CUDA GPU here"):
        setup()


@pytest.mark.parametrize("value", ["cpu", " CPU ", ""])
def test_devices_that_exist_are_accepted(monkeypatch, value):
    monkeypatch.setenv("TNB_DEVICE", value)
    assert setup(quiet=True).device == (torch.device("cpu") if value.strip() else get_device())


def test_prefer_is_checked_too():
    assert get_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="prefer must name a device"):
        get_device("meta")
    with pytest.raises(TypeError, match="prefer"):
        get_device(0)


@pytest.mark.parametrize("value", ["fast", "QUICKER", "ful"])
def test_an_unknown_profile_is_refused_at_setup_with_the_choices(monkeypatch, capsys, value):
    monkeypatch.setenv("TNB_PROFILE", value)
    with pytest.raises(ValueError, match="TNB_PROFILE must be one of quick, full"):
        setup()
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    "kwargs,exc,words",
    [
        ({"seed": -1}, ValueError, "seed"),
        ({"seed": 2**32}, ValueError, "seed"),
        ({"seed": 1.5}, TypeError, "seed"),
        ({"seed": True}, TypeError, "seed"),
        ({"threads": 0}, ValueError, "threads"),
        ({"threads": 2.0}, TypeError, "threads"),
    ],
)
def test_bad_setup_arguments_are_named(kwargs, exc, words):
    n = torch.get_num_threads()
    with pytest.raises(exc, match=words):
        setup(quiet=True, **kwargs)
    assert torch.get_num_threads() == n


@pytest.mark.parametrize("value,want", [(None, "full"), ("quick", "quick"), (" Full ", "full")])
def test_the_profile_comes_from_tnb_profile_and_defaults_to_full(monkeypatch, value, want):
    if value is None:
        monkeypatch.delenv("TNB_PROFILE", raising=False)
    else:
        monkeypatch.setenv("TNB_PROFILE", value)
    assert profile() == want and pick(quick=1, full=2) == {"quick": 1, "full": 2}[want]


def test_setup_seeds_and_reports(monkeypatch, capsys):
    monkeypatch.setenv("TNB_PROFILE", "quick")
    env = setup(seed=3)
    a = torch.randn(3)
    setup(seed=3)
    assert torch.equal(a, torch.randn(3))
    out = capsys.readouterr().out
    assert "profile: quick" in out and f"device: {env.device.type}" in out


def test_seed_everything_checks_its_seed():
    with pytest.raises(TypeError, match="seed"):
        seed_everything("0")
