"""``lm_recipe.side_by_side``: the runs the cache lacks train in worker processes, with the same results."""

import pytest
import torch
import torch.nn as nn

from transformer_nb import cache, lm_recipe

ARGS = {"a": ("a", 0.1), "b": ("b", 0.2)}


def _make(name, lr, device, live):
    """A tiny run: a linear model fitted to a line by a few SGD steps (module level: the workers import it)."""
    torch.manual_seed(0)
    model, config = nn.Linear(1, 1).to(device), {"name": name, "lr": lr}

    def train_fn(m):
        x = torch.linspace(-1, 1, 16, device=device)[:, None]
        opt, losses = torch.optim.SGD(m.parameters(), lr=lr), []
        for _ in range(5):
            loss = (m(x) - 3 * x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return {"loss": losses}

    return cache.cache_name(f"side_{name}", config), model, config, train_fn


def _runs(tmp_path, monkeypatch, **kw):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    return lm_recipe.side_by_side(_make, ARGS, "cpu", **kw)


def test_runs_side_by_side_give_the_serial_results(tmp_path, monkeypatch):
    parallel = _runs(tmp_path / "par", monkeypatch, workers=2)
    serial = _runs(tmp_path / "ser", monkeypatch, workers=1)
    assert [t for _, _, t in parallel.values()] == [True, True] == [t for _, _, t in serial.values()]
    for (m_p, h_p, _), (m_s, h_s, _) in zip(parallel.values(), serial.values()):
        assert h_p["loss"] == pytest.approx(h_s["loss"], rel=1e-5) and h_p["loss"][-1] < h_p["loss"][0]
        torch.testing.assert_close(m_p.weight, m_s.weight)


def test_cached_runs_load_without_starting_a_worker(tmp_path, monkeypatch):
    _runs(tmp_path, monkeypatch, workers=1)
    monkeypatch.setattr(lm_recipe, "in_workers", lambda *a: pytest.fail("a worker was started for cached runs"))
    assert [t for _, _, t in _runs(tmp_path, monkeypatch, workers=2).values()] == [False, False]


def test_tnb_retrain_trains_each_run_once(tmp_path, monkeypatch):
    _runs(tmp_path, monkeypatch, workers=1)
    monkeypatch.setenv("TNB_RETRAIN", "1")
    calls = []

    def in_process(fn, jobs, workers):
        calls.extend(args[0] for _, args in jobs)
        return [fn(*job) for job in jobs]

    monkeypatch.setattr(lm_recipe, "in_workers", in_process)
    again = _runs(tmp_path, monkeypatch, workers=2)
    assert [t for _, _, t in again.values()] == [True, True] and sorted(calls) == ["a", "b"]
