# ruff: noqa: E501  (a table: one bad call per line)
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
LONG = torch.long
IDS = torch.randint(0, V, (100,))


def tiny(positions="rope", head="tied"):
    torch.manual_seed(0)
    sizes = dict(d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=32)
    return Transformer(vocab=V, **sizes, positions=positions, **lm_recipe.HEAD_FIELDS[head])


def lstm():
    torch.manual_seed(0)
    return LSTMLM(V, 16, 16, head="full")


def fit(**kw):
    return train_lm(kw.pop("m", tiny()), kw.pop("ids"), kw.pop("cfg", TrainConfig(steps=1, batch_size=2, seq_len=8)),
                    live=False, bar=False)  # fmt: skip


CASES = {  # name: (the call, the exception, what its message says)
    "float_prompt_cached": (lambda: generate(tiny(), torch.tensor([1.9, 2.7]), 3), TypeError, "prompt must be a 1-D integer tensor of word ids, got torch.float32"),  # issue 18: truncated
    "float_prompt_plain": (lambda: generate(tiny(), torch.tensor([1.9]), 3, use_cache=False), TypeError, "prompt must be a 1-D integer"),
    "negative_top_k": (lambda: generate(tiny(), torch.tensor([1, 2]), 3, temperature=1.0, top_k=-1), ValueError, "top_k must be >= 0"),  # issue 18: ignored
    "negative_top_k_filter": (lambda: top_k_filter(torch.zeros(1, 5), -5), ValueError, "top_k must be >= 0"),
    "lstm_prompt_out_of_vocabulary": (lambda: generate(lstm(), torch.tensor([1, 50]), 3), ValueError, r"prompt must lie in \[0, 50\), got range \[1, 50\]"),
    "negative_prompt_id": (lambda: generate(tiny(), torch.tensor([-1, 2]), 3), ValueError, r"prompt must lie in \[0, 50\)"),
    "n_new_negative": (lambda: generate(tiny(), torch.tensor([1, 2]), -1), ValueError, "n_new must be >= 0"),  # issue 18: obscure
    "n_new_float": (lambda: generate(tiny(), torch.tensor([1, 2]), 2.0), TypeError, "n_new must be an int"),
    "temperature_nan": (lambda: generate(tiny(), torch.tensor([1, 2]), 3, temperature=math.nan), ValueError, "temperature must be a finite number"),
    "temperature_str": (lambda: generate(tiny(), torch.tensor([1, 2]), 3, temperature="hot"), TypeError, "temperature must be a real number"),
    "top_k_float": (lambda: generate(tiny(), torch.tensor([1, 2]), 3, temperature=1.0, top_k=2.5), TypeError, "top_k must be an int"),
    "seed_negative": (lambda: generate(tiny(), torch.tensor([1, 2]), 3, seed=-1), ValueError, "seed must be >= 0"),
    "seed_huge": (lambda: generate(tiny(), torch.tensor([1, 2]), 3, seed=2**70), ValueError, r"seed must be None or an int below 2\*\*63"),
    "prompt_2d": (lambda: generate(tiny(), torch.tensor([[1, 2]]), 3), ValueError, "prompt must be a non-empty 1-D tensor"),
    "prompt_empty": (lambda: generate(tiny(), torch.tensor([], dtype=LONG), 3), ValueError, "prompt must be a non-empty 1-D tensor"),
    "prompt_list": (lambda: generate(tiny(), [1, 2], 3), TypeError, "prompt must be a 1-D integer tensor"),
    "not_a_language_model": (lambda: generate(torch.nn.Linear(2, 2), torch.tensor([1]), 3), TypeError, "model must be a decoder-only Transformer or an LSTMLM"),
    "sample_next_negative_temperature": (lambda: sample_next(torch.zeros(1, 4), -0.5), ValueError, "temperature must be a finite number"),
    "float_ids": (lambda: tiny().hidden(torch.zeros(1, 3)), TypeError, "ids must be an integer tensor of word ids, got torch.float32"),
    "flat_ids": (lambda: tiny().hidden(torch.zeros(3, dtype=LONG)), ValueError, r"ids must have shape \(B, T\)"),
    "targets_out_of_vocabulary": (lambda: tiny()(torch.zeros(1, 3, dtype=LONG), torch.full((1, 3), V)), ValueError, r"targets must lie in \[0, 50\)"),
    "targets_of_another_shape": (lambda: tiny()(torch.zeros(1, 3, dtype=LONG), torch.zeros(1, 4, dtype=LONG)), ValueError, "targets must have the shape of ids"),
    "unknown_reduction": (lambda: tiny().nll(torch.zeros(1, 3, dtype=LONG), torch.zeros(1, 3, dtype=LONG), reduction="avg"), ValueError, "reduction must be"),
    "lstm_bool_ids": (lambda: lstm().hidden(torch.zeros(1, 3, dtype=torch.bool)), TypeError, "ids must be an integer tensor"),
    "state_not_a_cache": (lambda: tiny().hidden(torch.zeros(1, 3, dtype=LONG), state=(torch.zeros(1), torch.zeros(1))), ValueError, "state must be init_state"),
    "cache_capacity_float": (lambda: KVCache(2.5), TypeError, "capacity must be an int"),
    "unknown_head": (lambda: OutputHead("softmax", 8, 10), ValueError, "head must be one of"),
    "ranks_not_a_permutation": (lambda: OutputHead("adaptive", 8, 10, ranks=torch.zeros(10, dtype=LONG), cutoffs=(4,)), ValueError, "ranks must be a permutation"),
    "ranks_too_short": (lambda: OutputHead("adaptive", 8, 10, ranks=torch.arange(9), cutoffs=(4,)), ValueError, r"ranks must be a tensor of shape \(10,\)"),
    "float_train_ids_for_ranks": (lambda: frequency_ranks(torch.rand(5), 10), TypeError, "train_ids must be an integer tensor"),
    "negative_train_ids_for_ranks": (lambda: frequency_ranks(torch.tensor([-1, 2]), 10), ValueError, "train_ids must be >= 0"),
    "full_head_embeds_nothing": (lambda: OutputHead("full", 8, 10).embed(torch.tensor([1])), ValueError, "does not provide embeddings"),
    "config_without_budget": (lambda: TrainConfig(), ValueError, "exactly one of steps= or budget_s="),
    "config_batch_size_0": (lambda: TrainConfig(steps=3, batch_size=0), ValueError, "batch_size must be >= 1"),
    "config_seq_len_float": (lambda: TrainConfig(steps=3, seq_len=2.5), TypeError, "seq_len must be an int"),
    "config_steps_negative": (lambda: TrainConfig(steps=-1), ValueError, "steps must be >= 0"),
    "config_lr_nan": (lambda: TrainConfig(steps=3, lr=math.nan), ValueError, "lr must be a finite number"),
    "config_lr_0": (lambda: TrainConfig(steps=3, lr=0.0), ValueError, "need lr > 0"),
    "config_warmup_1": (lambda: TrainConfig(steps=3, warmup=1.0), ValueError, "warmup < 1"),
    "config_weight_decay_negative": (lambda: TrainConfig(steps=3, weight_decay=-0.1), ValueError, "weight_decay must be >= 0"),
    "config_budget_inf": (lambda: TrainConfig(budget_s=math.inf), ValueError, "budget_s must be a finite number"),
    "config_unknown_optimizer": (lambda: TrainConfig(steps=3, optimizer="sgd"), ValueError, "optimizer must be one of"),
    "config_adamw_lr_without_muon": (lambda: TrainConfig(steps=3, adamw_lr=1e-2), ValueError, "adamw_lr sets the AdamW half"),
    "train_ids_2d": (lambda: fit(ids=torch.zeros(2, 50, dtype=LONG)), ValueError, "train_ids must be a flat"),
    "train_ids_out_of_vocabulary": (lambda: fit(ids=torch.full((100,), 60)), ValueError, r"train_ids must lie in \[0, 50\)"),
    "train_config_a_dict": (lambda: fit(ids=IDS, cfg={"steps": 1}), TypeError, "cfg must be a TrainConfig"),
    "train_a_linear_layer": (lambda: fit(m=torch.nn.Linear(2, 2), ids=IDS), TypeError, "model must be a decoder-only Transformer or an LSTMLM"),
    "train_epochs_0": (lambda: train_epochs(tiny(), IDS, epochs=0, seq_len=8, live=False), ValueError, "epochs must be >= 1"),
    "sample_longer_than_the_stream": (lambda: sample_corpus(torch.zeros(5, dtype=LONG), ["a"], 10), ValueError, "n_tokens=10"),
    "evaluate_float_ids": (lambda: evaluate(tiny(), IDS.float()), TypeError, "ids must be an integer tensor"),
    "evaluate_seq_len_0": (lambda: evaluate(tiny(), IDS, seq_len=0), ValueError, "seq_len must be >= 1"),
    "evaluate_stride_0": (lambda: evaluate(tiny(), IDS, seq_len=16, stride=0), ValueError, "stride must be >= 1"),
    "evaluate_ids_out_of_vocabulary": (lambda: evaluate(tiny(), torch.full((100,), 70)), ValueError, r"ids must lie in \[0, 50\)"),
    "unigram_ids_out_of_vocabulary": (lambda: unigram_perplexity(IDS, torch.tensor([70]), V), ValueError, r"eval_ids must lie in \[0, 50\)"),
    "unknown_model_kind": (lambda: lm_recipe.build_model("gru", V), ValueError, "kind must be one of"),
    "unknown_config_kind": (lambda: lm_recipe.recipe_config("gru", steps=1), ValueError, "kind must be one of"),
}  # fmt: skip


