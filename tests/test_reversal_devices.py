"""Where everything lives (issue 16 item 1): every public training, loading and decoding function of the
reversal task puts its models and returned tensors on the requested device, after a cache load, a refused
cache and a retrain too; data functions honour ``device``; models compute where they live.

On a CPU-only machine the only devices are the CPU and ``meta`` (shapes without storage): the builders are
checked against ``meta`` (a device other than the default), the functions that compute against the CPU.
"""

import json
from dataclasses import replace

import pytest
import torch
import torch.nn as nn
from device_helpers import devices_of

from transformer_nb import cache
from transformer_nb import reversal as rv
from transformer_nb.reversal import training

CPU, META = torch.device("cpu"), torch.device("meta")
TINY = replace(rv.IMPROVED, name="devices", steps=3)


def test_builders_put_every_tensor_on_the_requested_device(monkeypatch):
    g = lambda: torch.Generator().manual_seed(0)
    assert devices_of(rv.random_batch(4, generator=g())) == {CPU}  # default: the CPU
    assert devices_of(rv.random_batch(4, generator=g(), device="meta")) == {META}
    assert devices_of(rv.heldout_set(5, device="meta")) == {META}
    assert devices_of(rv.collate([([3, 4], [4, 3])], device="meta")) == {META}
    assert devices_of(next(rv.batches(TINY, g(), exclude=rv.heldout_set(5), device="meta"))) == {META}
    fixed = rv.batches(replace(TINY, data="fixed", n_train=10, batch_size=4), g(), device="meta")
    assert devices_of([next(fixed) for _ in range(4)]) == {META}
    assert devices_of(rv.build_model(TINY.model, TINY.init, device="meta")) == {META}
    monkeypatch.setattr(rv.recipes, "get_device", lambda: META)  # the default is env.get_device()
    assert devices_of(rv.build_model(TINY.model, TINY.init)) == {META}


def test_load_or_train_places_the_model_on_device_on_every_path(tmp_path, monkeypatch, capsys):
    """Trained now (on the device setup reports), loaded from the cache (the same weights), refused (corrupt) and
    retrained: the model is on the device each time, its history plain numbers on the CPU; one file per recipe."""
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    seen = []
    monkeypatch.setattr(training, "get_device", lambda: seen.append(1) or CPU)
    ev, weights = rv.heldout_set(20), []
    for expect in ("not cached", "loaded the trained", "damaged"):
        if expect == "damaged":
            (path,) = tmp_path.glob("reversal_devices_*.pt")
            path.write_bytes(b"not a torch file")
        name, model, config, train_fn = rv.run(TINY, ev, eval_every=3)
        hist, trained = cache.load_or_train(name, model, config, train_fn)
        assert expect in capsys.readouterr().out
        assert trained == (expect != "loaded the trained") and hist["steps"] == 3
        assert devices_of(model) == {CPU} and not model.training
        json.dumps(hist)  # plain numbers and lists
        assert rv.evaluate(model, ev)["n"] == 20  # and it computes where it lives
        weights.append(model.state_dict())
    assert seen and all(torch.equal(a, b) for a, b in zip(weights[0].values(), weights[1].values()))  # loaded
    cache.load_or_train(*rv.run(replace(TINY, lr=TINY.lr / 2), ev, eval_every=3))
    assert len(list(tmp_path.glob("reversal_devices_*.pt"))) == 2  # one file per recipe


def test_decoding_returns_tensors_on_the_models_device_and_leaves_its_mode():
    model = rv.build_model(TINY.model, TINY.init, seed=0, device="cpu").train()
    b = rv.heldout_set(30)
    assert devices_of(rv.greedy_decode(model, b.src)) == {CPU}
    res = rv.evaluate(model, b)
    assert devices_of(res) == {CPU} and devices_of(rv.attention_maps(model, b.src[:2])) == {CPU}
    assert isinstance(rv.failure_table(res)["n_wrong"], int)
    sweep = rv.length_sweep(model, [3, 4], n=5)
    assert all(isinstance(v, float) for r in sweep.values() for v in r.values())
    assert model.training  # decoding switched to eval mode and back


def test_model_device_of_a_model_without_parameters():
    class Buffered(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("x", torch.zeros(1, device="meta"))

    assert rv.model_device(Buffered()) == META and rv.model_device(nn.Identity()) == CPU
    with pytest.raises(TypeError, match="nn.Module"):
        rv.model_device("model")
