"""Generation with a KV cache runs the same modules as without and computes the same hidden states
and the same tokens; the cache lives in MultiHeadAttention.forward(..., cache=...)."""

import model_helpers
import pytest
import torch

from transformer_nb.core.block import EncoderLayer
from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.generation import generate
from transformer_nb.core.multihead import KVCache, MultiHeadAttention
from transformer_nb.core.output_head import HEADS
from transformer_nb.core.rope import RoPE
from transformer_nb.exercises.lm import kv_step_ex
from transformer_nb.lstm import LSTMLM

V = 300
SMALL_BLOCK = TransformerConfig(d_model=32, n_heads=4, d_ff=64)


def tiny(head="adaptive", positions="learned", activation="gelu", n_layers=3):
    return model_helpers.lm(head, V, positions=positions, activation=activation, n_layers=n_layers, max_len=80)


@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "rope", "alibi"])
@pytest.mark.parametrize("activation", ["relu", "gelu", "swiglu"])
def test_the_cached_pass_in_chunks_equals_the_full_pass(positions, activation):
    m = tiny(positions=positions, activation=activation)
    ids = torch.randint(0, V, (2, 30))
    state = m.init_state()
    with torch.no_grad():
        parts = []
        for a, b in ((0, 9), (9, 10), (10, 11), (11, 30)):
            h, state = m.hidden(ids[:, a:b], state)
            parts.append(h)
        full, none = m.hidden(ids)
    assert none is None  # a plain pass carries nothing
    assert [c.length for c in state] == [30, 30, 30]
    assert state[0].k.shape == (2, 4, 80, 8)  # buffers for max_len positions, allocated once
    # K and V x layers x B x heads x d_head x T x 4 bytes
    assert sum(c.nbytes() for c in state) == 2 * 3 * 2 * 4 * 8 * 30 * 4
    assert torch.allclose(torch.cat(parts, dim=1), full, atol=1e-5)


@pytest.mark.parametrize("head", [*HEADS, "lstm"])  # the LSTM's state is its cache
@pytest.mark.parametrize("sampling", [dict(temperature=0.0), dict(temperature=1.0, top_k=20, seed=5)])
def test_generate_with_and_without_cache_gives_identical_tokens(head, sampling):
    torch.manual_seed(0)
    m = LSTMLM(V, 16, 24, head="full").eval() if head == "lstm" else tiny(head, positions="rope")
    prompt = torch.randint(0, V, (6,), generator=torch.Generator().manual_seed(3))
    a = generate(m, prompt, 74, use_cache=True, **sampling)  # the last token fills max_len=80 positions exactly
    b = generate(m, prompt, 74, use_cache=False, **sampling)
    assert a.shape == (80,) and torch.equal(a[:6], prompt) and torch.equal(a, b)


def test_both_ways_run_the_same_attention_modules():
    m = tiny(positions="rope", n_layers=2)
    calls = {True: [], False: []}
    for use_cache in (True, False):
        hooks = [
            mod.register_forward_hook(lambda mod, i, o, uc=use_cache: calls[uc].append(type(mod).__name__))
            for mod in m.modules()
        ]
        generate(m, torch.tensor([1, 2, 3]), 1, use_cache=use_cache)
        for h in hooks:
            h.remove()
    assert sorted(calls[True]) == sorted(calls[False])
    assert calls[True].count("MultiHeadAttention") == 2


def test_cache_refuses_to_run_past_max_len():
    m = tiny()
    with pytest.raises(ValueError, match="exceeds max_len=80"):
        generate(m, torch.zeros(10, dtype=torch.long), 71)
    state = m.init_state()
    m.hidden(torch.zeros(1, 70, dtype=torch.long), state)
    with pytest.raises(ValueError, match=r"positions 70\.\.80 exceed max_len=80"):
        m.hidden(torch.zeros(1, 11, dtype=torch.long), state)
    with pytest.raises(ValueError, match="state must be init_state"):
        m.hidden(torch.zeros(1, 1, dtype=torch.long), state[:1])


