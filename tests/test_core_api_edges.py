"""The edges of the core's API (issue 40): what used to pass silently or fail deep inside torch is refused clearly,
or works."""

import numpy as np
import pytest
import torch

from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.generation import generate
from transformer_nb.core.output_head import OutputHead
from transformer_nb.core.transformer import Transformer

SMALL = dict(vocab=20, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=32)


@pytest.fixture(scope="module")
def lm():
    torch.manual_seed(0)
    return Transformer(**SMALL).eval()


def test_one_kv_cache_for_two_layers_is_refused(lm):
    cache = lm.init_state()[0]
    with pytest.raises(ValueError, match="a cache belongs to one layer"):
        lm.hidden(torch.tensor([[1, 2, 3]]), [cache, cache])
    state = lm.init_state()
    lm.hidden(torch.tensor([[1, 2]]), state)
    with pytest.raises(ValueError, match="another attention layer"):
        lm.hidden(torch.tensor([[3]]), state[::-1])  # each cache now holds the other layer's keys
    with pytest.raises(ValueError, match="another attention layer"):
        lm.blocks.layers[1].self_attn(torch.randn(1, 1, 16), cache=state[0])


def test_a_tiny_temperature_gets_a_clear_error_not_a_nan(lm):
    with pytest.raises(ValueError, match="temperature=1e-300 is so small"):
        generate(lm, torch.tensor([1, 2]), 3, temperature=1e-300)
    assert generate(lm, torch.tensor([1, 2]), 3, temperature=1e-30).shape == (5,)


def test_a_numpy_seed_works_like_an_int(lm):
    a = generate(lm, torch.tensor([1, 2]), 5, temperature=1.0, seed=np.int64(5))
    assert torch.equal(a, generate(lm, torch.tensor([1, 2]), 5, temperature=1.0, seed=5))


def test_models_that_cannot_generate_are_refused():
    bare = Transformer(**SMALL, lm_head=False, tie_output=False)
    with pytest.raises(ValueError, match="no output layer"):
        generate(bare, torch.tensor([1]), 2)
    with pytest.raises(NotImplementedError, match="T5's bucketed relative-position bias"):
        generate(Transformer(**SMALL, positions="t5-bias"), torch.tensor([1]), 2)


def test_a_kv_cache_no_machine_holds_is_refused_with_its_size():
    huge = Transformer(**{**SMALL, "max_len": 2**40}, positions="none")
    with pytest.raises(ValueError, match=r"a KV cache of 2 layers x max_len=1099511627776 positions would need .* GiB"):
        generate(huge, torch.tensor([1]), 2)
    assert generate(huge, torch.tensor([1]), 2, use_cache=False).shape == (3,)


def test_use_cache_must_be_a_bool(lm):
    with pytest.raises(TypeError, match="use_cache must be True or False, got 'no'"):
        generate(lm, torch.tensor([1]), 2, use_cache="no")


@pytest.mark.parametrize("shape", [(2, 0), (0, 3)])
def test_a_loss_over_an_empty_batch_is_refused(lm, shape):
    ids = torch.zeros(shape, dtype=torch.long)
    with pytest.raises(ValueError, match="a loss needs at least one target"):
        lm(ids, ids)
    with pytest.raises(ValueError, match="a loss needs at least one target"):
        lm.nll(ids, ids)


def test_adaptive_sizes_no_machine_holds_are_refused_with_the_size():
    adaptive = dict(SMALL, vocab=100, adaptive=True, cutoffs=(10, 50))
    for div in (1e-300, 1e-10):
        with pytest.raises(ValueError, match=rf"div_value={div} makes a tail cluster project d_model=16 to .* weights"):
            TransformerConfig(**adaptive, div_value=div)
    with pytest.raises(ValueError, match=r"the token table of vocab=1000000000 x d_model=512 would need .* GiB"):
        Transformer(vocab=10**9)


def test_an_output_layer_of_no_size_is_refused():
    with pytest.raises(ValueError, match="d_model must be >= 1, got 0"):
        OutputHead("full", 0, 10)


def test_attention_refuses_rope_positions_past_its_table():
    from transformer_nb.core.block import EncoderLayer
    from transformer_nb.core.multihead import MultiHeadAttention
    from transformer_nb.core.rope import RoPE

    x = torch.randn(1, 5, 16)
    with pytest.raises(ValueError, match=r"positions 30..34 exceed RoPE's table of max_len=32"):
        MultiHeadAttention(16, 2)(x, is_causal=True, rope=RoPE(8, 32).at(q_offset=30, k_offset=30))
    with pytest.raises(ValueError, match=r"RoPE\(d_head=4\) expects q"):
        EncoderLayer(TransformerConfig(**SMALL))(x, is_causal=True, rope=RoPE(4, 32))
