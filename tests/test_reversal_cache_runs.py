"""The reversal task's runs through the cache (``rv.run``): the runs the cache lacks train in worker processes with
the results of training them here; cached ones load without a worker."""

from dataclasses import replace

import torch

from transformer_nb import cache
from transformer_nb import reversal as rv
from transformer_nb.reversal import training

RUNS = [replace(rv.IMPROVED, name="par_a", steps=4), replace(rv.IMPROVED, name="par_b", steps=4, lr=1e-3)]


def _many(tmp_path, monkeypatch, workers, **kw):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    runs = {r.name: dict(recipe=r, eval_batch=rv.heldout_set(20), eval_every=2, device="cpu") for r in RUNS}
    return list(cache.load_or_train_many(rv.run, runs, workers, **kw).values())


def test_parallel_runs_give_the_serial_histories(tmp_path, monkeypatch):
    parallel = _many(tmp_path / "par", monkeypatch, workers=2)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # what each worker uses
    try:
        serial = _many(tmp_path / "ser", monkeypatch, workers=1)
    finally:
        torch.set_num_threads(threads)
    assert [t for _, _, t in parallel] == [True, True] == [t for _, _, t in serial]
    for (m_p, h_p, _), (m_s, h_s, _) in zip(parallel, serial):
        assert h_p["steps"] == h_s["steps"] == 4 and h_p["exact_match"] == h_s["exact_match"]
        assert h_p["loss"] == h_s["loss"]  # one thread each, the same seed: bit for bit
        assert all(torch.equal(a, b) for a, b in zip(m_p.state_dict().values(), m_s.state_dict().values()))


def test_cached_runs_load_without_a_worker_and_tnb_retrain_trains_each_once(tmp_path, monkeypatch):
    _many(tmp_path, monkeypatch, workers=1)
    monkeypatch.setattr(cache, "in_workers", lambda *a: (_ for _ in ()).throw(AssertionError("a worker started")))
    assert [t for _, _, t in _many(tmp_path, monkeypatch, workers=2)] == [False, False]
    monkeypatch.setenv("TNB_RETRAIN", "1")
    calls, real = [], training.train

    def counted(*args, **kwargs):
        calls.append(args[1].name)
        return real(*args, **kwargs)

    monkeypatch.setattr(training, "train", counted)
    monkeypatch.setattr(cache, "in_workers", lambda fn, jobs, workers: [fn(*job) for job in jobs])  # in-process
    again = _many(tmp_path, monkeypatch, workers=2)
    assert [t for _, _, t in again] == [True, True] and sorted(calls) == ["par_a", "par_b"]
