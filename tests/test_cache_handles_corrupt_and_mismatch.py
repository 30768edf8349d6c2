"""The trained-model cache never crashes a notebook: corrupt or mismatched files retrain."""

import torch
import torch.nn as nn

from transformer_nb import cache


def _train(model):
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(0.5)
    return {"losses": [3.0, 2.0, 1.0]}


def test_second_run_loads_instead_of_training(tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    extra, trained = cache.load_or_train("m", nn.Linear(3, 2), {"d": 3}, _train)
    assert trained and extra["losses"] == [3.0, 2.0, 1.0]
    model = nn.Linear(3, 2)
    extra, trained = cache.load_or_train("m", model, {"d": 3}, _train)  # the same training code: loaded, not run
    assert not trained and extra["losses"] == [3.0, 2.0, 1.0]
    assert torch.all(model.weight == 0.5)


def test_corrupt_cache_retrains_with_message(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    (tmp_path / "m.pt").write_bytes(b"this is not a torch file")
    _, trained = cache.load_or_train("m", nn.Linear(3, 2), {"d": 3}, _train)
    assert trained
    assert "corrupt" in capsys.readouterr().out
    # the retrained result replaced the corrupt file and loads cleanly
    ok, msg, _ = cache.load("m", nn.Linear(3, 2), {"d": 3})
    assert ok, msg


def test_truncated_cache_retrains(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    cache.save("m", nn.Linear(3, 2), {"d": 3})
    data = (tmp_path / "m.pt").read_bytes()
    (tmp_path / "m.pt").write_bytes(data[: len(data) // 2])
    _, trained = cache.load_or_train("m", nn.Linear(3, 2), {"d": 3}, _train)
    assert trained and "corrupt" in capsys.readouterr().out


def test_other_configuration_retrains(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    cache.save("m", nn.Linear(3, 2), {"d": 3, "steps": 10})
    _, trained = cache.load_or_train("m", nn.Linear(3, 2), {"d": 3, "steps": 20}, _train)
    assert trained and "another configuration" in capsys.readouterr().out


def test_weights_that_do_not_fit_retrain(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    cache.save("m", nn.Linear(4, 2), {"d": 3})  # same config, different shapes
    _, trained = cache.load_or_train("m", nn.Linear(3, 2), {"d": 3}, _train)
    assert trained and "does not fit" in capsys.readouterr().out


def test_pickled_code_is_refused(tmp_path, monkeypatch, capsys):
    """weights_only=True: a cache holding arbitrary Python objects is not unpickled."""
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    torch.save({"config": "{}", "state_dict": {}, "extra": {"obj": object()}}, tmp_path / "m.pt")
    ok, msg, _ = cache.load("m", nn.Linear(3, 2), {})
    assert not ok and "corrupt" in msg


def test_retrain_flag_forces_training(tmp_path, monkeypatch):
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    cache.load_or_train("m", nn.Linear(3, 2), {"d": 3}, _train)
    calls = []
    cache.load_or_train("m", nn.Linear(3, 2), {"d": 3}, lambda m: calls.append(1), retrain=True)
    assert calls == [1]
