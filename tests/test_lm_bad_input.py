"""Bad input to the language-model API gets a ValueError/TypeError that names the argument (issue 18),
never a silent wrong result, a NaN or an obscure crash from inside torch."""

import math

import pytest
import torch

from transformer_nb import lm_recipe
from transformer_nb.core.generation import generate, sample_next, top_k_filter
from transformer_nb.core.multihead import KVCache
from transformer_nb.core.output_head import OutputHead, frequency_ranks
from transformer_nb.core.transformer import Transformer
from transformer_nb.lm_training import TrainConfig, train_lm
from transformer_nb.lstm import LSTMLM
from transformer_nb.perplexity import evaluate, unigram_perplexity
from transformer_nb.small_corpus import sample_corpus, train_epochs

V = 50


def tiny(positions="rope", head="tied"):
    torch.manual_seed(0)
    sizes = dict(d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=32)
    return Transformer(vocab=V, **sizes, positions=positions, **lm_recipe.HEAD_FIELDS[head])


def lstm():
    torch.manual_seed(0)
    return LSTMLM(V, 16, 16, head="full")


# --------------------------------------------------------------------------- the findings of issue 18


@pytest.mark.parametrize("use_cache", [True, False])
def test_a_float_prompt_is_refused_not_truncated(use_cache):
    with pytest.raises(TypeError, match="prompt must be a 1-D integer tensor of word ids, got torch.float32"):
        generate(tiny(), torch.tensor([1.9, 2.7]), 3, use_cache=use_cache)


@pytest.mark.parametrize("k", [-1, -5])
def test_negative_top_k_is_refused_not_ignored(k):
    with pytest.raises(ValueError, match="top_k must be >= 0"):
        generate(tiny(), torch.tensor([1, 2]), 3, temperature=1.0, top_k=k)
    with pytest.raises(ValueError, match="top_k must be >= 0"):
        top_k_filter(torch.zeros(1, 5), k)


def test_the_bf16_rope_model_generates_with_the_kv_cache():
    m = tiny("rope", "tied").to(torch.bfloat16)
    out = generate(m, torch.tensor([1, 2, 3]), 10, use_cache=True)
    assert out.shape == (13,) and out.dtype == torch.long and int(out.min()) >= 0 and int(out.max()) < V
    state = m.eval().init_state()
    ids = torch.randint(0, V, (1, 12))
    with torch.no_grad():
        a, state = m.hidden(ids[:, :5], state)
        b, _ = m.hidden(ids[:, 5:], state)
        full, _ = m.hidden(ids)
    assert torch.allclose(torch.cat([a, b], 1).float(), full.float(), atol=0.1)  # bf16: the same to its precision


def test_an_out_of_vocabulary_id_in_the_lstm_prompt_is_refused():
    with pytest.raises(ValueError, match=r"prompt must lie in \[0, 50\), got range \[1, 50\]"):
        generate(lstm(), torch.tensor([1, 50]), 3)
    with pytest.raises(ValueError, match=r"prompt must lie in \[0, 50\)"):
        generate(tiny(), torch.tensor([-1, 2]), 3)


def test_a_model_in_train_mode_stays_in_train_mode_after_generate_raises():
    m = tiny()
    m.train()
    m.head.greedy = lambda h: (_ for _ in ()).throw(RuntimeError("boom inside the loop"))
    with pytest.raises(RuntimeError, match="boom"):
        generate(m, torch.tensor([1, 2]), 3)
    assert m.training
    with pytest.raises(ValueError, match="exceeds max_len=32"):
        generate(m, torch.tensor([1, 2]), 40)
    assert m.training


# --------------------------------------------------------------------------- the rest of the public API


@pytest.mark.parametrize(
    "kwargs, err, words",
    [
        (dict(n_new=-1), ValueError, "n_new must be >= 0"),  # issue 18: an obscure crash
        (dict(n_new=2.0), TypeError, "n_new must be an int"),
        (dict(temperature=math.nan), ValueError, "temperature must be a finite number"),
        (dict(temperature="hot"), TypeError, "temperature must be a real number"),
        (dict(temperature=1.0, top_k=2.5), TypeError, "top_k must be an int"),
        (dict(seed=-1), ValueError, "seed must be >= 0"),
        (dict(seed=2**70), ValueError, r"seed must be None or an int below 2\*\*63"),
    ],
)
def test_bad_sampling_arguments_are_refused(kwargs, err, words):
    with pytest.raises(err, match=words):
        generate(tiny(), torch.tensor([1, 2]), **{"n_new": 3, **kwargs})


def test_bad_prompts_and_models():
    with pytest.raises(ValueError, match="prompt must be a non-empty 1-D tensor"):
        generate(tiny(), torch.tensor([[1, 2]]), 3)
    with pytest.raises(ValueError, match="prompt must be a non-empty 1-D tensor"):
        generate(tiny(), torch.tensor([], dtype=torch.long), 3)
    with pytest.raises(TypeError, match="prompt must be a 1-D integer tensor"):
        generate(tiny(), [1, 2], 3)
    with pytest.raises(TypeError, match="model must be a decoder-only Transformer or an LSTMLM"):
        generate(torch.nn.Linear(2, 2), torch.tensor([1]), 3)
    with pytest.raises(ValueError, match="temperature must be a finite number"):
        sample_next(torch.zeros(1, 4), -0.5)


