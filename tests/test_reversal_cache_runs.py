"""The reversal task's runs through the cache (``rv.run``): the runs the cache lacks train in worker processes with
the results of training them here. (Cached runs loading without a worker and TNB_RETRAIN:
test_cache_load_or_train_many.py.)"""

from dataclasses import replace

import torch

from transformer_nb import cache
from transformer_nb import reversal as rv

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
