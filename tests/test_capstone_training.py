"""The capstone's training run (notebook 12, step 8): the package's loop trains a model built from the
student's classes, the cache keeps it, the package's Transformer holds the same weights, and the loss check
passes a run that learned and names what went wrong in runs that did not."""

import math
from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn

from transformer_nb import cache, wikitext
from transformer_nb.exercises import capstone_train as ct
from transformer_nb.exercises.capstone_lm import package_logits
from transformer_nb.exercises.solutions import capstone as sol

TINY = ct.CAPSTONE_MODEL.with_(d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16)
V = 20


@pytest.fixture
def tiny(monkeypatch, tmp_path, one_thread):
    """A tiny model on a corpus it can learn (0 1 2 ... 19 0 1 2 ...), the quick profile, a fresh cache."""
    monkeypatch.setenv("TNB_PROFILE", "quick")
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TNB_RETRAIN", raising=False)
    monkeypatch.setattr(ct, "CAPSTONE_MODEL", TINY)
    monkeypatch.setitem(ct.CAPSTONE_TRAIN, "batch_size", 8)
    monkeypatch.setitem(ct.CAPSTONE_TRAIN, "seq_len", 8)
    monkeypatch.setitem(ct.CAPSTONE_TRAIN, "bf16", False)
    monkeypatch.setitem(ct.CAPSTONE_RUN, "quick", dict(steps=60, eval_tokens=200, eval_points=3))
    ids = torch.arange(4000) % V
    return SimpleNamespace(train=ids, valid=ids[:400], vocab=[str(i) for i in range(V)])


def _load_or_train(model_cls, data, who):
    name, model, config, train_fn = ct.training_run(model_cls, data, who, live=False)
    return (model, *cache.load_or_train(name, model, config, train_fn))


def test_train_check_cache_and_reload(tiny):
    nothing, message = ct.load_trained(V)
    assert nothing is None and "is not cached" in message
    model, hist, trained = _load_or_train(sol.LanguageModel, tiny, "reference")
    assert trained and hist["steps"] == 60 and hist["eval_step"][0] == 0 and len(hist["val_loss"]) >= 3
    assert ct.training_check(hist, V, threshold=2.5, quiet=True).passed
    again, hist2, trained2 = _load_or_train(sol.LanguageModel, tiny, "reference")
    assert not trained2 and hist2["val_loss"] == hist["val_loss"]
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))
    loaded, hist3 = ct.load_trained(V)
    assert loaded is not None and torch.equal(loaded.bias, model.bias)


@pytest.mark.parametrize(
    ("hist", "words"),
    [
        ({}, "did the training run"),
        ({"loss": [3.0, float("nan"), 2.0], "val_loss": [3.0, 2.0]}, "NaN"),
        ({"loss": [9.0, 3.0], "val_loss": [3.0, 2.0]}, "Start the weights smaller"),
        ({"loss": [3.0, 3.0], "val_loss": [3.0, 2.99]}, "did not fall"),
        ({"loss": [3.0, 2.0], "val_loss": [3.0, 1.5]}, "not below 1.00"),
    ],
    ids=["empty", "NaN", "loud start", "flat", "above the threshold"],
)
def test_runs_that_miss_the_threshold_get_a_reason(hist, words):
    result = ct.training_check(hist, V, threshold=1.0, quiet=True)
    assert not result.passed and words in result.message


def test_a_run_worse_than_the_unigram_model_gets_no_tick():
    """Quick profile, stubs untouched: the reference learns (7.89 < 8.2 nats) but its perplexity 2,671 is above the
    unigram model's 1,157; the check must not print a ✓."""
    hist = {"loss": [10.4] * 24, "val_loss": [10.4, 8.4, 7.89]}
    result = ct.training_check(hist, 33_278, threshold=8.2, baseline=1_157, quiet=True)
    assert not result.message.startswith("✓") and "unigram model's 1,157" in result.message
    assert ct.training_check(hist, 33_278, threshold=8.2, baseline=3_000, quiet=True).message.startswith("✓")


def test_the_package_model_holds_the_same_weights_and_logits():
    torch.manual_seed(0)
    model = sol.LanguageModel(V, *ct.sizes(TINY))
    ids = torch.randint(0, V, (2, 10))
    twin = ct.to_package(model, V, TINY)
    with torch.no_grad():
        torch.testing.assert_close(package_logits(twin, ids), model(ids), atol=1e-5, rtol=1e-5)


def test_attention_maps_are_causal_rows_of_weights():
    torch.manual_seed(0)
    model = sol.LanguageModel(V, 16, 2, 32, 3, 16)
    maps = ct.attention_maps(model, torch.randint(0, V, (9,)))
    assert maps.shape == (3, 2, 9, 9)
    torch.testing.assert_close(maps.sum(-1), torch.ones(3, 2, 9))
    assert (maps.triu(1) == 0).all()


def test_the_validation_loss_is_the_package_evaluation(tiny):
    torch.manual_seed(0)
    model = sol.LanguageModel(V, *ct.sizes(TINY))
    ids = tiny.valid[:161]
    # evaluate's 16 streams of 10 targets, each starting with the last word of the one before; windows of 8
    windows = wikitext.iter_batches(ids.unfold(0, 11, 10), 8)
    with torch.no_grad():
        logits, targets = zip(*((model(x).flatten(0, 1), y.flatten()) for x, y in windows))
        direct = nn.functional.cross_entropy(torch.cat(logits), torch.cat(targets)).item()
    assert math.isclose(ct.validation_loss(model, ids), direct, rel_tol=1e-5)