def test_bad_ids_targets_and_reductions():
    m = tiny()
    with pytest.raises(TypeError, match="ids must be an integer tensor of word ids, got torch.float32"):
        m.hidden(torch.zeros(1, 3))
    with pytest.raises(ValueError, match=r"ids must have shape \(B, T\)"):
        m.hidden(torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"targets must lie in \[0, 50\)"):
        m(torch.zeros(1, 3, dtype=torch.long), torch.full((1, 3), V))
    with pytest.raises(ValueError, match="targets must have the shape of ids"):
        m(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="reduction must be"):
        m.nll(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long), reduction="avg")
    with pytest.raises(TypeError, match="ids must be an integer tensor"):
        lstm().hidden(torch.zeros(1, 3, dtype=torch.bool))


def test_bad_states_and_caches():
    m = tiny()
    with pytest.raises(ValueError, match="state must be init_state"):
        m.hidden(torch.zeros(1, 3, dtype=torch.long), state=(torch.zeros(1), torch.zeros(1)))
    with pytest.raises(TypeError, match="capacity must be an int"):
        KVCache(2.5)


def test_bad_heads_and_ranks():
    with pytest.raises(ValueError, match="head must be one of"):
        OutputHead("softmax", 8, 10)
    with pytest.raises(ValueError, match="ranks must be a permutation"):
        OutputHead("adaptive", 8, 10, ranks=torch.zeros(10, dtype=torch.long), cutoffs=(4,))
    with pytest.raises(ValueError, match=r"ranks must be a tensor of shape \(10,\)"):
        OutputHead("adaptive", 8, 10, ranks=torch.arange(9), cutoffs=(4,))
    with pytest.raises(TypeError, match="train_ids must be an integer tensor"):
        frequency_ranks(torch.rand(5), 10)
    with pytest.raises(ValueError, match="train_ids must be >= 0"):
        frequency_ranks(torch.tensor([-1, 2]), 10)
    with pytest.raises(ValueError, match="does not provide embeddings"):
        OutputHead("full", 8, 10).embed(torch.tensor([1]))


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(), "exactly one of steps= or budget_s="),
        (dict(steps=3, batch_size=0), "batch_size must be >= 1"),
        (dict(steps=3, seq_len=2.5), "seq_len must be an int"),
        (dict(steps=-1), "steps must be >= 0"),
        (dict(steps=3, lr=math.nan), "lr must be a finite number"),
        (dict(steps=3, lr=0.0), "need lr > 0"),
        (dict(steps=3, warmup=1.0), "warmup < 1"),
        (dict(steps=3, weight_decay=-0.1), "weight_decay must be >= 0"),
        (dict(budget_s=math.inf), "budget_s must be a finite number"),
        (dict(steps=3, optimizer="sgd"), "optimizer must be one of"),
        (dict(steps=3, adamw_lr=1e-2), "adamw_lr sets the AdamW half"),
    ],
)
def test_bad_training_configurations(kwargs, words):
    with pytest.raises((ValueError, TypeError), match=words):
        TrainConfig(**kwargs)


def test_bad_training_calls():
    m, cfg = tiny(), TrainConfig(steps=1, batch_size=2, seq_len=8)
    with pytest.raises(ValueError, match="train_ids must be a flat"):
        train_lm(m, torch.zeros(2, 50, dtype=torch.long), cfg, live=False, bar=False)
    with pytest.raises(ValueError, match=r"train_ids must lie in \[0, 50\)"):
        train_lm(m, torch.full((100,), 60), cfg, live=False, bar=False)
    with pytest.raises(TypeError, match="cfg must be a TrainConfig"):
        train_lm(m, torch.zeros(100, dtype=torch.long), {"steps": 1}, live=False, bar=False)
    with pytest.raises(TypeError, match="model must be a decoder-only Transformer or an LSTMLM"):
        train_lm(torch.nn.Linear(2, 2), torch.zeros(100, dtype=torch.long), cfg, live=False, bar=False)
    with pytest.raises(ValueError, match="epochs must be >= 1"):
        train_epochs(m, torch.zeros(100, dtype=torch.long), epochs=0, seq_len=8, live=False)
    with pytest.raises(ValueError, match="n_tokens=10"):
        sample_corpus(torch.zeros(5, dtype=torch.long), ["a"], 10)


def test_bad_evaluations():
    m, ids = tiny(), torch.randint(0, V, (100,))
    with pytest.raises(TypeError, match="ids must be an integer tensor"):
        evaluate(m, ids.float())
    with pytest.raises(ValueError, match="seq_len must be >= 1"):
        evaluate(m, ids, seq_len=0)
    with pytest.raises(ValueError, match="stride must be >= 1"):
        evaluate(m, ids, seq_len=16, stride=0)
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 50\)"):
        evaluate(m, torch.full((100,), 70))
    with pytest.raises(ValueError, match=r"eval_ids must lie in \[0, 50\)"):
        unigram_perplexity(ids, torch.tensor([70]), V)
    with pytest.raises(ValueError, match="kind must be one of"):
        lm_recipe.build_model("gru", V)
    with pytest.raises(ValueError, match="kind must be one of"):
        lm_recipe.recipe_config("gru", steps=1)
