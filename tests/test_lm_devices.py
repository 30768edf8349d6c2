"""Where everything lives (issue 16 item 1) for the language model: every public training, loading and
generation function puts its models, caches, batches and returned tensors on the requested device, after a
cache load, a refused cache and a retrain too.

On a CPU-only machine the only devices are the CPU and ``meta`` (shapes without storage). The forward
paths (plain and cached), the loss and the batch iterators are run on ``meta``, a device other than the
one the data start on; the functions that need numbers (training, evaluation, generation, the cache) on
the CPU, with the device given explicitly and by default (``env.get_device``).
"""

import math
from pathlib import Path

import pytest
import torch
from device_helpers import devices_of

from transformer_nb import cache, lm_recipe, small_corpus
from transformer_nb.bench.kvcache import time_generation
from transformer_nb.core.generation import generate
from transformer_nb.core.output_head import frequency_ranks
from transformer_nb.core.transformer import Transformer
from transformer_nb.lm_training import TrainConfig, stream_batches, train_lm, window_batches
from transformer_nb.lstm import LSTMLM
from transformer_nb.perplexity import evaluate
from transformer_nb.wikitext import Vocab, WikiText2

CPU, META = torch.device("cpu"), torch.device("meta")
V = 60


def fake_data(n=4000) -> WikiText2:
    g = torch.Generator().manual_seed(0)
    vocab = Vocab([f"w{i}" for i in range(V - 2)])
    split = lambda k: torch.randint(0, V, (k,), generator=g)
    return WikiText2(train=split(n), valid=split(600), test=split(600), vocab=vocab, folder=Path("."))


@pytest.fixture
def tiny_recipe(monkeypatch, tmp_path):
    """The recipes shrunk to seconds, and an empty cache folder."""
    monkeypatch.setenv("TNB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TNB_RETRAIN", raising=False)
    small = dict(cutoffs=(10, 30), d_model=16)
    tiny_tf = lm_recipe.RECIPE_MODEL.with_(**small, n_heads=2, d_ff=32, max_len=64)
    monkeypatch.setattr(lm_recipe, "RECIPE_MODEL", tiny_tf)
    monkeypatch.setattr(lm_recipe, "LSTM_MODEL", {**lm_recipe.LSTM_MODEL, **small, "hidden_size": 16})
    monkeypatch.setattr(lm_recipe, "RECIPE_TRAIN", {**lm_recipe.RECIPE_TRAIN, "batch_size": 4, "seq_len": 16})
    monkeypatch.setattr(lm_recipe, "LSTM_TRAIN", {**lm_recipe.LSTM_TRAIN, "batch_size": 4, "seq_len": 16})
    return tmp_path


@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "rope"])  # ALiBi's mask check reads values
def test_the_forward_paths_compute_where_the_model_lives(positions):
    sizes = dict(d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=32)
    m = Transformer(vocab=V, **sizes, positions=positions, output_bias=True).to(META).eval()
    ids = torch.zeros(2, 8, dtype=torch.long, device=META)
    assert m.hidden(ids)[0].device == META
    h, state = m.hidden(ids, m.init_state())
    h, state = m.hidden(ids[:, :1], state)
    assert devices_of([h, [(c.k, c.v) for c in state]]) == {META} and state[0].length == 9
    _, loss = m(ids, ids)
    assert loss.device == META and m.log_probs(ids).device == META
    lstm = LSTMLM(V, 16, 16, head="full").to(META)
    state = lstm.init_state()
    _, loss = lstm(ids, ids, state=state)
    assert devices_of([loss, state]) == {META}
    stream = torch.randint(0, V, (500,))  # the batches are cut on the CPU and made on the requested device
    for batches in (window_batches(stream, 4, 16, device=META), stream_batches(stream, 4, 16, device=META)):
        x, y, _ = next(batches)
        assert devices_of([x, y]) == {META} and x.shape == y.shape == (4, 16)


