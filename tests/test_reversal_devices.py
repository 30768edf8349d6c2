"""Where everything lives (issue 16 item 1): every public training, loading and decoding function of the
reversal task puts its models and returned tensors on the requested device, after a cache load, a refused
cache and a retrain too; data functions honour ``device``; models compute where they live.

On a CPU-only machine the only devices are the CPU and ``meta`` (shapes without storage): the builders are
checked against ``meta`` (a device other than the default), the functions that compute against the CPU,
and notebook 09's cache demo (cell 38, which failed on a GPU) is replayed call for call.
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


# --------------------------------------------------------------------------- builders honour device=


def test_data_builders_put_every_tensor_on_the_requested_device():
    g = lambda: torch.Generator().manual_seed(0)
    assert devices_of(rv.random_batch(4, generator=g())) == {CPU}  # default: the CPU
    assert devices_of(rv.random_batch(4, generator=g(), device="meta")) == {META}
    assert devices_of(rv.heldout_set(5, device="meta")) == {META}
    assert devices_of(rv.collate([([3, 4], [4, 3])], device="meta")) == {META}
    b = rv.heldout_set(5)
    assert b.to("meta").device == META and devices_of(b.to("meta")) == {META}
    stream = rv.batches(TINY, g(), exclude=b, device="meta")
    assert devices_of(next(stream)) == {META}
    fixed = rv.batches(replace(TINY, data="fixed", n_train=10, batch_size=4), g(), device="meta")
    assert devices_of([next(fixed) for _ in range(4)]) == {META}


def test_build_model_puts_the_model_on_the_requested_device(monkeypatch):
    assert devices_of(rv.build_model(TINY.model, TINY.init, device="meta")) == {META}
    monkeypatch.setattr(rv.recipes, "get_device", lambda: META)  # the default is env.get_device()
    assert devices_of(rv.build_model(TINY.model, TINY.init)) == {META}


def test_build_model_gives_the_same_weights_on_every_device():
    """Built on the CPU, then moved: the seed decides the weights, the device does not."""
    a = rv.build_model(TINY.model, TINY.init, seed=3, device="cpu")
    b = rv.build_model(TINY.model, TINY.init, seed=3, device="meta")
    assert all(x.shape == y.shape for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    c = rv.build_model(TINY.model, TINY.init, seed=3, device="cpu")
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), c.state_dict().values()))


# --------------------------------------------------------------------------- training and the cache


def _hist_tensors_on_cpu(hist):
    json.dumps({k: v for k, v in hist.items() if k != "snapshot"})  # plain numbers and lists
    assert devices_of(hist) <= {CPU}


def test_train_leaves_the_model_where_it_was_asked_and_the_history_on_the_cpu():
    model = rv.build_model(TINY.model, TINY.init, device="cpu")
    hist = rv.train(model, TINY, rv.heldout_set(20), eval_every=2, snapshot_at=2, device="cpu")
    assert devices_of(model) == {CPU} and hist["steps"] == 3
    assert devices_of(hist["snapshot"]) == {CPU}
    _hist_tensors_on_cpu(hist)


def _load_or_train(*args, **kw):
    name, model, config, train_fn = rv.run(*args, **kw)
    return model, *cache.load_or_train(name, model, config, train_fn)


def test_load_or_train_places_the_model_on_device_on_every_path(tmp_path, monkeypatch, capsys):
    """Trained now, loaded from the cache, refused (corrupt) and retrained: the model is on ``device`` each time."""
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    ev = rv.heldout_set(20)
    for expect in ("not cached", "loaded the trained", "damaged"):
        if expect == "damaged":
            (path,) = tmp_path.glob("reversal_devices_*.pt")
            path.write_bytes(b"not a torch file")
        model, hist, trained = _load_or_train(TINY, ev, eval_every=3, device="cpu")
        assert expect in capsys.readouterr().out
        assert trained == (expect != "loaded the trained")
        assert devices_of(model) == {CPU} and not model.training
        _hist_tensors_on_cpu(hist)
        assert rv.evaluate(model, ev)["n"] == 20  # and it computes where it lives


def test_run_defaults_to_the_device_setup_reports(tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    seen = []
    monkeypatch.setattr(training, "get_device", lambda: seen.append(1) or CPU)
    model, _, _ = _load_or_train(TINY, rv.heldout_set(10), eval_every=3)
    assert seen and devices_of(model) == {CPU}


def test_notebook_09_cache_demo_replayed(tmp_path, monkeypatch):
    """Cell 38 of notebook 09, call for call (it raised "index is on cuda:0, different from other tensors on cpu")."""
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    device = rv.model_device(rv.build_model(TINY.model, TINY.init))  # what env.device is in the notebook
    eval_batch = rv.heldout_set(50).to(device)
    tiny = replace(rv.IMPROVED, name="cache_demo", steps=3)
    name, _, config, _ = rv.run(tiny, eval_batch, eval_every=3)
    _load_or_train(tiny, eval_batch, eval_every=3)  # trains, saves
    cache.cache_path(name).write_bytes(b"not a torch file")  # corrupt it
    ok, msg, _ = cache.load(name, rv.build_model(tiny.model, tiny.init), config)
    assert not ok and "damaged" in msg
    model, h, trained = _load_or_train(tiny, eval_batch, eval_every=3)  # ... and retrained
    assert trained and h["steps"] == 3 and devices_of(model) == {device}
    assert rv.evaluate(model, eval_batch)["n"] == 50


# --------------------------------------------------------------------------- decoding computes where the model is


@pytest.fixture(scope="module")
def model():
    return rv.build_model(TINY.model, TINY.init, seed=0, device="cpu").eval()


def test_decoding_returns_every_tensor_on_the_models_device(model):
    b = rv.heldout_set(30)
    out = rv.greedy_decode(model, b.src)
    assert devices_of(out) == {CPU} and out.dtype == torch.long
    res = rv.evaluate(model, b)
    assert devices_of(res) == {CPU}
    assert devices_of(rv.score(res["pred"], b.tgt_out)) == {CPU}
    maps = rv.attention_maps(model, b.src[:2])
    assert devices_of(maps) == {CPU}
    assert isinstance(rv.failure_table(res)["n_wrong"], int)
    sweep = rv.length_sweep(model, [3, 4], n=5)
    assert all(isinstance(v, float) for r in sweep.values() for v in r.values())
    assert rv.model_device(model) == CPU


def test_decoding_leaves_the_train_mode_as_it_was(model):
    model.train()
    try:
        rv.greedy_decode(model, rv.heldout_set(3).src)
        rv.attention_maps(model, rv.heldout_set(2).src)
        assert model.training
    finally:
        model.eval()


def test_model_device_of_a_model_without_parameters():
    class Buffered(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("x", torch.zeros(1, device="meta"))

    assert rv.model_device(Buffered()) == META and rv.model_device(nn.Identity()) == CPU
    with pytest.raises(TypeError, match="nn.Module"):
        rv.model_device("model")


# --------------------------------------------------------------------------- what the GPU path changes


def test_padding_to_a_fixed_width_changes_neither_logits_nor_loss(model):
    """On a GPU every batch is padded to MAX_LEN (one shape for the CUDA graphs): the padding is invisible."""
    b = rv.random_batch(16, 3, 5, generator=torch.Generator().manual_seed(1))
    p = b.pad_to(rv.MAX_LEN)
    assert p.src.shape == (16, rv.MAX_LEN) and p.tgt_out.shape == (16, rv.MAX_LEN + 1) and b.pad_to(5) is b
    with torch.no_grad():
        a = model(b.src, keep=b.src_keep, tgt=b.tgt_in, tgt_keep=b.tgt_keep)[0]
        c = model(p.src, keep=p.src_keep, tgt=p.tgt_in, tgt_keep=p.tgt_keep)[0]
    real = b.tgt_keep
    assert torch.allclose(a[real], c[:, : a.shape[1]][real], atol=1e-5)
    assert torch.allclose(rv.loss_fn(a, b.tgt_out, 0.1), rv.loss_fn(c, p.tgt_out, 0.1), atol=1e-6)
    with pytest.raises(ValueError, match="smaller width"):
        p.pad_to(3)


def test_graphed_forward_routes_batches_and_gives_the_forward_back(monkeypatch, model, capsys):
    """The CUDA-graph wrapper's plumbing, with a stand-in for torch.cuda.make_graphed_callables."""
    calls = []

    def fake_make_graphed(module, args):
        eager = module.forward
        module.forward = lambda *a: calls.append("graph") or eager(*a)
        return module

    monkeypatch.setattr(torch.cuda, "make_graphed_callables", fake_make_graphed)
    b = rv.random_batch(4, generator=torch.Generator().manual_seed(0)).pad_to(rv.MAX_LEN)
    model.train()
    try:
        fwd = training._GraphedForward(model, b)
        fwd(b)  # the captured shape, training mode: the graph
        fwd(rv.Batch(*(t[:2] for t in b)))  # another shape: eager
        model.eval()
        fwd(b)  # eval mode: eager
        assert calls == ["graph"]
        assert "forward" not in model.__dict__  # the graphs wrap the logits, never the model's own forward
        fwd.close()
        assert "forward" not in fwd.logits.__dict__  # the graphs are dropped
    finally:
        model.eval()

    def failing(module, args):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(torch.cuda, "make_graphed_callables", failing)
    fwd = training._GraphedForward(model, b)
    assert fwd.graphed is None and "training eagerly" in capsys.readouterr().out
    model.train()
    assert fwd(b).shape == (4, rv.MAX_LEN + 1, rv.VOCAB_SIZE)
    model.eval()


