"""``cache.load_or_train_many``: cached runs load, the missing ones train (in worker processes on the CPU,
``cache.in_workers``), with the results of training them one after the other here."""

import pytest
import torch
import torch.nn as nn

from transformer_nb import cache

ARGS = {"a": dict(name="a", lr=0.1), "b": dict(name="b", lr=0.2)}


def _make(name, lr, live):
    """A tiny run: a linear model fitted to a line by a few gradient steps (module level: the workers import it;
    written out, as torch.optim's first use costs a worker a second importing torch._dynamo).
    ``lr < 0`` fails in training."""
    torch.manual_seed(0)
    model, config = nn.Linear(1, 1), {"name": name, "lr": lr}

    def train_fn(m):
        if lr < 0:
            raise ValueError(f"a negative learning rate {lr}")
        x, losses = torch.linspace(-1, 1, 16)[:, None], []
        for _ in range(5):
            loss = (m(x) - 3 * x).pow(2).mean()
            grads = torch.autograd.grad(loss, list(m.parameters()))
            with torch.no_grad():
                for p, g in zip(m.parameters(), grads):
                    p -= lr * g
            losses.append(loss.item())
        return {"loss": losses, "live": live, "threads": torch.get_num_threads()}

    return cache.cache_name(f"many_{name}", config), model, config, train_fn


def _runs(tmp_path, monkeypatch, args=ARGS, workers=2, **kw):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    return cache.load_or_train_many(_make, args, workers, live="shown", **kw)


def _flags(runs: dict) -> dict:
    return {k: trained for k, (_, _, trained) in runs.items()}


def test_runs_retrained_in_workers_that_print_nothing_give_the_serial_results_in_order_on_one_thread_each(
    tmp_path, monkeypatch, capfd
):
    serial = {k: (m, dict(h), t) for k, (m, h, t) in _runs(tmp_path, monkeypatch, workers=1).items()}  # trained here
    files = {k: cache.cache_path(_make(**a, live=None)[0]) for k, a in ARGS.items()}
    before = {k: f.stat().st_mtime_ns for k, f in files.items()}
    capfd.readouterr()
    parallel = _runs(tmp_path, monkeypatch, workers=2, retrain=True)
    out = capfd.readouterr().out
    assert _flags(parallel) == {"a": True, "b": True} == _flags(serial)
    assert out.count("(retraining asked for)") == 2, out  # the parent's line per run; none from the workers
    assert all(f.stat().st_mtime_ns > before[k] for k, f in files.items()), "a run was not saved again"
    for (m_p, h_p, _), (m_s, h_s, _) in zip(parallel.values(), serial.values()):
        assert h_p["loss"] == h_s["loss"] and h_p["loss"][-1] < h_p["loss"][0]
        assert torch.equal(m_p.weight, m_s.weight) and torch.equal(m_p.bias, m_s.bias) and not m_p.training
        assert (h_p["live"], h_s["live"]) == (None, "shown")  # a worker shows nothing, a run trained here does
        assert h_p["threads"] == 1  # cache.in_workers: each worker on one thread
    assert parallel["a"][1]["loss"] != parallel["b"][1]["loss"]  # so results handed back out of order would show


def test_cached_runs_load_and_only_the_missing_ones_train(tmp_path, monkeypatch):
    _runs(tmp_path, monkeypatch, {"a": ARGS["a"]})  # "a" is cached now
    monkeypatch.setattr(cache, "in_workers", lambda *a: pytest.fail("a worker was started for one missing run"))
    runs = _runs(tmp_path, monkeypatch)
    assert _flags(runs) == {"a": False, "b": True} and runs["b"][1]["live"] == "shown"  # one missing run: here
    jobs = []

    def in_process(fn, todo, workers):  # records what would go to the workers, and runs it here
        jobs.extend(args for _, args in todo)
        return [fn(*job) for job in todo]

    monkeypatch.setattr(cache, "in_workers", in_process)
    args = {**ARGS, "c": dict(name="c", lr=0.3), "d": dict(name="d", lr=0.4)}
    runs = _runs(tmp_path, monkeypatch, args)
    assert _flags(runs) == {"a": False, "b": False, "c": True, "d": True} and jobs == [args["c"], args["d"]]
    assert not any(_flags(_runs(tmp_path, monkeypatch, args)).values())  # all cached now
    assert len(jobs) == 2, "a worker was given a cached run"


def test_an_error_in_a_worker_is_raised_here_naming_the_run(tmp_path, monkeypatch):
    args = {"a": ARGS["a"], "bad": dict(name="bad", lr=-1.0)}
    with pytest.raises(ValueError, match="a negative learning rate") as info:
        _runs(tmp_path, monkeypatch, args)
    name = _make(**args["bad"], live=None)[0]
    assert any(name in note and "worker process" in note for note in getattr(info.value, "__notes__", []))
    assert cache.cache_path(_make(**ARGS["a"], live=None)[0]).is_file(), "the run that finished was lost"
