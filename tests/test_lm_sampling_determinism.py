"""Sampling is reproducible under a seed; greedy, temperature and top-k do what they say."""

import model_helpers
import pytest
import torch

from transformer_nb.core.generation import generate, sample_next, top_k_filter
from transformer_nb.core.output_head import HEADS
from transformer_nb.lstm import LSTMLM

V = 200


def _small_lm(head):
    """A one-block LM; an adaptive head's clusters (cut at 20 and 60) fit the small vocabulary."""
    return model_helpers.lm(head, V, cutoffs=(20, 60), n_layers=1, max_len=64)


@pytest.mark.parametrize("kind", ["transformer", "lstm"])
def test_same_seed_same_text_different_seed_different_text_and_the_global_rng_untouched(kind):
    m = _small_lm("tied") if kind == "transformer" else LSTMLM(V, 16, 24, head="full")
    p = torch.tensor([1, 2, 3])
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = generate(m, p, 40, temperature=0.9, top_k=10, seed=7)
    assert torch.equal(torch.rand(3), expected)
    assert torch.equal(a, generate(m, p, 40, temperature=0.9, top_k=10, seed=7)) and a.shape == (43,)
    assert not torch.equal(a, generate(m, p, 40, temperature=0.9, top_k=10, seed=8))


def test_low_temperature_concentrates_high_temperature_spreads():
    g = torch.Generator().manual_seed(0)
    logits = torch.linspace(0, 3, 10).expand(4000, 10)
    cold = sample_next(logits, 0.1, generator=g)
    hot = sample_next(logits, 10.0, generator=g)
    assert (cold == 9).float().mean() > 0.9  # p(top) = 0.965 at T = 0.1
    assert len(set(hot.tolist())) == 10


def test_top_k_draws_the_same_words_whether_or_not_logits_tie_at_the_kth():
    logits = torch.randn(300, 50, generator=torch.Generator().manual_seed(0)).mul(2).round()  # ties everywhere
    draw = lambda x, k: sample_next(x, 0.7, k, torch.Generator().manual_seed(k))
    assert all(torch.equal(draw(logits, k), draw(top_k_filter(logits, k), k)) for k in (1, 5, 20))  # no tie left


@pytest.mark.parametrize("head", HEADS)
def test_the_greedy_shortcut_is_the_arg_max_of_the_full_distribution(head):
    m = _small_lm(head)
    h = torch.randn(500, 32) * 3  # many rows, some won by tail words
    with torch.no_grad():
        assert torch.equal(m.head.greedy(h), m.head.log_probs(h).argmax(-1))


def test_the_greedy_shortcut_skips_clusters_that_cannot_win():
    m = _small_lm("adaptive")
    calls = []
    for i, tail in enumerate(m.head.asm.tail):
        tail.register_forward_hook(lambda mod, inp, out, i=i: calls.append(i))
    h = torch.randn(1, 32)
    with torch.no_grad():
        m.head.asm.head.weight[20:] = 0.0  # cluster logits 0 ...
        m.head.asm.head.weight[0] = 5 * h[0] / h.norm()  # ... and word rank 0 far ahead
        fast = m.head.greedy(h)
        assert calls == []  # no tail cluster was computed
        assert torch.equal(fast, m.head.log_probs(h).argmax(-1))
        m.head.asm.head.weight[21] = 10 * h[0] / h.norm()  # now cluster 2's entry beats every word
        calls.clear()
        fast = m.head.greedy(h)
        assert calls == [1]  # only that cluster
        assert torch.equal(fast, m.head.log_probs(h).argmax(-1))
