# ruff: noqa: E501  (a table: one case per line)
"""Bad input to the core (attention, masks, heads, positions, RoPE, the configuration, blocks, stacks, the model,
generation) gets a clear error that names the argument: one case per refusal (``tests/badinput.py``), never a
silent wrong answer, a NaN or a crash deep inside torch. Issue 40's edges are here too."""

import math

import numpy as np
import pytest
import torch
from badinput import Case, Gives, parametrize

from transformer_nb.core.attention import scaled_dot_product_attention as sdpa
from transformer_nb.core.block import DecoderLayer, EncoderLayer, FeedForward, make_norm
from transformer_nb.core.config import TransformerConfig as Cfg
from transformer_nb.core.generation import generate
from transformer_nb.core.masks import causal_mask, key_padding, padding_mask, padding_mask_from_ids
from transformer_nb.core.masks import self_attention_mask as sam
from transformer_nb.core.multihead import KVCache, merge_heads, split_heads
from transformer_nb.core.multihead import MultiHeadAttention as MHA
from transformer_nb.core.output_head import OutputHead, frequency_ranks
from transformer_nb.core.positional import (
    ALiBi,
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    alibi_bias,
    alibi_slopes,
    sinusoid_frequencies,
    sinusoidal_encoding,
)
from transformer_nb.core.rope import RoPE, apply_rope, rope_frequencies
from transformer_nb.core.stack import Decoder, Encoder
from transformer_nb.core.transformer import LanguageModel, RelativeBiasTable, Transformer
from transformer_nb.lstm import LSTMLM
from transformer_nb.probes import head_stats

SMALL = dict(vocab=20, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=32)
CFG = Cfg(**SMALL)
torch.manual_seed(0)
LM, S2S = Transformer(**SMALL).eval(), Transformer(**SMALL, arch="encoder-decoder").eval()
HUGE = Transformer(**{**SMALL, "max_len": 2**40}, positions="none")
Q, K, V = torch.randn(2, 4, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 3)
X, IDS, P = torch.randn(2, 5, 16), torch.tensor([[1, 2, 3]]), torch.tensor([1, 2])
MEM, KEEP = S2S.encode(IDS), torch.ones(2, 5, dtype=torch.bool)
M = MHA(16, 2)
EMPTY = torch.zeros(2, 0, dtype=torch.long)
ADAPTIVE = dict(SMALL, vocab=100, adaptive=True, cutoffs=(10, 50))
SPE, LPE = SinusoidalPositionalEncoding(16, max_len=8), LearnedPositionalEmbedding(8, 16)
Sub = type("Sub", (torch.Tensor,), {})


def two_steps_with_swapped_caches():
    state = LM.init_state()
    LM.hidden(IDS, state)
    LM.hidden(IDS, state[::-1])  # each cache now holds the other layer's keys


def nan_at(t, i=0):
    t = t.clone()
    t.view(-1)[i] = math.nan
    return t


