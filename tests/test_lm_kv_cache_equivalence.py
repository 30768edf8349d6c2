"""Generation with a KV cache computes the same hidden states and the same tokens as without."""

import pytest
import torch

from transformer_nb import lm
from transformer_nb.block import EncoderLayer
from transformer_nb.lm import HEADS, TransformerLM, frequency_ranks, generate
from transformer_nb.rope import RoPE

V = 300


def tiny(head="adaptive", positions="learned", n_kv_heads=None):
    torch.manual_seed(0)
    ranks = frequency_ranks(torch.randint(0, V, (3000,), generator=torch.Generator().manual_seed(1)), V)
    m = TransformerLM(
        V,
        d_model=32,
        n_heads=4,
        d_ff=64,
        n_layers=3,
        max_len=80,
        head=head,
        ranks=ranks,
        cutoffs=(40, 150),
        positions=positions,
    )
    return m.eval()


@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "rope", "alibi"])
def test_cached_hidden_in_chunks_equals_full_forward(positions):
    m = tiny(positions=positions)
    ids = torch.randint(0, V, (2, 30))
    cache = m.new_cache()
    with torch.no_grad():
        parts = [m.cached_hidden(ids[:, a:b], cache) for a, b in ((0, 9), (9, 10), (10, 11), (11, 30))]
        full = m.hidden(ids)
    assert cache.length == 30
    assert len(cache.k) == 3 and cache.k[0].shape == (2, 4, 30, 8)
    assert torch.allclose(torch.cat(parts, dim=1), full, atol=1e-5)


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("sampling", [dict(temperature=0.0), dict(temperature=1.0, top_k=20, seed=5)])
def test_generate_with_and_without_cache_gives_identical_tokens(head, sampling):
    m = tiny(head)
    prompt = torch.randint(0, V, (6,), generator=torch.Generator().manual_seed(3))
    a = generate(m, prompt, 60, use_cache=True, **sampling)
    b = generate(m, prompt, 60, use_cache=False, **sampling)
    assert a.shape == (66,)
    assert torch.equal(a[:6], prompt)
    assert torch.equal(a, b)


def test_cache_refuses_to_run_past_max_len_and_in_training_mode():
    m = tiny()
    with pytest.raises(ValueError, match="exceeds max_len=80"):
        generate(m, torch.zeros(10, dtype=torch.long), 71)
    m.train()
    with pytest.raises(ValueError, match="eval"):
        m.cached_hidden(torch.zeros(1, 3, dtype=torch.long), m.new_cache())


def test_cache_size_matches_formula():
    m = tiny()
    cache = m.new_cache()
    with torch.no_grad():
        m.cached_hidden(torch.zeros(1, 17, dtype=torch.long), cache)
    # 2 (K and V) x layers x heads x d_head x tokens x 4 bytes (float32)
    assert cache.nbytes() == 2 * 3 * 4 * 8 * 17 * 4


def test_cache_buffers_are_written_in_place_and_refuse_overflow():
    cache = lm.KVCache(n_layers=1, capacity=5)
    kv1 = torch.randn(2, 1, 2, 3, 4)  # keys and values of 3 positions
    k_all, v_all = cache.store(0, kv1)
    assert torch.equal(k_all, kv1[0]) and torch.equal(v_all, kv1[1])
    assert cache.length == 0  # until every layer has stored
    cache.advance(3)
    kv2 = torch.randn(2, 1, 2, 2, 4)
    k_all, _ = cache.store(0, kv2)
    cache.advance(2)
    assert torch.equal(k_all, torch.cat([kv1[0], kv2[0]], dim=2))
    assert torch.equal(cache.v[0], torch.cat([kv1[1], kv2[1]], dim=2))
    assert k_all.data_ptr() == cache.k[0].data_ptr()  # a view of the one buffer, not a copy
    with pytest.raises(ValueError, match="holds 5 positions; 6 were asked for"):
        cache.store(0, kv2[:, :, :, :1])


def test_complex_rotation_equals_ropes_rotation():
    rope = RoPE(16, max_len=64)
    x = torch.randn(2, 3, 4, 10, 16)
    rot = torch.complex(rope.cos, rope.sin)[20:30]
    out = lm.rotate_complex_(x.clone(), rot)
    assert torch.allclose(out, rope.rotate(x, offset=20), atol=1e-6)
    y = x.clone()
    lm.rotate_complex_(y, rot)
    assert torch.equal(y, out)  # it rotates in place


@pytest.mark.parametrize("activation", ["relu", "gelu", "swiglu"])
def test_decoding_step_equals_the_block_for_every_activation(activation):
    torch.manual_seed(0)
    ranks = frequency_ranks(torch.randint(0, V, (3000,), generator=torch.Generator().manual_seed(1)), V)
    m = TransformerLM(
        V,
        d_model=32,
        n_heads=4,
        d_ff=64,
        n_layers=2,
        max_len=40,
        ranks=ranks,
        cutoffs=(40, 150),
        positions="rope",
        activation=activation,
    ).eval()
    ids = torch.randint(0, V, (1, 20))
    cache = m.new_cache()
    with torch.no_grad():
        parts = [m.cached_hidden(ids[:, a:b], cache) for a, b in ((0, 7), (7, 8), (8, 20))]
        assert torch.allclose(torch.cat(parts, dim=1), m.hidden(ids), atol=1e-5)


def test_decoding_weights_refuse_a_block_the_step_was_not_written_for():
    with pytest.raises(ValueError, match="pre-LN LayerNorm"):
        lm.decoding_weights(EncoderLayer(16, 4, 32, norm_first=False))
    with pytest.raises(ValueError, match="one K/V head per query head"):
        lm.decoding_weights(EncoderLayer(16, 4, 32, n_kv_heads=2))


def test_generate_switches_onednn_off_and_restores_it():
    m = tiny()
    seen = []
    m.head.greedy = lambda h, greedy=m.head.greedy: seen.append(torch.backends.mkldnn.enabled) or greedy(h)
    before = torch.backends.mkldnn.enabled
    generate(m, torch.tensor([1, 2, 3]), 4)
    assert seen == [False] * 4
    assert torch.backends.mkldnn.enabled == before