@pytest.mark.parametrize("name", CASES)
def test_bad_input_is_refused_by_name(name):
    call, err, words = CASES[name]
    with pytest.raises(err, match=words):
        call()


def test_the_bf16_rope_model_generates_with_the_kv_cache():
    m = tiny("rope", "tied").to(torch.bfloat16)
    out = generate(m, torch.tensor([1, 2, 3]), 10, use_cache=True)
    assert out.shape == (13,) and out.dtype == torch.long and int(out.min()) >= 0 and int(out.max()) < V
    state, ids = m.eval().init_state(), torch.randint(0, V, (1, 12))
    with torch.no_grad():
        a, state = m.hidden(ids[:, :5], state)
        b, _ = m.hidden(ids[:, 5:], state)
        full, _ = m.hidden(ids)
    assert torch.allclose(torch.cat([a, b], 1).float(), full.float(), atol=0.1)  # bf16: the same to its precision


def test_a_model_in_train_mode_stays_in_train_mode_after_generate_raises():
    m = tiny().train()
    m.head.greedy = lambda h: (_ for _ in ()).throw(RuntimeError("boom inside the loop"))
    with pytest.raises(RuntimeError, match="boom"):
        generate(m, torch.tensor([1, 2]), 3)
    assert m.training
    with pytest.raises(ValueError, match="exceeds max_len=32"):
        generate(m, torch.tensor([1, 2]), 40)
    assert m.training