def test_cache_buffers_are_written_in_place():
    cache = KVCache(capacity=5)
    k1, v1 = torch.randn(2, 1, 3, 4), torch.randn(2, 1, 3, 4)  # keys and values of 3 positions
    k_all, v_all = cache.append(k1, v1)
    assert torch.equal(k_all, k1) and torch.equal(v_all, v1) and cache.length == 3
    k2, v2 = torch.randn(2, 1, 2, 4), torch.randn(2, 1, 2, 4)
    k_all, v_all = cache.append(k2, v2)
    assert torch.equal(k_all, torch.cat([k1, k2], dim=2)) and torch.equal(v_all, torch.cat([v1, v2], dim=2))
    assert k_all.data_ptr() == cache.k.data_ptr()  # a view of the one buffer, not a copy
    with pytest.raises(ValueError, match="capacity must be >= 1"):
        KVCache(0)


def test_attention_with_a_cache_equals_attention_over_the_whole_sequence():
    torch.manual_seed(1)
    for n_kv in (4, 2, 1):  # MHA, GQA, MQA
        mha, rope = MultiHeadAttention(32, 4, n_kv_heads=n_kv).eval(), RoPE(8, 64)
        x = torch.randn(2, 12, 32)
        cache = KVCache(64)
        with torch.no_grad():
            parts = [mha(x[:, a:b], is_causal=True, rope=rope, cache=cache) for a, b in ((0, 5), (5, 6), (6, 12))]
            full = mha(x, is_causal=True, rope=rope)
        assert torch.allclose(torch.cat(parts, dim=1), full, atol=1e-6)
        assert cache.k.shape[1] == n_kv  # the cache stores only the K/V heads
    with pytest.raises(ValueError, match="cache= is for self-attention"):
        mha(x, x[:, :3], cache=KVCache(8))


def test_generate_switches_onednn_off_and_restores_it():
    m = tiny()
    seen = []
    m.head.greedy = lambda h, greedy=m.head.greedy: seen.append(torch.backends.mkldnn.enabled) or greedy(h)
    before = torch.backends.mkldnn.enabled
    generate(m, torch.tensor([1, 2, 3]), 4)
    assert seen == [False] * 4
    assert torch.backends.mkldnn.enabled == before


def test_the_kv_step_exercise_reference_is_what_the_cache_does():
    """Notebook 10's KV-step exercise (one new token attends over cache + itself) against KVCache."""
    q, kn, vn, kc, vc = (
        torch.randn(1, 2, n, 8, generator=torch.Generator().manual_seed(i)) for i, n in enumerate((1, 1, 1, 5, 5))
    )
    out, k_all, v_all = kv_step_ex.reference(q, kn, vn, kc, vc)
    cache = KVCache(16)
    cache.append(kc, vc)
    k_pkg, v_pkg = cache.append(kn, vn)
    assert torch.equal(k_all, k_pkg) and torch.equal(v_all, v_pkg)
    assert torch.allclose(out, torch.nn.functional.scaled_dot_product_attention(q, k_pkg, v_pkg), atol=1e-6)


def test_decoding_turns_rope_in_place_with_the_bits_of_the_copying_training_pass():
    torch.manual_seed(3)
    layer, rope, x = EncoderLayer(SMALL_BLOCK), RoPE(8, 16), torch.randn(2, 7, 32)
    trained = layer(x, is_causal=True, rope=rope)  # gradients recorded: q and k are rotated into copies
    with torch.no_grad():
        cache = KVCache(16)
        steps = [layer(x[:, i : i + 1], is_causal=True, rope=rope, cache=cache) for i in range(7)]
        assert torch.equal(layer(x, is_causal=True, rope=rope), trained)
    assert torch.allclose(torch.cat(steps, dim=1), trained, atol=1e-6)


def test_rope_makes_its_table_once_and_a_table_made_while_generating_trains():
    rope = RoPE(8, 32)
    with torch.inference_mode():
        first = rope._turns(0, 1, torch.float32)
    assert rope._turns(5, 3, torch.float32).untyped_storage().data_ptr() == first.untyped_storage().data_ptr()
    q = torch.randn(1, 2, 4, 8, requires_grad=True)
    sum(t.sum() for t in rope(q, q.detach())).backward()  # would fail on an inference-mode table
    assert q.grad is not None
    rope.to(torch.float64)  # moving the buffers drops the tables made from them
    assert rope._tables == {} and rope._turns(0, 2, torch.float32).dtype == torch.complex64
