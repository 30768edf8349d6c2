"""One bad input for each public callable that had no bad-input test yet: a clear ``ValueError``/``TypeError``
that names the argument (``tests/bad_input_coverage.py`` counts them)."""

import pytest
import torch

from transformer_nb import (
    experiments,
    lm_compute,
    lm_recipe,
    lm_training,
    probes,
    reference,
    small_corpus,
    train,
    wikitext,
)
from transformer_nb.bench import kvcache as bench_kvcache
from transformer_nb.core import checks, config
from transformer_nb.core import transformer as core_transformer
from transformer_nb.params import formulas
from transformer_nb.reversal import data as rv_data
from transformer_nb.reversal import training as rv_training

META = torch.zeros(1, device="meta")


CASES = {
    "check_hidden_refuses_a_2d_tensor": (
        checks.check_hidden,
        (torch.zeros(2, 3), 8, "x"),
        ValueError,
        "x must have shape",
    ),
    "check_ids_refuses_float_ids": (
        checks.check_ids,
        (torch.zeros(2, 3), "ids"),
        TypeError,
        "ids must be an integer tensor",
    ),
    "check_keep_refuses_a_float_mask": (checks.check_keep, (torch.zeros(2, 3), 2, 3, "keep"), TypeError, "keep must"),
    "check_tokens_refuses_bos_among_symbols": (
        rv_data.check_tokens,
        (torch.tensor([[3, 1]]), "src", "symbols"),
        ValueError,
        "src must hold PAD",
    ),
    "record_attention_refuses_a_non_module": (
        probes.record_attention,
        ("model",),
        TypeError,
        "model must be an nn.Module",
    ),
    "time_generation_refuses_a_non_language_model": (
        bench_kvcache.time_generation,
        ("m", torch.tensor([1]), [1]),
        TypeError,
        "model must be",
    ),
    "half_permutation_refuses_an_odd_d": (reference.half_permutation, (3,), ValueError, "d must be a positive even"),
    "rope_matrix_refuses_an_odd_d": (reference.rope_matrix, (0.0, 3), ValueError, "d must be a positive even"),
    "block_rule_refuses_a_str_d_model": (formulas.block_rule, ("x",), TypeError, "d_model must be an int"),
    "decoder_layer_params_refuses_sizes": (
        formulas.decoder_layer_params,
        (64,),
        TypeError,
        "expected a TransformerConfig",
    ),
    "encoder_layer_params_refuses_sizes": (
        formulas.encoder_layer_params,
        (64,),
        TypeError,
        "expected a TransformerConfig",
    ),
    "embedding_params_refuses_a_float_vocab": (formulas.embedding_params, (2.5, 8), TypeError, "vocab"),
    "validate_refuses_a_str": (config.validate, ("x",), TypeError, "expected a TransformerConfig"),
    "RelativeBiasTable_refuses_0_heads": (core_transformer.RelativeBiasTable, (0,), ValueError, "n_heads must be >= 1"),
    "make_adamw_refuses_a_str": (lm_training.make_adamw, ("x",), TypeError, "params"),
    "make_optimizers_refuses_a_non_module": (lm_training.make_optimizers, ("m", "c"), TypeError, "nn.Module"),
    "stream_batches_refuses_float_ids": (
        lm_training.stream_batches,
        (torch.arange(10.0), 2, 2),
        TypeError,
        "data must hold integer",
    ),
    "flops_per_token_refuses_a_non_language_model": (
        lm_compute.flops_per_token,
        ("m", None, None),
        TypeError,
        "model must be",
    ),
    "time_steps_refuses_a_non_language_model": (lm_compute.time_steps, ("m", None, None), TypeError, "model must be"),
    "mfu_refuses_a_negative_rate": (lm_compute.mfu, (1.0, -1.0, 1.0), ValueError, "tokens_per_s"),
    "reversal_batches_refuses_a_non_recipe": (
        rv_training.batches,
        ("r", torch.Generator()),
        TypeError,
        "recipe must be",
    ),
    "exercise_8_9_refuses_data_that_is_not_wikitext": (small_corpus.exercise_8_9, ("d",), TypeError, "data must be"),
    "lstm_matching_refuses_a_negative_target": (small_corpus.lstm_matching, (-1, 10, 8), ValueError, "target_params"),
    "check_wikitext_refuses_a_dict": (wikitext.check_wikitext, ({"train": 1},), TypeError, "data must be"),
    "read_words_refuses_a_file_descriptor_number": (wikitext.read_words, (12345,), TypeError, "path must be"),
    "matmul_peak_gflops_refuses_the_meta_device": (
        lm_compute.matmul_peak_gflops,
        (torch.float32, "meta"),
        ValueError,
        "device",
    ),
    "matmul_peak_gflops_refuses_negative_seconds": (
        lm_compute.matmul_peak_gflops,
        (torch.float32, "cpu", None, -1.0),
        ValueError,
        "seconds",
    ),
    "reversal_make_optimizer_refuses_a_non_module": (
        rv_training.make_optimizer,
        ("m", "r"),
        TypeError,
        "model must be",
    ),
    "lm_recipe_compare_refuses_data_that_is_not_wikitext": (
        lm_recipe.compare,
        ({}, None, 1.0),
        TypeError,
        "data must be",
    ),
    "final_perplexities_refuses_data_that_is_not_wikitext": (
        lm_recipe.final_perplexities,
        ({}, None),
        TypeError,
        "data must be",
    ),
    "cache_config_refuses_an_unknown_kind": (lm_recipe.cache_config, ("gru", None, 10), ValueError, "kind must be"),
    "unwrap_refuses_a_non_module": (train.unwrap, ("m",), TypeError, "model must be an nn.Module"),
    "init_xavier_refuses_a_non_module": (experiments.init_xavier_, ("m",), TypeError, "module must be"),
    "stream_stats_refuses_depth_0": (experiments.stream_stats, (0,), ValueError, "depth"),
    "toy_lm_refuses_vocab_0": (experiments.toy_lm, (0, 1, True), ValueError, "vocab"),
    "check_device_refuses_meta_input_to_a_cpu_model": (
        checks.check_device,
        ("x", META, torch.device("cpu")),
        ValueError,
        "x is on the meta device",
    ),
    "check_dropout_refuses_a_probability_of_1": (checks.check_dropout, (1.0,), ValueError, "got 1.0"),
    "check_dropout_refuses_a_string": (checks.check_dropout, ("0.1",), ValueError, "got '0.1'"),
    "check_like_refuses_float16_into_float32_weights": (
        checks.check_like,
        ("x", torch.zeros(1).half(), torch.zeros(1)),
        TypeError,
        "x has dtype torch.float16",
    ),
    "plain_tensor_refuses_a_subclass": (
        checks.plain_tensor,
        ("x", torch.zeros(1).as_subclass(type("Sub", (torch.Tensor,), {}))),
        TypeError,
        "x is a Sub",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_public_callable_refuses_bad_input(name):
    fn, args, exc, match = CASES[name]
    with pytest.raises(exc, match=match):
        fn(*args)