# fmt: off
CASES = {
    # attention (Eq. 8.1)
    "sdpa_refuses_a_list": Case(sdpa, lambda: sdpa(Q.tolist(), K, V), TypeError, "query must be a torch.Tensor"),
    "sdpa_refuses_integer_keys": Case(sdpa, lambda: sdpa(Q, K.long(), V), TypeError, "key must be a floating-point"),
    "sdpa_refuses_a_1d_query": Case(sdpa, lambda: sdpa(Q[0, 0], K, V), ValueError, "query must have shape (..., T, d)"),
    "sdpa_refuses_nan": Case(sdpa, lambda: sdpa(Q, K, nan_at(V)), ValueError, "value contains NaN or inf"),
    "sdpa_refuses_d_k_mismatch": Case(sdpa, lambda: sdpa(Q, K[..., :6], V), ValueError, "share the last dimension d_k"),
    "sdpa_refuses_d_k_0": Case(sdpa, lambda: sdpa(Q[..., :0], K[..., :0], V), ValueError, "d_k >= 1"),
    "sdpa_refuses_values_of_another_length": Case(sdpa, lambda: sdpa(Q, K, V[:, :4]), ValueError, "key and value must have the same length"),
    "sdpa_refuses_mixed_dtypes": Case(sdpa, lambda: sdpa(Q.double(), K, V), TypeError, "share one device and dtype"),
    "sdpa_refuses_batches_that_do_not_broadcast": Case(sdpa, lambda: sdpa(Q[:1].expand(3, 4, 8), K, V), ValueError, "batch dimensions do not broadcast"),
    "sdpa_refuses_a_mask_that_does_not_fit": Case(sdpa, lambda: sdpa(Q, K, V, torch.ones(4, 4, dtype=torch.bool)), ValueError, "mask of shape (4, 4) does not broadcast"),
    "sdpa_refuses_an_integer_mask": Case(sdpa, lambda: sdpa(Q, K, V, torch.ones(4, 5, dtype=torch.long)), TypeError, "for a 0/1 integer mask use mask.bool()"),
    "sdpa_refuses_a_multiplicative_float_mask": Case(sdpa, lambda: sdpa(Q, K, V, torch.ones(4, 5).tril()), ValueError, "looks multiplicative"),
    "sdpa_refuses_nan_in_a_float_mask": Case(sdpa, lambda: sdpa(Q, K, V, nan_at(torch.zeros(4, 5))), ValueError, "must not contain NaN or +inf"),
    "sdpa_refuses_a_float_mask_of_another_dtype": Case(sdpa, lambda: sdpa(Q, K, V, torch.zeros(4, 5).double()), TypeError, "the dtype of the query"),
    "sdpa_refuses_a_string_scale": Case(sdpa, lambda: sdpa(Q, K, V, scale="0.5"), TypeError, "scale must be a real number"),
    "sdpa_refuses_an_infinite_scale": Case(sdpa, lambda: sdpa(Q, K, V, scale=math.inf), ValueError, "scale must be a finite number"),
    "sdpa_refuses_scores_that_overflow_float16": Case(sdpa, lambda: sdpa(*[torch.full((1, 2, 64), 40.0).half()] * 3), ValueError, "overflow torch.float16"),
    # masks
    "causal_mask_refuses_more_queries_than_keys": Case(causal_mask, lambda: causal_mask(5, 3), ValueError, "0 <= T_q <= T_k, got T_q=5, T_k=3"),
    "causal_mask_refuses_a_float_size": Case(causal_mask, lambda: causal_mask(4.0), TypeError, "T_q must be an int"),
    "causal_mask_refuses_an_unknown_device": Case(causal_mask, lambda: causal_mask(3, device="gpu"), ValueError, "device must be one of"),
    "causal_mask_refuses_a_size_no_machine_holds": Case(causal_mask, lambda: causal_mask(1, 10**13), ValueError, "more than the"),
    "padding_mask_refuses_a_length_past_max_len": Case(padding_mask, lambda: padding_mask([3, 7], max_len=5), ValueError, "exceeds max_len=5: lengths [3, 7]"),
    "padding_mask_refuses_negative_lengths": Case(padding_mask, lambda: padding_mask([3, -1]), ValueError, "lengths must be a non-empty 1-D sequence of integers >= 0"),
    "padding_mask_refuses_bools_as_lengths": Case(padding_mask, lambda: padding_mask([True, 2]), ValueError, "lengths must be"),
    "padding_mask_refuses_fractional_lengths": Case(padding_mask, lambda: padding_mask([2.5, 3.0]), ValueError, "lengths must be"),
    "padding_mask_refuses_no_lengths": Case(padding_mask, lambda: padding_mask([]), ValueError, "lengths must be a non-empty"),
    "padding_mask_refuses_a_float_max_len": Case(padding_mask, lambda: padding_mask([2], max_len=4.0), TypeError, "max_len must be an int"),
    "padding_mask_from_ids_refuses_float_ids": Case(padding_mask_from_ids, lambda: padding_mask_from_ids(torch.ones(2, 3), 0), TypeError, "ids must be an integer tensor"),
    "padding_mask_from_ids_refuses_1d_ids": Case(padding_mask_from_ids, lambda: padding_mask_from_ids(IDS[0], 0), ValueError, "ids must have shape (B, T)"),
    "padding_mask_from_ids_refuses_a_float_pad_id": Case(padding_mask_from_ids, lambda: padding_mask_from_ids(IDS, 0.5), TypeError, "pad_id must be an int"),
    "key_padding_refuses_a_float_keep": Case(key_padding, lambda: key_padding(torch.ones(2, 3)), TypeError, "keep must be a (B, T_k) bool mask"),
    "key_padding_refuses_a_negative_t_q": Case(key_padding, lambda: key_padding(KEEP, -2), ValueError, "T_q must be >= 0"),
    "self_attention_mask_refuses_a_non_bool_causal": Case(sam, lambda: sam(KEEP, causal="no"), TypeError, "causal must be True or False"),
    # multi-head attention and its KV cache
    "MultiHeadAttention_refuses_heads_that_do_not_divide_d_model": Case(MHA, lambda: MHA(32, 5), ValueError, "n_heads=5 must divide d_model=32"),
    "MultiHeadAttention_refuses_kv_heads_that_do_not_divide_the_heads": Case(MHA, lambda: MHA(32, 8, 3), ValueError, "n_kv_heads=3 must divide n_heads=8"),
    "MultiHeadAttention_refuses_a_string_size": Case(MHA, lambda: MHA(8, 2, n_kv_heads="2"), TypeError, "n_kv_heads must be an int, got str"),
    "MultiHeadAttention_refuses_a_size_no_machine_holds": Case(MHA, lambda: MHA(10**6, 4), ValueError, "d_model=1000000 would need"),
    "MultiHeadAttention_refuses_a_dropout_of_1_5": Case(MHA, lambda: MHA(32, 4, dropout=1.5), ValueError, "dropout is a probability in [0, 1)"),
    "MultiHeadAttention_refuses_a_non_bool_bias": Case(MHA, lambda: MHA(32, 4, bias=1), TypeError, "bias must be True or False"),
    "MultiHeadAttention_refuses_a_wrong_width": Case(MHA, lambda: M(torch.randn(2, 5, 24)), ValueError, "query must have shape (B, T, d_model=16), got (2, 5, 24)"),
    "MultiHeadAttention_refuses_integer_input": Case(MHA, lambda: M(X.long()), TypeError, "query must be a real floating-point tensor"),
    "MultiHeadAttention_refuses_float16_into_float32_weights": Case(MHA, lambda: M(X.half()), TypeError, "query has dtype torch.float16"),
    "MultiHeadAttention_refuses_batches_that_differ": Case(MHA, lambda: M(X, X[:1]), ValueError, "must share B"),
    "MultiHeadAttention_refuses_a_key_padding_mask_with_a_hint": Case(MHA, lambda: M(X, X, mask=KEEP), ValueError, "looks like a (B, T_k) key-padding mask"),
    "MultiHeadAttention_refuses_causal_cross_attention_with_fewer_keys": Case(MHA, lambda: M(X, X[:, :3], is_causal=True), ValueError, "causal mask needs 0 <= T_q <= T_k"),
    "MultiHeadAttention_refuses_a_cache_for_cross_attention": Case(MHA, lambda: M(X, X.clone(), cache=KVCache(8)), ValueError, "cache= is for self-attention"),
    "MultiHeadAttention_refuses_a_full_cache": Case(MHA, lambda: M(X, cache=KVCache(4)), ValueError, "the KV cache holds 4 positions; 5 were asked for"),
    "MultiHeadAttention_refuses_rope_positions_past_its_table": Case(MHA, lambda: M(X, rope=RoPE(8, 32).at(30, 30)), ValueError, "positions 30..34 exceed RoPE's table of max_len=32"),
    "Transformer_hidden_refuses_caches_of_other_layers": Case(Transformer, two_steps_with_swapped_caches, ValueError, "another attention layer"),
    "KVCache_refuses_a_fractional_capacity": Case(KVCache, lambda: KVCache(2.5), TypeError, "capacity must be an int"),
    "split_heads_refuses_features_that_do_not_split": Case(split_heads, lambda: split_heads(torch.randn(2, 5, 30), 4), ValueError, "with n_heads=4, got a torch.float32 tensor of shape (2, 5, 30)"),
    "split_heads_refuses_float_heads": Case(split_heads, lambda: split_heads(X, 2.0), TypeError, "n_heads must be an int"),
    "merge_heads_refuses_a_3d_tensor": Case(merge_heads, lambda: merge_heads(X), ValueError, "merge_heads expects a (B, h, T, d_head) tensor"),
    # positions
    "sinusoid_frequencies_refuses_an_odd_d": Case(sinusoid_frequencies, lambda: sinusoid_frequencies(7), ValueError, "d_model must be a positive even integer"),
    "sinusoidal_encoding_refuses_a_fractional_length": Case(sinusoidal_encoding, lambda: sinusoidal_encoding(2.5, 4), TypeError, "n_positions must be an int"),
    "sinusoidal_encoding_refuses_a_base_of_0": Case(sinusoidal_encoding, lambda: sinusoidal_encoding(3, 4, base=0), ValueError, "base must be a finite positive number"),
    "sinusoidal_encoding_refuses_a_table_no_machine_holds": Case(sinusoidal_encoding, lambda: sinusoidal_encoding(10**12, 512), ValueError, "a sinusoidal table of n_positions"),
    "SinusoidalPositionalEncoding_refuses_max_len_0": Case(SinusoidalPositionalEncoding, lambda: SinusoidalPositionalEncoding(8, 0), ValueError, "max_len must be >= 1"),
    "SinusoidalPositionalEncoding_refuses_a_fractional_offset": Case(SinusoidalPositionalEncoding, lambda: SPE(X, offset=1.5), TypeError, "offset must be an int"),
    "SinusoidalPositionalEncoding_refuses_positions_past_its_table": Case(SinusoidalPositionalEncoding, lambda: SPE(X, offset=4), ValueError, "positions 4..8 exceed"),
    "SinusoidalPositionalEncoding_refuses_integer_x": Case(SinusoidalPositionalEncoding, lambda: SPE(X.long()), TypeError, "x must be a floating-point tensor"),
    "LearnedPositionalEmbedding_refuses_d_model_0": Case(LearnedPositionalEmbedding, lambda: LearnedPositionalEmbedding(16, 0), ValueError, "d_model must be >= 1"),
    "LearnedPositionalEmbedding_refuses_a_wrong_width": Case(LearnedPositionalEmbedding, lambda: LPE(Q), ValueError, "expects x of shape (B, T, d_model=16)"),
    "alibi_bias_refuses_a_fractional_length": Case(alibi_bias, lambda: alibi_bias(2.5, 4), TypeError, "T_q must be an int"),
    "alibi_bias_refuses_an_integer_dtype": Case(alibi_bias, lambda: alibi_bias(3, 4, dtype=torch.int64), TypeError, "dtype must be a floating torch.dtype"),
    "alibi_bias_refuses_an_empty_bias_with_a_huge_key_length": Case(alibi_bias, lambda: alibi_bias(0, 1, 10**12), ValueError, "T_k=1000000000000"),
    "alibi_slopes_refuses_0_heads": Case(alibi_slopes, lambda: alibi_slopes(0), ValueError, "n_heads must be >= 1"),
    "ALiBi_refuses_a_fractional_length": Case(ALiBi, lambda: ALiBi(4)(1.5), TypeError, "T_q must be an int"),
    "RelativeBiasTable_refuses_0_heads": Case(RelativeBiasTable, lambda: RelativeBiasTable(0), ValueError, "n_heads must be >= 1"),
    # rotary embeddings
    "rope_frequencies_refuses_a_nan_base": Case(rope_frequencies, lambda: rope_frequencies(8, math.nan), ValueError, "base must be a finite positive number"),
    "apply_rope_refuses_an_unknown_pairing": Case(apply_rope, lambda: apply_rope(Q, pairing="halves"), ValueError, "pairing must be one of"),
    "apply_rope_refuses_an_odd_last_dimension": Case(apply_rope, lambda: apply_rope(V), ValueError, "the last dimension of x must be a positive even integer"),
    "apply_rope_refuses_integer_x": Case(apply_rope, lambda: apply_rope(Q.long()), TypeError, "x must be a floating-point tensor"),
    "apply_rope_refuses_positions_of_another_length": Case(apply_rope, lambda: apply_rope(Q, torch.arange(3)), ValueError, "positions must have shape (T,) = (4,)"),
    "RoPE_refuses_an_odd_d_head": Case(RoPE, lambda: RoPE(7), ValueError, "d_head must be a positive even integer"),
    "RoPE_refuses_tables_no_machine_holds": Case(RoPE, lambda: RoPE(64, 10**12), ValueError, "RoPE's tables for max_len=1000000000000"),
    "RoPE_refuses_a_query_of_another_head_size": Case(RoPE, lambda: RoPE(4, 32)(Q, Q), ValueError, "RoPE(d_head=4) expects q of shape"),
    "RoPE_refuses_a_fractional_offset": Case(RoPE, lambda: RoPE(8).rotate(Q, 1.5), TypeError, "offset must be an int"),
    "RoPE_refuses_a_non_bool_in_place": Case(RoPE, lambda: RoPE(8)(Q, Q, in_place=1), TypeError, "in_place must be True or False"),
    # the configuration
    "TransformerConfig_refuses_an_unknown_field_by_name": Case(Cfg, lambda: Cfg(n_head=2), TypeError, "n_head"),
    "TransformerConfig_refuses_a_string_for_a_flag": Case(Cfg, lambda: Cfg(norm_first="False"), TypeError, "norm_first must be True or False, got 'False'"),
    "TransformerConfig_refuses_a_name_that_is_not_a_string": Case(Cfg, lambda: Cfg(name=3), TypeError, "name must be a string, got 3"),
    "TransformerConfig_refuses_a_published_count_that_is_not_a_number": Case(Cfg, lambda: Cfg(published="1M"), TypeError, "published (the authors' parameter count) must be a real number"),
    "TransformerConfig_refuses_an_unknown_norm": Case(Cfg, lambda: Cfg(norm="batch"), ValueError, "norm must be one of ('layer', 'rms'), got 'batch'"),
    "TransformerConfig_refuses_an_unknown_arch": Case(Cfg, lambda: Cfg(arch="gpt"), ValueError, "arch must be one of"),
    "TransformerConfig_refuses_d_ff_0": Case(Cfg, lambda: Cfg(d_ff=0), ValueError, "d_ff (the FFN hidden width) must be a positive integer"),
    "TransformerConfig_refuses_n_layers_0": Case(Cfg, lambda: Cfg(n_layers=0), ValueError, "n_layers must be >= 1, got 0"),
    "TransformerConfig_refuses_eps_0": Case(Cfg, lambda: Cfg(eps=0.0), ValueError, "eps must be a positive finite number"),
    "TransformerConfig_refuses_an_odd_rope_d_head": Case(Cfg, lambda: Cfg(d_model=6, n_heads=2, positions="rope"), ValueError, "d_head = d_model / n_heads must be even, got 3"),
    "TransformerConfig_refuses_decoder_fields_without_a_decoder": Case(Cfg, lambda: Cfg(tgt_vocab=9), ValueError, "n_dec_layers and tgt_vocab belong to an encoder-decoder"),
    "TransformerConfig_refuses_shared_embeddings_of_two_vocabularies": Case(Cfg, lambda: Cfg(arch="encoder-decoder", tgt_vocab=30, share_embeddings=True), ValueError, "share_embeddings needs one vocabulary"),
    "TransformerConfig_refuses_decreasing_cutoffs": Case(Cfg, lambda: Cfg(**{**ADAPTIVE, "cutoffs": (50, 10)}), ValueError, "cutoffs must increase strictly and stay below the vocabulary (100)"),
    "TransformerConfig_refuses_a_tail_projected_to_nothing": Case(Cfg, lambda: Cfg(**ADAPTIVE, div_value=8.0), ValueError, "to d_model // div_value**2 = 0 dimensions"),
    "TransformerConfig_refuses_a_div_value_no_machine_holds": Case(Cfg, lambda: Cfg(**ADAPTIVE, div_value=1e-300), ValueError, "div_value=1e-300 makes a tail cluster project d_model=16"),
    "TransformerConfig_refuses_scaled_adaptive_input": Case(Cfg, lambda: Cfg(**ADAPTIVE, tie_output=True, scale_embeddings=True), ValueError, "already scaled by sqrt(d_model)"),
    "TransformerConfig_refuses_a_tied_output_without_one": Case(Cfg, lambda: Cfg(lm_head=False), ValueError, "tie_output=True needs an output projection"),
    "TransformerConfig_refuses_a_pad_id_outside_the_vocabulary": Case(Cfg, lambda: Cfg(vocab=10, pad_id=10, tie_output=False), ValueError, "pad_id must be an id of the vocabulary, in [0, 10)"),
    "TransformerConfig_refuses_a_pad_id_with_tied_tables": Case(Cfg, lambda: Cfg(vocab=10, pad_id=0), ValueError, "set tie_output=False"),
    # blocks and stacks
    "make_norm_refuses_sizes": Case(make_norm, lambda: make_norm(16), TypeError, "expected a TransformerConfig"),
    "FeedForward_refuses_sizes": Case(FeedForward, lambda: FeedForward(16), TypeError, "expected a TransformerConfig"),
    "FeedForward_refuses_a_wrong_width": Case(FeedForward, lambda: FeedForward(CFG)(Q), ValueError, "FeedForward input x must have shape (..., d_model=16)"),
    "EncoderLayer_refuses_a_missing_batch_axis": Case(EncoderLayer, lambda: EncoderLayer(CFG)(X[0]), ValueError, "EncoderLayer input x must have shape (B, T, d_model=16), got (5, 16)"),
    "EncoderLayer_refuses_rope_of_another_head_size": Case(EncoderLayer, lambda: EncoderLayer(CFG)(X, rope=RoPE(4, 32)), ValueError, "RoPE(d_head=4) expects q"),
    "DecoderLayer_refuses_memory_of_another_width": Case(DecoderLayer, lambda: DecoderLayer(CFG)(X, Q), ValueError, "memory (the encoder output) must have shape"),
    "DecoderLayer_refuses_memory_of_another_batch": Case(DecoderLayer, lambda: DecoderLayer(CFG)(X, X[:1]), ValueError, "memory has batch size 1 but the decoder input has 2"),
    "Encoder_refuses_caches_from_the_user": Case(Encoder, lambda: Encoder(CFG)(X, caches=[]), ValueError, "caches= is for Transformer.hidden(ids, state)"),
    "Encoder_refuses_a_keep_of_another_length": Case(Encoder, lambda: Encoder(CFG)(X, KEEP[:, :4]), ValueError, "keep must have the shape (B, T) = (2, 5)"),
    "Encoder_refuses_an_integer_keep": Case(Encoder, lambda: Encoder(CFG)(X, KEEP.long()), TypeError, "keep must be a bool mask"),
    "Encoder_refuses_a_list_mask": Case(Encoder, lambda: Encoder(CFG)(X, mask=[[True]]), TypeError, "mask must be a torch.Tensor"),
    "Decoder_refuses_integer_memory": Case(Decoder, lambda: Decoder(CFG)(X, X.long()), TypeError, "memory (the encoder output) must be a real floating-point"),
    # the model
    "Transformer_refuses_a_table_no_machine_holds": Case(Transformer, lambda: Transformer(vocab=10**9), ValueError, "the token table of vocab=1000000000 x d_model=512 would need"),
    "Transformer_refuses_float_ids": Case(Transformer, lambda: LM(torch.zeros(1, 3)), TypeError, "ids must be an integer tensor of word ids, got torch.float32"),
    "Transformer_refuses_ids_outside_the_vocabulary": Case(Transformer, lambda: LM(torch.tensor([[-1, 25]])), ValueError, "ids must lie in [0, 20), got range [-1, 25]"),
    "Transformer_refuses_1d_ids": Case(Transformer, lambda: LM(IDS[0]), ValueError, "ids must have shape (B, T), got (3,)"),
    "Transformer_refuses_meta_ids": Case(Transformer, lambda: LM(IDS.to("meta")), ValueError, "ids is on the meta device but the model is on cpu"),
    "Transformer_refuses_a_sequence_past_max_len": Case(Transformer, lambda: LM(torch.ones(1, 33, dtype=torch.long)), ValueError, "positions 0..32 exceed max_len=32"),
    "Transformer_refuses_targets_of_another_shape": Case(Transformer, lambda: LM(IDS, IDS[:, :2]), ValueError, "targets must have the shape of ids"),
    "Transformer_refuses_a_loss_over_an_empty_batch": Case(Transformer, lambda: LM(EMPTY, EMPTY), ValueError, "a loss needs at least one target"),
    "Transformer_refuses_tgt_for_a_decoder": Case(Transformer, lambda: LM(IDS, tgt=IDS), ValueError, "arch='decoder' takes one sequence of ids"),
    "Transformer_refuses_an_encoder_decoder_without_tgt": Case(Transformer, lambda: S2S(IDS), ValueError, "an encoder-decoder needs forward(src, tgt=...)"),
    "Transformer_refuses_a_loss_without_a_head": Case(Transformer, lambda: Transformer(**SMALL, lm_head=False, tie_output=False)(IDS, IDS), ValueError, "no output layer (lm_head=False)"),
    "Transformer_refuses_to_run_t5_positions": Case(Transformer, lambda: Transformer(**SMALL, positions="t5-bias")(IDS), NotImplementedError, "T5's bucketed relative-position bias"),
    "Transformer_hidden_refuses_a_state_that_is_not_init_state": Case(Transformer, lambda: LM.hidden(IDS, (1, 2)), ValueError, "state must be init_state()"),
    "Transformer_hidden_refuses_one_cache_for_two_layers": Case(Transformer, lambda: LM.hidden(IDS, [KVCache(32)] * 2), ValueError, "a cache belongs to one layer"),
    "Transformer_hidden_refuses_padding_with_a_cache": Case(Transformer, lambda: LM.hidden(IDS, LM.init_state(), IDS > 0), ValueError, "keep (padding) does not combine with a KV cache"),
    "Transformer_encode_belongs_to_an_encoder_decoder": Case(Transformer, lambda: LM.encode(IDS), ValueError, "encode belongs to an encoder-decoder; this model has arch='decoder'"),
    "Transformer_decode_refuses_tgt_outside_the_vocabulary": Case(Transformer, lambda: S2S.decode(torch.tensor([[1, 25]]), MEM), ValueError, "tgt must lie in [0, 20)"),
    "Transformer_decode_refuses_memory_of_another_width": Case(Transformer, lambda: S2S.decode(IDS, MEM[..., :8]), ValueError, "memory (the encoder output) must have shape"),
    "Transformer_decode_refuses_memory_of_another_batch": Case(Transformer, lambda: S2S.decode(IDS, MEM.expand(2, 3, 16)), ValueError, "memory has batch size 2 but the decoder input has 1"),
    "Transformer_decode_refuses_a_source_keep_of_another_length": Case(Transformer, lambda: S2S.decode(IDS, MEM, IDS[:, :2] > 0), ValueError, "memory_keep (source padding) must have the shape"),
    "LanguageModel_nll_refuses_an_unknown_reduction": Case(LanguageModel, lambda: LSTMLM(20, 8, 8, head="full").nll(IDS, IDS, reduction="avg"), ValueError, "reduction must be one of"),
    "LanguageModel_nll_refuses_an_empty_batch": Case(LanguageModel, lambda: LM.nll(EMPTY.T, EMPTY.T), ValueError, "a loss needs at least one target"),
    "LSTMLM_refuses_decreasing_cutoffs": Case(LSTMLM, lambda: LSTMLM(20, 8, head="adaptive", ranks=torch.arange(20), cutoffs=(10, 5)), ValueError, "cutoffs must increase strictly"),
    "LSTMLM_refuses_a_hidden_size_of_0": Case(LSTMLM, lambda: LSTMLM(50, d_model=16, hidden_size=0, head="full"), ValueError, "hidden_size must be >= 1"),
    "OutputHead_refuses_an_output_layer_of_no_size": Case(OutputHead, lambda: OutputHead("full", 0, 10), ValueError, "d_model must be >= 1, got 0"),
    "OutputHead_refuses_an_unknown_kind": Case(OutputHead, lambda: OutputHead("softmax", 8, 10), ValueError, "head must be one of"),
    "OutputHead_refuses_an_adaptive_head_without_ranks": Case(OutputHead, lambda: OutputHead("adaptive", 8, 10, cutoffs=(4,)), ValueError, "needs ranks = frequency_ranks"),
    "OutputHead_refuses_ranks_that_are_no_permutation": Case(OutputHead, lambda: OutputHead("adaptive", 8, 10, torch.zeros(10).long(), (4,)), ValueError, "ranks must be a permutation"),
    "frequency_ranks_refuses_float_ids": Case(frequency_ranks, lambda: frequency_ranks(torch.rand(5), 10), TypeError, "train_ids must be an integer tensor"),
    "frequency_ranks_refuses_ids_outside_the_vocabulary": Case(frequency_ranks, lambda: frequency_ranks(torch.tensor([-1, 2]), 10), ValueError, "train_ids must lie in [0, vocab_size=10)"),
    "head_stats_refuses_rows_that_are_not_probabilities": Case(head_stats, lambda: head_stats(torch.full((2, 4, 4), 3.0)), ValueError, "each row non-negative and summing to 1"),
    # generation
    "generate_refuses_a_model_that_is_no_language_model": Case(generate, lambda: generate(torch.nn.Linear(2, 2), P, 3), TypeError, "model must be a decoder-only Transformer or an LSTMLM"),
    "generate_refuses_a_model_without_a_head": Case(generate, lambda: generate(Transformer(**SMALL, lm_head=False, tie_output=False), P, 2), ValueError, "no output layer"),
    "generate_refuses_t5_positions": Case(generate, lambda: generate(Transformer(**SMALL, positions="t5-bias"), P, 2), NotImplementedError, "T5's bucketed relative-position bias"),
    "generate_refuses_a_float_prompt": Case(generate, lambda: generate(LM, P.float(), 3), TypeError, "prompt must be a non-empty 1-D integer tensor of word ids, got a torch.float32"),
    "generate_refuses_an_empty_prompt": Case(generate, lambda: generate(LM, P[:0], 3), TypeError, "prompt must be a non-empty 1-D"),
    "generate_refuses_a_prompt_outside_the_vocabulary": Case(generate, lambda: generate(LM, torch.tensor([1, 20]), 3), ValueError, "prompt must lie in [0, 20), got range [1, 20]"),
    "generate_refuses_a_negative_n_new": Case(generate, lambda: generate(LM, P, -1), ValueError, "n_new must be >= 0"),
    "generate_refuses_a_negative_top_k": Case(generate, lambda: generate(LM, P, 3, 1.0, -1), ValueError, "top_k must be >= 0"),
    "generate_refuses_a_nan_temperature": Case(generate, lambda: generate(LM, P, 3, math.nan), ValueError, "temperature must be a finite number"),
    "generate_refuses_a_negative_temperature": Case(generate, lambda: generate(LM, P, 3, -0.5), ValueError, "temperature must be a finite number >= 0"),
    "generate_refuses_a_tiny_temperature": Case(generate, lambda: generate(LM, P, 3, 1e-300), ValueError, "temperature=1e-300 is so small"),
    "generate_refuses_a_seed_past_2_63": Case(generate, lambda: generate(LM, P, 3, seed=2**70), ValueError, "seed must be None or an int below 2**63"),
    "generate_refuses_a_non_bool_use_cache": Case(generate, lambda: generate(LM, P, 2, use_cache="no"), TypeError, "use_cache must be True or False, got 'no'"),
    "generate_refuses_more_tokens_than_the_cache_holds": Case(generate, lambda: generate(LM, P, 40), ValueError, "exceeds max_len=32"),
    "generate_refuses_a_kv_cache_no_machine_holds": Case(generate, lambda: generate(HUGE, P, 2), ValueError, "a KV cache of 2 layers x max_len=1099511627776 positions would need"),
    "generate_takes_a_tiny_but_usable_temperature": Gives(generate, lambda: len(generate(LM, P, 3, temperature=1e-30)), 5),
    "generate_takes_a_numpy_seed_like_an_int": Gives(generate, lambda: generate(LM, P, 5, 1.0, seed=np.int64(5)).tolist(), generate(LM, P, 5, 1.0, seed=5).tolist()),
    "generate_without_a_cache_needs_no_cache_memory": Gives(generate, lambda: len(generate(HUGE, P[:1], 2, use_cache=False)), 3),
}
# fmt: on


