# ruff: noqa: E501  (a table: one case per line)
"""Bad input to the companion's public callables (interop, probes, objectives, parameter counts, experiments,
training, evaluation, the core checks it shares): a clear error that names the argument, one case per refusal."""

import math

import torch
import torch.nn as nn
from badinput import Case, parametrize

from transformer_nb import experiments as ex
from transformer_nb import lm_compute, lm_recipe, lm_training, probes, reference, small_corpus, train, wikitext
from transformer_nb import objectives as ob
from transformer_nb.bench import kvcache as bench_kvcache
from transformer_nb.core import checks
from transformer_nb.core.block import DecoderLayer, EncoderLayer
from transformer_nb.core.config import TransformerConfig as Cfg
from transformer_nb.core.multihead import MultiHeadAttention as MHA
from transformer_nb.core.stack import Decoder, Encoder
from transformer_nb.core.transformer import Transformer
from transformer_nb.interop import additive, copy_from_torch, copy_to_torch, to_torch, to_torch_attn_mask, torch_masks
from transformer_nb.params import formulas, memory
from transformer_nb.perplexity import evaluate, unigram_perplexity
from transformer_nb.reversal import data as rv_data
from transformer_nb.reversal import training as rv_training

CFG = Cfg(d_model=16, n_heads=2, d_ff=32, n_layers=1, vocab=20, max_len=32)
POST = CFG.with_(norm_first=False)  # torch's default layer: Post-LN, relu, eps 1e-5
TORCH_LAYER = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)
torch.manual_seed(0)
LM = Transformer(CFG)
IDS = torch.tensor([[3, 4, 5], [6, 7, 0]])
STREAM = torch.randint(0, 20, (100,))
TRAIN = lm_training.TrainConfig(steps=1, batch_size=2, seq_len=8)
Sub = type("Sub", (torch.Tensor,), {})

