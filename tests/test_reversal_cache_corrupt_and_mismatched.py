"""The reversal model's cache: a re-run loads the weights; a corrupt or mismatched file retrains."""

import json
from dataclasses import replace

import torch

from transformer_nb import cache
from transformer_nb import reversal as rv

TINY = replace(rv.IMPROVED, name="tiny", steps=3)


def _run(tmp_path, monkeypatch, recipe=TINY, **kw):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    return rv.load_or_train(recipe, rv.heldout_set(20), eval_every=2, **kw)


def test_second_run_loads_the_same_weights(tmp_path, monkeypatch):
    m1, h1, trained1 = _run(tmp_path, monkeypatch)
    m2, h2, trained2 = _run(tmp_path, monkeypatch)
    assert trained1 and not trained2
    assert h1["steps"] == h2["steps"] == 3 and h2["loss"] == h1["loss"]
    for a, b in zip(m1.state_dict().values(), m2.state_dict().values()):
        assert torch.equal(a, b)
    # retrain=True trains again even though the cache is good
    _, _, trained3 = _run(tmp_path, monkeypatch, retrain=True)
    assert trained3


def _only_file(tmp_path):
    files = list(tmp_path.glob("reversal_tiny_*.pt"))
    assert len(files) == 1
    return files[0]


def test_corrupt_cache_gives_a_message_and_retrains(tmp_path, monkeypatch, capsys):
    _run(tmp_path, monkeypatch)
    path = _only_file(tmp_path)
    path.write_bytes(b"\x00garbage, not a torch file")
    capsys.readouterr()
    model, hist, trained = _run(tmp_path, monkeypatch)
    out = capsys.readouterr().out
    assert trained and "corrupt" in out and hist["steps"] == 3
    ok, msg, _ = cache.load(path.stem, rv.build_model(TINY.model, TINY.init), _config_of(path))
    assert ok, msg  # the retrained model replaced the corrupt file


def test_truncated_cache_retrains(tmp_path, monkeypatch, capsys):
    _run(tmp_path, monkeypatch)
    path = _only_file(tmp_path)
    path.write_bytes(path.read_bytes()[:1000])
    capsys.readouterr()
    _, _, trained = _run(tmp_path, monkeypatch)
    assert trained and "corrupt" in capsys.readouterr().out


def _config_of(path):

    return json.loads(torch.load(path, weights_only=True)["config"])


def test_weights_of_another_model_shape_retrain(tmp_path, monkeypatch, capsys):
    """Same name and config, but the file holds a d_model=32 model: 'does not fit', then retrain."""
    _run(tmp_path, monkeypatch)
    path = _only_file(tmp_path)
    config = _config_of(path)
    small = rv.build_model(rv.MODEL.with_(d_model=32, d_ff=64))
    cache.save(path.stem, small, config)
    capsys.readouterr()
    _, _, trained = _run(tmp_path, monkeypatch)
    assert trained and "does not fit" in capsys.readouterr().out


def test_file_saved_for_another_configuration_retrains(tmp_path, monkeypatch, capsys):
    _run(tmp_path, monkeypatch)
    path = _only_file(tmp_path)
    config = _config_of(path)
    config["recipe"]["lr"] = 0.5
    cache.save(path.stem, rv.build_model(TINY.model, TINY.init), config)
    capsys.readouterr()
    _, _, trained = _run(tmp_path, monkeypatch)
    assert trained and "another configuration" in capsys.readouterr().out


def test_different_recipes_use_different_files(tmp_path, monkeypatch):
    _run(tmp_path, monkeypatch)
    _run(tmp_path, monkeypatch, recipe=replace(TINY, lr=TINY.lr / 2))
    assert len(list(tmp_path.glob("reversal_tiny_*.pt"))) == 2