@parametrize(CASES)
def test_the_core_refuses_bad_input_by_name(name):
    CASES[name].check()


def test_edge_input_that_is_not_bad_gets_the_right_answer():
    out, w = sdpa(Q, K[:, :0], V[:, :0])  # no keys at all: zero weights and a zero output, no NaN
    assert torch.equal(out, torch.zeros(2, 4, 3)) and w.shape == (2, 4, 0)
    out, w = sdpa(Q, K, V, scale=0.0)  # every score 0: uniform weights, the mean of the values
    assert torch.allclose(out, V.mean(-2, keepdim=True).expand_as(out))
    assert causal_mask(0).shape == (0, 0) and causal_mask(torch.tensor(3)).shape == (3, 3)
    assert padding_mask([0, 2], max_len=3).tolist() == [[False] * 3, [True, True, False]]
    assert alibi_bias(0, 2).shape == (2, 0, 0) and sinusoidal_encoding(0, 4).shape == (0, 4)
    assert LPE(X.bfloat16()).dtype == torch.bfloat16  # the output keeps x's dtype


def test_an_additive_mask_and_padding_combine():
    enc, keep = Encoder(CFG).eval(), torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    bias = -torch.rand(2, 5, 5)  # (h, T, T), as ALiBi's
    with torch.no_grad():
        by_hand = enc(X, None, mask=torch.where(keep[:, None, None, :], bias, float("-inf")))
        assert torch.allclose(enc(X, keep, mask=bias), by_hand, atol=1e-6)


def test_generate_restores_train_mode_after_an_error():
    m = Transformer(**SMALL).train()
    m.head.greedy = lambda h: (_ for _ in ()).throw(RuntimeError("boom inside the loop"))
    with pytest.raises(RuntimeError, match="boom"):
        generate(m, P, 3)
    assert m.training


def test_a_bf16_rope_model_generates_with_the_kv_cache():
    m = Transformer(**SMALL, positions="rope").to(torch.bfloat16)
    out = generate(m, torch.tensor([1, 2, 3]), 10)
    assert out.shape == (13,) and int(out.min()) >= 0 and int(out.max()) < 20