# fmt: off
CASES = {
    # the core's shared checks
    "as_int_refuses_a_bool": Case(checks.as_int, lambda: checks.as_int("n", True), TypeError, "n must be an int, got True"),
    "check_ids_refuses_float_ids": Case(checks.check_ids, lambda: checks.check_ids(torch.zeros(2, 3)), TypeError, "ids must be an integer tensor"),
    "check_keep_refuses_a_float_mask": Case(checks.check_keep, lambda: checks.check_keep(torch.zeros(2, 3), 2, 3, "keep"), TypeError, "keep must be a bool mask"),
    "check_device_refuses_meta_input_to_a_cpu_model": Case(checks.check_device, lambda: checks.check_device("x", IDS.to("meta"), torch.device("cpu")), ValueError, "x is on the meta device"),
    "check_config_refuses_sizes": Case(checks.check_config, lambda: checks.check_config(16), TypeError, "expected a TransformerConfig"),
    "check_cutoffs_refuses_an_empty_tuple": Case(checks.check_cutoffs, lambda: checks.check_cutoffs((), 4.0, 16, 100), ValueError, "cutoffs must be a non-empty tuple"),
    "check_eps_refuses_a_string": Case(checks.check_eps, lambda: checks.check_eps("1e-5"), ValueError, "eps must be a positive finite number"),
    "check_language_model_refuses_an_encoder": Case(checks.check_language_model, lambda: checks.check_language_model(Transformer(CFG.with_(arch="encoder"))), TypeError, "got a Transformer with arch='encoder'"),
    "rope_dim_refuses_an_odd_d": Case(checks.rope_dim, lambda: checks.rope_dim(3), ValueError, "d must be a positive even integer"),
    "plain_tensor_refuses_a_subclass": Case(checks.plain_tensor, lambda: checks.plain_tensor("x", torch.zeros(1).as_subclass(Sub)), TypeError, "x is a Sub"),
    # interop with torch.nn
    "copy_from_torch_refuses_another_norm_placement": Case(copy_from_torch, lambda: copy_from_torch(EncoderLayer(CFG), TORCH_LAYER), ValueError, "norm placement differs"),
    "copy_from_torch_refuses_another_activation": Case(copy_from_torch, lambda: copy_from_torch(EncoderLayer(POST.with_(activation="gelu")), TORCH_LAYER), ValueError, "activation differs"),
    "copy_from_torch_refuses_another_eps": Case(copy_from_torch, lambda: copy_from_torch(EncoderLayer(POST.with_(eps=1e-6)), TORCH_LAYER), ValueError, "eps differs"),
    "copy_from_torch_refuses_another_ffn": Case(copy_from_torch, lambda: copy_from_torch(EncoderLayer(POST.with_(d_ff=64)), TORCH_LAYER), ValueError, "FFN shapes differ"),
    "copy_from_torch_refuses_rmsnorm": Case(copy_from_torch, lambda: copy_from_torch(EncoderLayer(POST.with_(norm="rms")), TORCH_LAYER), ValueError, "uses RMSNorm"),
    "copy_from_torch_refuses_a_layer_without_residuals": Case(copy_from_torch, lambda: copy_from_torch(EncoderLayer(POST, residual=False), TORCH_LAYER), ValueError, "residual=False"),
    "copy_from_torch_refuses_a_decoder_layer_for_an_encoder_layer": Case(copy_from_torch, lambda: copy_from_torch(DecoderLayer(POST), TORCH_LAYER), TypeError, "pairs with an nn.TransformerDecoderLayer"),
    "copy_from_torch_refuses_a_linear": Case(copy_from_torch, lambda: copy_from_torch(nn.Linear(2, 2), TORCH_LAYER), TypeError, "expected one of MultiHeadAttention, EncoderLayer"),
    "copy_from_torch_refuses_attention_without_bias": Case(copy_from_torch, lambda: copy_from_torch(MHA(16, 2), nn.MultiheadAttention(16, 2, bias=False)), ValueError, "bias settings differ"),
    "copy_from_torch_refuses_another_layer_count": Case(copy_from_torch, lambda: copy_from_torch(Encoder(CFG), nn.TransformerEncoder(TORCH_LAYER, 3, enable_nested_tensor=False)), ValueError, "layer counts differ"),
    "copy_from_torch_refuses_a_decoder_for_an_encoder": Case(copy_from_torch, lambda: copy_from_torch(Decoder(CFG), nn.TransformerEncoder(TORCH_LAYER, 1, enable_nested_tensor=False)), TypeError, "nn.TransformerDecoder"),
    "copy_to_torch_refuses_other_head_counts": Case(copy_to_torch, lambda: copy_to_torch(MHA(16, 2), nn.MultiheadAttention(16, 4)), ValueError, "shapes differ: nn.MultiheadAttention(embed_dim=16, num_heads=4)"),
    "copy_to_torch_refuses_other_key_widths": Case(copy_to_torch, lambda: copy_to_torch(MHA(16, 2), nn.MultiheadAttention(16, 2, kdim=8, vdim=8)), ValueError, "kdim = vdim = embed_dim"),
    "to_torch_refuses_swiglu": Case(to_torch, lambda: to_torch(EncoderLayer(CFG.with_(activation="swiglu"))), ValueError, "no SwiGLU"),
    "to_torch_refuses_gqa": Case(to_torch, lambda: to_torch(MHA(16, 2, n_kv_heads=1)), ValueError, "no shared key/value heads"),
    "to_torch_refuses_a_decoder_only_model": Case(to_torch, lambda: to_torch(LM), TypeError, "only an encoder-decoder Transformer pairs with nn.Transformer"),
    "additive_refuses_a_float_mask": Case(additive, lambda: additive(torch.ones(3, 3)), TypeError, "expects a bool mask"),
    "to_torch_attn_mask_refuses_3_heads_of_4": Case(to_torch_attn_mask, lambda: to_torch_attn_mask(torch.ones(2, 3, 5, 5, dtype=torch.bool), 4), ValueError, "mask has 3 heads; expected 1 or n_heads=4"),
    "to_torch_attn_mask_refuses_an_integer_mask": Case(to_torch_attn_mask, lambda: to_torch_attn_mask(torch.ones(2, 2, dtype=torch.long), 2), TypeError, "mask must be bool"),
    "torch_masks_refuses_an_integer_keep": Case(torch_masks, lambda: torch_masks(torch.ones(2, 3, dtype=torch.long)), TypeError, "src_keep must be a (B, T) bool tensor"),
    # probes, objectives, reference formulas
    "head_stats_refuses_weights_that_are_not_square": Case(probes.head_stats, lambda: probes.head_stats(torch.rand(4, 3, 5)), ValueError, "head_stats expects self-attention weights of shape (..., T, T)"),
    "capture_masks_refuses_a_non_module": Case(probes.capture_masks, lambda: probes.capture_masks("model"), TypeError, "nn.Module"),
    "trace_shapes_refuses_a_function": Case(probes.trace_shapes, lambda: probes.trace_shapes(lambda x: x, 1), TypeError, "must be an nn.Module"),
    "record_attention_refuses_a_non_module": Case(probes.record_attention, lambda: probes.record_attention("model"), TypeError, "model must be an nn.Module"),
    "uniform_distance_refuses_t_0": Case(probes.uniform_distance, lambda: probes.uniform_distance(0), ValueError, "t must be >= 1"),
    "lm_batch_refuses_a_single_token": Case(ob.lm_batch, lambda: ob.lm_batch(torch.tensor([[3]])), ValueError, "T >= 2"),
    "lm_batch_refuses_float_ids": Case(ob.lm_batch, lambda: ob.lm_batch(IDS.float()), TypeError, "integer token ids"),
    "mlm_batch_refuses_p_1_5": Case(ob.mlm_batch, lambda: ob.mlm_batch(IDS, None, 1, 20, p=1.5), ValueError, "(0, 1)"),
    "mlm_batch_refuses_a_row_with_nothing_to_mask": Case(ob.mlm_batch, lambda: ob.mlm_batch(IDS, None, 1, 20, protect=3), ValueError, "protect=3 leaves a row with no real token"),
    "lm_loss_refuses_targets_that_are_all_ignored": Case(ob.lm_loss, lambda: ob.lm_loss(torch.randn(2, 3, 5), torch.full((2, 3), -100)), ValueError, "every target is ignore_index=-100"),
    "lm_loss_refuses_targets_outside_the_vocabulary": Case(ob.lm_loss, lambda: ob.lm_loss(torch.randn(2, 3, 5), torch.full((2, 3), 7)), ValueError, "targets must be ids in [0, V=5)"),
    "span_corruption_refuses_no_noise": Case(ob.span_corruption, lambda: ob.span_corruption(IDS, None, 20, noise=0.0), ValueError, "noise is the fraction"),
    "span_corruption_refuses_an_all_padding_row": Case(ob.span_corruption, lambda: ob.span_corruption(IDS, torch.zeros(2, 3, dtype=torch.bool), 20), ValueError, "all-False row"),
    "describe_objective_refuses_two_shapes": Case(ob.describe_objective, lambda: ob.describe_objective(IDS, IDS[:, :2]), ValueError, "one shape"),
    "layer_norm_refuses_integer_x": Case(reference.layer_norm, lambda: reference.layer_norm(IDS), TypeError, "floating-point tensor"),
    "layer_norm_refuses_a_weight_of_another_width": Case(reference.layer_norm, lambda: reference.layer_norm(torch.randn(2, 8), torch.ones(3)), ValueError, "weight must have shape (d,) = (8,), got (3,)"),
    "rms_norm_refuses_a_nan_eps": Case(reference.rms_norm, lambda: reference.rms_norm(torch.randn(2, 8), eps=math.nan), ValueError, "eps must be a positive finite number"),
    "half_permutation_refuses_an_odd_d": Case(reference.half_permutation, lambda: reference.half_permutation(3), ValueError, "d must be a positive even"),
    "rope_matrix_refuses_an_odd_d": Case(reference.rope_matrix, lambda: reference.rope_matrix(0.0, 3), ValueError, "d must be a positive even"),
    # parameter counts
    "attention_params_refuses_sizes": Case(formulas.attention_params, lambda: formulas.attention_params(30), TypeError, "expected a TransformerConfig"),
    "block_rule_refuses_a_str_d_model": Case(formulas.block_rule, lambda: formulas.block_rule("x"), TypeError, "d_model must be an int"),
    "encoder_layer_params_refuses_sizes": Case(formulas.encoder_layer_params, lambda: formulas.encoder_layer_params(64), TypeError, "expected a TransformerConfig"),
    "embedding_params_refuses_a_float_vocab": Case(formulas.embedding_params, lambda: formulas.embedding_params(2.5, 8), TypeError, "vocab"),
    "swiglu_hidden_size_refuses_multiple_of_0": Case(formulas.swiglu_hidden_size, lambda: formulas.swiglu_hidden_size(512, 0), ValueError, "multiple_of must be >= 1"),
    "swiglu_hidden_size_refuses_an_infinite_multiplier": Case(formulas.swiglu_hidden_size, lambda: formulas.swiglu_hidden_size(64, 8, math.inf), ValueError, "ffn_dim_multiplier must be positive and finite"),
    "kv_cache_bytes_refuses_a_negative_length": Case(memory.kv_cache_bytes, lambda: memory.kv_cache_bytes(2, 4, 16, -1), ValueError, "seq_len must be >= 0, got -1"),
    # experiments
    "layer_grad_norms_refuses_no_seeds": Case(ex.layer_grad_norms, lambda: ex.layer_grad_norms(2, seeds=()), ValueError, "seeds must name at least one seed"),
    "train_toy_lm_refuses_a_negative_warmup": Case(ex.train_toy_lm, lambda: ex.train_toy_lm(2, True, 1e-3, -5, 3), ValueError, "warmup must be >= 0, got -5"),
    "train_toy_lm_refuses_too_few_batches": Case(ex.train_toy_lm, lambda: ex.train_toy_lm(2, True, 1e-3, 0, 5, data=ex.markov_batches(2)), ValueError, "fewer than steps=5"),
    "train_toy_lm_refuses_data_of_its_own": Case(ex.train_toy_lm, lambda: ex.train_toy_lm(1, True, 1e-3, 0, 2, data=(1, 2, 3)), ValueError, "data must be what markov_batches returns"),
    "train_toy_lm_refuses_a_nan_lr": Case(ex.train_toy_lm, lambda: ex.train_toy_lm(1, True, math.nan, 0, 2), ValueError, "lr must be a positive finite number"),
    "markov_batches_refuses_vocab_0": Case(ex.markov_batches, lambda: ex.markov_batches(2, vocab=0), ValueError, "vocab must be >= 1"),
    "markov_batches_refuses_an_infinite_sharpness": Case(ex.markov_batches, lambda: ex.markov_batches(2, sharpness=math.inf), ValueError, "sharpness must be a finite number"),
    "stream_stats_refuses_depth_0": Case(ex.stream_stats, lambda: ex.stream_stats(0), ValueError, "depth"),
    # language-model training, evaluation and timing
    "TrainConfig_refuses_neither_steps_nor_budget": Case(lm_training.TrainConfig, lambda: lm_training.TrainConfig(), ValueError, "exactly one of steps= or budget_s="),
    "TrainConfig_refuses_batch_size_0": Case(lm_training.TrainConfig, lambda: lm_training.TrainConfig(steps=3, batch_size=0), ValueError, "batch_size must be >= 1"),
    "TrainConfig_refuses_a_nan_lr": Case(lm_training.TrainConfig, lambda: lm_training.TrainConfig(steps=3, lr=math.nan), ValueError, "lr must be a finite number"),
    "TrainConfig_refuses_lr_0": Case(lm_training.TrainConfig, lambda: lm_training.TrainConfig(steps=3, lr=0.0), ValueError, "need lr > 0"),
    "TrainConfig_refuses_a_warmup_of_the_whole_run": Case(lm_training.TrainConfig, lambda: lm_training.TrainConfig(steps=3, warmup=1.0), ValueError, "warmup < 1"),
    "TrainConfig_refuses_an_unknown_optimizer": Case(lm_training.TrainConfig, lambda: lm_training.TrainConfig(steps=3, optimizer="sgd"), ValueError, "optimizer must be one of"),
    "TrainConfig_refuses_an_infinite_budget": Case(lm_training.TrainConfig, lambda: lm_training.TrainConfig(budget_s=math.inf), ValueError, "budget_s must be a finite number"),
    "train_lm_refuses_2d_train_ids": Case(lm_training.train_lm, lambda: lm_training.train_lm(LM, torch.zeros(2, 50, dtype=torch.long), TRAIN, live=False, bar=False), ValueError, "train_ids must be a flat"),
    "train_lm_refuses_ids_outside_the_vocabulary": Case(lm_training.train_lm, lambda: lm_training.train_lm(LM, torch.full((100,), 60), TRAIN, live=False, bar=False), ValueError, "train_ids must lie in [0, 20)"),
    "train_lm_refuses_a_dict_config": Case(lm_training.train_lm, lambda: lm_training.train_lm(LM, STREAM, {"steps": 1}, live=False, bar=False), TypeError, "cfg must be a TrainConfig"),
    "train_lm_refuses_a_linear": Case(lm_training.train_lm, lambda: lm_training.train_lm(nn.Linear(2, 2), STREAM, TRAIN, live=False, bar=False), TypeError, "model must be a decoder-only Transformer or an LSTMLM"),
    "window_batches_refuses_a_stream_too_short_for_one_batch": Case(lm_training.window_batches, lambda: next(lm_training.window_batches(torch.arange(10), 8, 5)), ValueError, "fewer than batch_size=8"),
    "window_batches_refuses_seq_len_0": Case(lm_training.window_batches, lambda: lm_training.window_batches(torch.arange(10), 1, 0), ValueError, "seq_len must be >= 1"),
    "make_adamw_refuses_a_str": Case(lm_training.make_adamw, lambda: lm_training.make_adamw("x"), TypeError, "params"),
    "make_optimizers_refuses_a_non_module": Case(lm_training.make_optimizers, lambda: lm_training.make_optimizers("m", "c"), TypeError, "nn.Module"),
    "stream_batches_refuses_float_ids": Case(lm_training.stream_batches, lambda: lm_training.stream_batches(torch.arange(10.0), 2, 2), TypeError, "data must hold integer"),
    "evaluate_refuses_float_ids": Case(evaluate, lambda: evaluate(LM, STREAM.float()), TypeError, "ids must be an integer tensor"),
    "evaluate_refuses_seq_len_0": Case(evaluate, lambda: evaluate(LM, STREAM, seq_len=0), ValueError, "seq_len must be >= 1"),
    "evaluate_refuses_stride_0": Case(evaluate, lambda: evaluate(LM, STREAM, seq_len=16, stride=0), ValueError, "stride must be >= 1"),
    "evaluate_refuses_ids_outside_the_vocabulary": Case(evaluate, lambda: evaluate(LM, torch.full((100,), 70)), ValueError, "ids must lie in [0, 20)"),
    "unigram_perplexity_refuses_ids_outside_the_vocabulary": Case(unigram_perplexity, lambda: unigram_perplexity(STREAM, torch.tensor([70]), 20), ValueError, "eval_ids must lie in"),
    "train_epochs_refuses_0_epochs": Case(small_corpus.train_epochs, lambda: small_corpus.train_epochs(LM, STREAM, epochs=0, seq_len=8, live=False), ValueError, "epochs must be >= 1"),
    "sample_corpus_refuses_more_tokens_than_it_has": Case(small_corpus.sample_corpus, lambda: small_corpus.sample_corpus(torch.zeros(5, dtype=torch.long), ["a"], 10), ValueError, "n_tokens=10"),
    "exercise_8_9_refuses_data_that_is_not_wikitext": Case(small_corpus.exercise_8_9, lambda: small_corpus.exercise_8_9("d"), TypeError, "data must be"),
    "lstm_matching_refuses_a_negative_target": Case(small_corpus.lstm_matching, lambda: small_corpus.lstm_matching(-1, 10, 8), ValueError, "target_params"),
    "build_model_refuses_an_unknown_kind": Case(lm_recipe.build_model, lambda: lm_recipe.build_model("gru", 20), ValueError, "kind must be one of"),
    "recipe_config_refuses_an_unknown_kind": Case(lm_recipe.recipe_config, lambda: lm_recipe.recipe_config("gru", steps=1), ValueError, "kind must be one of"),
    "cache_config_refuses_an_unknown_kind": Case(lm_recipe.cache_config, lambda: lm_recipe.cache_config("gru", None, 10), ValueError, "kind must be"),
    "compare_refuses_data_that_is_not_wikitext": Case(lm_recipe.compare, lambda: lm_recipe.compare({}, None, 1.0), TypeError, "data must be"),
    "final_perplexities_refuses_data_that_is_not_wikitext": Case(lm_recipe.final_perplexities, lambda: lm_recipe.final_perplexities({}, None), TypeError, "data must be"),
    "flops_per_token_refuses_a_non_language_model": Case(lm_compute.flops_per_token, lambda: lm_compute.flops_per_token("m", None, None), TypeError, "model must be"),
    "time_steps_refuses_a_non_language_model": Case(lm_compute.time_steps, lambda: lm_compute.time_steps("m", None, None), TypeError, "model must be"),
    "mfu_refuses_a_negative_rate": Case(lm_compute.mfu, lambda: lm_compute.mfu(1.0, -1.0, 1.0), ValueError, "tokens_per_s"),
    "matmul_peak_gflops_refuses_the_meta_device": Case(lm_compute.matmul_peak_gflops, lambda: lm_compute.matmul_peak_gflops(torch.float32, "meta"), ValueError, "device"),
    "time_generation_refuses_a_non_language_model": Case(bench_kvcache.time_generation, lambda: bench_kvcache.time_generation("m", torch.tensor([1]), [1]), TypeError, "model must be"),
    "bench_kvcache_refuses_0_repeats_before_any_work": Case(bench_kvcache.main, lambda: bench_kvcache.main(["--repeats", "0"]), SystemExit, "argument --repeats: must be >= 1, got 0"),
    "unwrap_refuses_a_non_module": Case(train.unwrap, lambda: train.unwrap("m"), TypeError, "model must be an nn.Module"),
    "check_wikitext_refuses_a_dict": Case(wikitext.check_wikitext, lambda: wikitext.check_wikitext({"train": 1}), TypeError, "data must be"),
    "read_words_refuses_a_file_descriptor_number": Case(wikitext.read_words, lambda: wikitext.read_words(12345), TypeError, "path must be"),
    "Vocab_refuses_none_among_the_words": Case(wikitext.Vocab, lambda: wikitext.Vocab(["a", None]), TypeError, "words must hold str words, got NoneType None"),
    "check_tokens_refuses_bos_among_symbols": Case(rv_data.check_tokens, lambda: rv_data.check_tokens(torch.tensor([[3, 1]]), "src", "symbols"), ValueError, "src must hold PAD"),
    "reversal_batches_refuses_a_non_recipe": Case(rv_training.batches, lambda: rv_training.batches("r", torch.Generator()), TypeError, "recipe must be"),
    "reversal_make_optimizer_refuses_a_non_module": Case(rv_training.make_optimizer, lambda: rv_training.make_optimizer("m", "r"), TypeError, "model must be"),
}
# fmt: on


@parametrize(CASES)
def test_the_companion_refuses_bad_input_by_name(name):
    CASES[name].check()
