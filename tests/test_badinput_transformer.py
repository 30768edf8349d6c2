"""Bad input to the one configuration (``config.py``), the one model (``transformer.py``) and the hidden-state
checks its blocks share: a clear error naming the argument."""

import torch
from badinput import Case, parametrize

from transformer_nb.core import block, config, multihead, transformer
from transformer_nb.lstm import LSTMLM

T = "transformer_nb.core.transformer."
C = "transformer_nb.core.config."
IDS = torch.zeros(1, 3, dtype=torch.long)
SMALL = dict(vocab=20, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16)


def encoder() -> transformer.Transformer:
    return transformer.Transformer(**SMALL, arch="encoder")


CASES = {
    "TransformerConfig_refuses_an_unknown_field_by_name": Case(
        C + "TransformerConfig", lambda: config.TransformerConfig(n_head=2), TypeError, "n_head"
    ),
    "validate_refuses_heads_that_do_not_divide_d_model_when_a_config_is_made": Case(
        C + "validate",
        lambda: config.TransformerConfig(d_model=16, n_heads=3),
        ValueError,
        "n_heads=3 must divide d_model=16",
    ),
    "check_config_refuses_sizes_in_place_of_a_configuration": Case(
        C + "check_config", lambda: config.check_config(16), TypeError, "expected a TransformerConfig"
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
        T + "check_language_model",
        lambda: transformer.check_language_model(encoder()),
        TypeError,
        "model must be a decoder-only Transformer or an LSTMLM, got a Transformer with arch='encoder'",
    ),
    "RelativeBiasTable_refuses_0_heads": Case(
        T + "RelativeBiasTable", lambda: transformer.RelativeBiasTable(0), ValueError, "n_heads must be >= 1"
    ),
    "check_decoder_inputs_refuses_memory_of_another_batch": Case(
        "transformer_nb.core.block.check_decoder_inputs",
        lambda: block.check_decoder_inputs(
            torch.zeros(2, 3, 8), torch.zeros(1, 4, 8), 8, torch.zeros(8, 8), "DecoderLayer"
        ),
        ValueError,
        "memory has batch size 1 but the decoder input has 2",
    ),
    "check_hidden_refuses_ids_as_hidden_states": Case(
        "transformer_nb.core.multihead.check_hidden",
        lambda: multihead.check_hidden(torch.zeros(1, 3, 8, dtype=torch.long), 8, "x"),
        TypeError,
        "x must be a real floating-point tensor",
    ),
    "check_heads_refuses_kv_heads_that_do_not_divide_the_heads": Case(
        "transformer_nb.core.multihead.check_heads",
        lambda: multihead.check_heads(16, 4, 3),
        ValueError,
        "n_kv_heads=3 must divide n_heads=4",
    ),
}


@parametrize(CASES)
def test_the_model_refuses_bad_input_by_name(name):
    CASES[name].check()