def test_optimizer_kernel_per_device(model):
    opt, _ = rv.make_optimizer(model, TINY)
    assert opt.defaults["foreach"] is True and not opt.defaults.get("fused")


def test_the_gpu_training_path_end_to_end_with_a_stand_in_for_cuda_graphs(monkeypatch):
    """train()'s CUDA path on the CPU: fixed-width batches, the graphed forward for the captured shape, the
    model's own forward given back afterwards; the losses are the eager path's."""
    calls = []

    def fake_make_graphed(module, args):
        eager = module.forward
        module.forward = lambda *a: calls.append(tuple(a[0].shape)) or eager(*a)
        return module

    monkeypatch.setattr(torch.cuda, "make_graphed_callables", fake_make_graphed)
    recipe = replace(rv.IMPROVED, steps=4)
    # float64: padded and unpadded batches sum in other orders, and Adam carries that noise along (in
    # float32 it depends on the CPU's kernels); in float64 it stays about 1e-15.
    eager = rv.train(rv.build_model(recipe.model, recipe.init, device="cpu").double(), recipe, seed=2)
    monkeypatch.setattr(training, "_use_graphs", lambda device: True)
    model = rv.build_model(recipe.model, recipe.init, device="cpu").double()
    graphed = rv.train(model, recipe, seed=2)
    assert calls == [(recipe.batch_size, rv.MAX_LEN)] * 4  # every step: one fixed shape, through the graph
    assert "forward" not in model.__dict__
    assert graphed["loss"] == pytest.approx(eager["loss"], rel=1e-10)  # padding to MAX_LEN changes nothing
