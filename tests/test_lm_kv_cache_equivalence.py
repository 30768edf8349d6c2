"""Generation with a KV cache computes the same hidden states and the same tokens as without."""
import pytest
import torch

from transformer_nb.lm import HEADS, TransformerLM, frequency_ranks, generate
from transformer_nb import lm

V = 300


def tiny(head="adaptive", positions="learned", n_kv_heads=None):
    torch.manual_seed(0)
    ranks = frequency_ranks(torch.randint(0, V, (3000,), generator=torch.Generator().manual_seed(1)), V)
    m = TransformerLM(V, d_model=32, n_heads=4, d_ff=64, n_layers=3, max_len=80, head=head, ranks=ranks,
                      cutoffs=(40, 150), positions=positions)
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
    k1, v1 = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
    k_all, v_all = cache.store(0, k1, v1)
    assert torch.equal(k_all, k1) and torch.equal(v_all, v1)
    assert cache.length == 0                                  # until every layer has stored
    cache.advance(3)
    k2, v2 = torch.randn(1, 2, 2, 4), torch.randn(1, 2, 2, 4)
    k_all, _ = cache.store(0, k2, v2)
    cache.advance(2)
    assert torch.equal(k_all, torch.cat([k1, k2], dim=2)) and torch.equal(cache.v[0], torch.cat([v1, v2], dim=2))
    with pytest.raises(ValueError, match="holds 5 positions; 6 were asked for"):
        cache.store(0, k2[:, :, :1], v2[:, :, :1])
