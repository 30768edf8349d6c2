"""Impossible configurations and bad arguments to params.py raise clear errors."""

import pytest
import torch

from transformer_nb.params import (
    PRESETS,
    TransformerConfig,
    attention_params,
    build_transformer,
    bytes_human,
    ffn_params,
    norm_params,
    numel,
    numel_breakdown,
    param_breakdown,
    position_params,
)


@pytest.mark.parametrize(
    "fields,words",
    [
        (dict(d_model=512, n_heads=7), "n_heads=7 must divide d_model=512"),
        (dict(n_heads=8, n_kv_heads=3), "n_kv_heads=3 must divide n_heads=8"),
        (dict(arch="encoder-decoder", vocab=32000, tgt_vocab=30000), "share_embeddings needs one vocabulary"),
        (dict(arch="decoder-only"), "arch must be one of"),
        (dict(activation="tanh"), "activation must be one of"),
        (dict(norm="batch"), "norm must be one of"),
        (dict(positions="relative"), "positions must be one of"),
        (dict(d_ff=0), "d_ff (the FFN hidden width) must be a positive integer"),
        (dict(n_layers=0), "n_layers must be >= 1, got 0"),
        (dict(vocab=-1), "vocab must be >= 1, got -1"),
        (dict(positions="learned", max_len=0), "max_len must be >= 1, got 0"),
        (dict(d_model=24, n_heads=8, positions="rope"), "d_head = d_model / n_heads must be even"),
        (dict(arch="decoder", n_dec_layers=6), "belong to an encoder-decoder"),
        (dict(lm_head=False), "tie_output=True needs an output projection"),
        (dict(lm_head=False, tie_output=False, output_bias=True), "output_bias=True needs an output projection"),
        (dict(token_types=-1), "token_types must be >= 0, got -1"),
        (dict(eps=0.0), "eps must be a positive finite number"),
    ],
)
def test_invalid_configs_are_refused_when_made(fields, words):
    with pytest.raises(ValueError) as err:
        TransformerConfig(**fields)
    assert words in str(err.value)


@pytest.mark.parametrize("formula", [attention_params, ffn_params, norm_params, position_params])
def test_formula_argument_errors(formula):
    with pytest.raises(TypeError, match="expected a TransformerConfig"):  # sizes are checked when a config is made
        formula(64)
    assert formula(TransformerConfig(d_model=64, n_heads=4)) >= 0


def test_wrong_model_types_and_devices():
    with pytest.raises(TypeError, match="expected a TransformerConfig"):
        param_breakdown({"d_model": 512})
    with pytest.raises(TypeError, match="build_transformer needs a TransformerConfig"):
        build_transformer("gpt2-small")
    with pytest.raises(ValueError, match="device must name a torch device"):
        build_transformer(PRESETS["gpt2-small"], device="gpu")
    with pytest.raises(TypeError, match="numel needs an nn.Module"):
        numel([1, 2])
    with pytest.raises(TypeError, match="needs an nn.Module"):
        numel_breakdown(object())
    with pytest.raises(ValueError, match="must divide d_model"):
        PRESETS["gpt2-small"].with_(n_heads=5)


def test_forward_refuses_wrong_inputs():
    m = build_transformer(TransformerConfig(d_model=16, n_heads=2, n_layers=1, vocab=10), device="cpu")
    with pytest.raises(TypeError, match="integer tensor of word ids"):
        m(torch.ones(1, 3))
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 10\), got range \[1, 11\]"):
        m(torch.tensor([[1, 11]]))
    with pytest.raises(ValueError, match="ids must have shape"):
        m(torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="tgt is for an encoder-decoder"):
        m(torch.zeros(1, 3, dtype=torch.long), tgt=torch.zeros(1, 3, dtype=torch.long))
    ed = build_transformer(
        TransformerConfig(arch="encoder-decoder", d_model=16, n_heads=2, n_layers=1, vocab=10), device="cpu"
    )
    with pytest.raises(ValueError, match="needs forward"):
        ed(torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(NotImplementedError, match="counted here, not implemented"):
        build_transformer(PRESETS["t5-base"])(torch.zeros(1, 3, dtype=torch.long, device="meta"))


@pytest.mark.parametrize("n", [-1, float("nan"), float("inf"), "5", None])
def test_bytes_human_refuses_what_is_not_a_byte_count(n):
    with pytest.raises(ValueError, match="n must be a finite number of bytes"):
        bytes_human(n)
