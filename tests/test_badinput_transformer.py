"""Bad input to the one configuration (``config.py``), the one model (``transformer.py``) and the hidden-state
checks its blocks share: a clear error naming the argument."""

import torch
from badinput import Case, parametrize

from transformer_nb import probes
from transformer_nb.core import block, config, multihead, transformer
from transformer_nb.lstm import LSTMLM

T = "transformer_nb.core.transformer."
C = "transformer_nb.core.config."
K = "transformer_nb.core.checks."
IDS = torch.zeros(1, 3, dtype=torch.long)
SMALL = dict(vocab=20, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16)


def encoder() -> transformer.Transformer:
    return transformer.Transformer(**SMALL, arch="encoder")


CASES = {
    "TransformerConfig_refuses_an_unknown_field_by_name": Case(
        C + "TransformerConfig", lambda: config.TransformerConfig(n_head=2), TypeError, "n_head"
    ),
    "validate_refuses_heads_that_do_not_divide_d_model_when_a_config_is_made": Case(
        K + "validate",
        lambda: config.TransformerConfig(d_model=16, n_heads=3),
        ValueError,
        "n_heads=3 must divide d_model=16",
    ),
    "check_config_refuses_sizes_in_place_of_a_configuration": Case(
        K + "check_config", lambda: config.check_config(16), TypeError, "expected a TransformerConfig"
    ),
    "Transformer_refuses_float_ids": Case(
        T + "Transformer", lambda: encoder()(torch.zeros(1, 3)), TypeError, "ids must be an integer tensor"
    ),
    "LanguageModel_nll_refuses_an_unknown_reduction": Case(
        T + "LanguageModel",
        lambda: LSTMLM(20, 8, 8, head="full").nll(IDS, IDS, reduction="avg"),
        ValueError,
        "reduction must be",
    ),
    "check_language_model_refuses_an_encoder": Case(
        K + "check_language_model",
        lambda: transformer.check_language_model(encoder()),
        TypeError,
        "model must be a decoder-only Transformer or an LSTMLM, got a Transformer with arch='encoder'",
    ),
    "RelativeBiasTable_refuses_0_heads": Case(
        T + "RelativeBiasTable", lambda: transformer.RelativeBiasTable(0), ValueError, "n_heads must be >= 1"
    ),
    "check_decoder_inputs_refuses_memory_of_another_batch": Case(
        "transformer_nb.core.checks.check_decoder_inputs",
        lambda: block.check_decoder_inputs(
            torch.zeros(2, 3, 8), torch.zeros(1, 4, 8), 8, torch.zeros(8, 8), "DecoderLayer"
        ),
        ValueError,
        "memory has batch size 1 but the decoder input has 2",
    ),
    "check_hidden_refuses_ids_as_hidden_states": Case(
        "transformer_nb.core.checks.check_hidden",
        lambda: multihead.check_hidden(torch.zeros(1, 3, 8, dtype=torch.long), 8, "x"),
        TypeError,
        "x must be a real floating-point tensor",
    ),
    "check_heads_refuses_kv_heads_that_do_not_divide_the_heads": Case(
        "transformer_nb.core.checks.check_heads",
        lambda: multihead.check_heads(16, 4, 3),
        ValueError,
        "n_kv_heads=3 must divide n_heads=4",
    ),
    "validate_refuses_a_string_for_a_true_or_false_field": Case(
        K + "validate",
        lambda: config.TransformerConfig(**SMALL, norm_first="False"),
        TypeError,
        "norm_first must be True or False, got 'False'",
    ),
    "validate_refuses_a_number_for_a_true_or_false_field": Case(
        K + "validate",
        lambda: config.TransformerConfig(**SMALL, share_embeddings=0),
        TypeError,
        "share_embeddings must be True or False, got 0",
    ),
    "validate_refuses_a_string_for_final_norm": Case(
        K + "validate",
        lambda: config.TransformerConfig(**SMALL, final_norm="yes"),
        TypeError,
        "final_norm must be True or False, got 'yes'",
    ),
    "validate_refuses_a_name_that_is_not_a_string": Case(
        K + "validate", lambda: config.TransformerConfig(**SMALL, name=3), TypeError, "name must be a string, got 3"
    ),
    "validate_refuses_a_published_count_that_is_not_a_number": Case(
        K + "validate",
        lambda: config.TransformerConfig(**SMALL, published="1M"),
        TypeError,
        "published (the authors' parameter count) must be a real number, got str '1M'",
    ),
    "check_cutoffs_refuses_decreasing_cutoffs": Case(
        K + "check_cutoffs",
        lambda: config.TransformerConfig(**SMALL, adaptive=True, cutoffs=(10, 5)),
        ValueError,
        "cutoffs must increase strictly and stay below the vocabulary (20), got (10, 5)",
    ),
    "check_cutoffs_refuses_a_cutoff_past_the_vocabulary": Case(
        K + "check_cutoffs",
        lambda: config.TransformerConfig(**SMALL, adaptive=True),
        ValueError,
        "cutoffs must increase strictly and stay below the vocabulary (20), got (2000, 10000)",
    ),
    "check_cutoffs_refuses_a_zero_div_value": Case(
        K + "check_cutoffs",
        lambda: config.TransformerConfig(**SMALL, adaptive=True, cutoffs=(5, 10), div_value=0),
        ValueError,
        "div_value must be a finite positive number, got 0",
    ),
    "check_cutoffs_refuses_a_tail_projected_to_nothing": Case(
        K + "check_cutoffs",
        lambda: config.TransformerConfig(**SMALL, adaptive=True, cutoffs=(5, 10), div_value=8.0),
        ValueError,
        "would project d_model=16 to d_model // div_value**2 = 0 dimensions",
    ),
    "Encoder_refuses_caches_from_the_user": Case(
        "transformer_nb.core.stack.Encoder",
        lambda: encoder().blocks(torch.zeros(1, 3, 16), caches=[]),
        ValueError,
        "caches= is for Transformer.hidden(ids, state)",
    ),
    "LSTMLM_refuses_decreasing_cutoffs": Case(
        "transformer_nb.lstm.LSTMLM",
        lambda: LSTMLM(20, 8, head="adaptive", ranks=torch.arange(20), cutoffs=(10, 5)),
        ValueError,
        "cutoffs must increase strictly",
    ),
    "LSTMLM_refuses_a_hidden_size_of_0": Case(
        "transformer_nb.lstm.LSTMLM",
        lambda: LSTMLM(50, d_model=16, hidden_size=0, head="full"),
        ValueError,
        "hidden_size must be >= 1",
    ),
    "head_stats_refuses_rows_that_are_not_probabilities": Case(
        "transformer_nb.probes.head_stats",
        lambda: probes.head_stats(torch.full((2, 4, 4), 3.0)),
        ValueError,
        "each row non-negative and summing to 1",
    ),
}


@parametrize(CASES)
def test_the_model_refuses_bad_input_by_name(name):
    CASES[name].check()


def test_a_list_of_cutoffs_is_stored_as_a_tuple_so_the_configuration_stays_hashable():
    cfg = config.TransformerConfig(**SMALL, adaptive=True, tie_output=False, cutoffs=[5, 10])
    assert cfg.cutoffs == (5, 10) and hash(cfg) == hash(cfg.with_(cutoffs=(5, 10)))


def test_valid_adaptive_configurations_are_accepted_and_build():
    for cutoffs, div in (((5,), 4.0), ((5, 10), 4.0), ((5, 10), 2)):
        cfg = config.TransformerConfig(**SMALL, adaptive=True, tie_output=False, cutoffs=cutoffs, div_value=div)
        model = transformer.Transformer(cfg, ranks=torch.arange(20))
        assert model(IDS)[0].shape == (1, 3, 20)
