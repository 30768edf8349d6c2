"""The profile comes from TNB_PROFILE; a typo is an error, not a silent default."""

import pytest
import torch

from transformer_nb import pick, profile, setup


def test_default_profile_is_full(monkeypatch):
    monkeypatch.delenv("TNB_PROFILE", raising=False)
    assert profile() == "full" and pick(quick=1, full=2) == 2


def test_quick_profile(monkeypatch):
    monkeypatch.setenv("TNB_PROFILE", "quick")
    assert pick(quick=1, full=2) == 1


def test_unknown_profile_is_an_error(monkeypatch):
    monkeypatch.setenv("TNB_PROFILE", "fast")
    with pytest.raises(ValueError, match="TNB_PROFILE"):
        profile()


def test_setup_seeds_and_reports(monkeypatch, capsys):
    monkeypatch.setenv("TNB_PROFILE", "quick")
    env = setup(seed=3)
    a = torch.randn(3)
    setup(seed=3)
    assert torch.equal(a, torch.randn(3))
    out = capsys.readouterr().out
    assert "profile: quick" in out and f"device: {env.device.type}" in out