@pytest.mark.parametrize("kind", ["transformer", "lstm"])
def test_training_evaluation_and_generation_stay_on_the_model_device(kind):
    ranks = frequency_ranks(torch.randint(0, V, (2000,)), V)
    extra = {} if kind == "lstm" else {"n_heads": 2}
    m = lm_recipe.build_model(kind, V, ranks, d_model=16, cutoffs=(10, 30), **extra).to(CPU)
    cfg = TrainConfig(steps=3, batch_size=4, seq_len=16, eval_every=3, eval_tokens=200, contiguous=kind == "lstm")
    hist = train_lm(m, torch.randint(0, V, (1000,)), cfg, valid_ids=torch.randint(0, V, (300,)), live=False, bar=False)
    assert devices_of(m) == {CPU} and devices_of(hist) == set()  # the history holds plain numbers only
    assert devices_of(evaluate(m, torch.randint(0, V, (300,)), 16)) == set()
    out = generate(m, torch.tensor([1, 2, 3]), 5, temperature=1.0, top_k=5, seed=1)
    assert out.device == CPU and out.dtype == torch.long and out.shape == (8,)
    if kind == "transformer":
        assert time_generation(m, torch.tensor([1, 2]), [3])["identical"]


def _load_or_train(*args, retrain=False, **kw):
    name, model, config, train_fn = lm_recipe.run(*args, **kw)
    return model, *cache.load_or_train(name, model, config, train_fn, retrain)


@pytest.mark.parametrize("kind", ["transformer", "lstm"])
@pytest.mark.parametrize("device", [None, "cpu"])
def test_load_or_train_returns_the_model_on_its_device_after_train_load_refusal_and_retrain(
    tiny_recipe, monkeypatch, kind, device
):
    monkeypatch.setattr(lm_recipe, "get_device", lambda: CPU)  # the default device, as setup() picks it
    data = fake_data()
    for expect_trained in (True, False):  # trained now, then loaded
        m, hist, trained = _load_or_train(kind, data, steps=3, live=False, eval_tokens=200, device=device)
        assert trained is expect_trained and not m.training
        assert devices_of(m) == {CPU} and devices_of(hist) <= {CPU}
        assert generate(m, data.valid[:3], 3).device == CPU
    (path,) = tiny_recipe.glob(f"wikitext2_{kind}_*.pt")
    raw = bytearray(path.read_bytes())
    for i in range(len(raw) // 2, len(raw) // 2 + 256):  # flipped bytes (more than a record's alignment padding,
        raw[i] ^= 0xFF  # so some are tensor data): the cache refuses the file and retrains
    path.write_bytes(bytes(raw))
    m, hist, trained = _load_or_train(kind, data, steps=3, live=False, eval_tokens=200, device=device)
    assert trained and devices_of(m) == {CPU} and devices_of(hist) <= {CPU}
    m, _, trained = _load_or_train(kind, data, steps=3, live=False, eval_tokens=200, retrain=True)
    assert trained and devices_of(m) == {CPU}


def test_exercise_8_9_comes_back_on_the_cpu(tiny_recipe, monkeypatch):
    monkeypatch.setattr(small_corpus, "EX89_TRANSFORMER", small_corpus.EX89_TRANSFORMER.with_(d_model=16))
    monkeypatch.setattr(small_corpus, "EX89_TRAIN", {"batch_size": 4, "seq_len": 32, "lr": 1e-3})
    out = small_corpus.exercise_8_9(fake_data(), n_tokens=400, epochs=1, device="cpu")
    assert all(devices_of(m) == {CPU} for m in out["models"].values())
    assert set(out["ppl"]) == {"Transformer", "LSTM"} and cache.cache_dir() == tiny_recipe


def test_comparisons_and_final_perplexities_are_computed_once(tiny_recipe, monkeypatch):
    monkeypatch.setattr(lm_recipe, "get_device", lambda: CPU)
    data = fake_data()
    variants = {"recipe": ({}, {}), "AdamW only": ({}, {"optimizer": "adamw", "adamw_lr": None})}
    first = lm_recipe.compare(variants, data, budget_s=0.3, eval_tokens=200)
    assert set(first) == set(variants) and all(h["steps"] > 0 and h["val_ppl"] for h in first.values())
    m, _, _ = _load_or_train("transformer", data, steps=2, live=False, eval_tokens=200)
    cfg = lm_recipe.recipe_config("transformer", steps=2)
    scores = lm_recipe.final_perplexities({"tf": (m, cfg)}, data, key={"tf": "tiny"})
    monkeypatch.setattr(lm_recipe, "train_lm", lambda *a, **k: pytest.fail("trained again"))
    monkeypatch.setattr(lm_recipe, "evaluate", lambda *a, **k: pytest.fail("scored again"))
    assert lm_recipe.compare(variants, data, budget_s=0.3, eval_tokens=200) == first
    assert lm_recipe.final_perplexities({"tf": (m, cfg)}, data, key={"tf": "tiny"}) == scores
    assert set(scores["tf"]) == {"valid", "test"} and all(math.isfinite(v) for v in scores["tf"].values())
