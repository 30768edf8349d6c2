"""Property-based tests of sampling, frequency ranks, perplexity and the training batches: generated logits,
temperatures, top-k values, ids and schedule positions give the defining property (top-k keeps exactly the k
largest, greedy = arg-max, the unigram perplexity formula, y = x shifted by one, DistributedSampler's shares)."""

import math

import torch
from hypothesis import given
from hypothesis import strategies as st
from property_helpers import expect_refusal, float_tensors
from torch.utils.data import DistributedSampler

from transformer_nb import lm_training, perplexity
from transformer_nb.core import generation as gen
from transformer_nb.core import output_head

V = 11


@given(logits=st.integers(1, 3).flatmap(lambda b: float_tensors((b, V))), k=st.one_of(st.none(), st.integers(0, V + 3)))
def test_top_k_filter_keeps_exactly_the_k_largest(logits, k):
    out = gen.top_k_filter(logits, k)
    kept = torch.isfinite(out)
    if k is None or k == 0 or k >= V:
        assert torch.equal(out, logits)
    else:
        assert bool((kept.sum(-1) >= k).all())  # ties at the k-th value are all kept
        kth = logits.topk(k, -1).values[..., -1:]
        assert torch.equal(kept, logits >= kth) and torch.equal(out[kept], logits[kept])


@given(
    logits=st.integers(1, 3).flatmap(lambda b: float_tensors((b, V))),
    temperature=st.one_of(st.just(0.0), st.floats(0.05, 5)),
    top_k=st.one_of(st.none(), st.integers(1, V)),
    seed=st.integers(0, 999),
)
def test_sample_next_draws_only_allowed_tokens(logits, temperature, top_k, seed):
    tok = gen.sample_next(logits, temperature, top_k, torch.Generator().manual_seed(seed))
    assert tok.shape == (logits.shape[0],) and tok.dtype == torch.int64
    if temperature == 0:
        assert torch.equal(tok, logits.argmax(-1))
    allowed = torch.isfinite(gen.top_k_filter(logits, top_k))
    assert bool(allowed.gather(1, tok[:, None]).all())


@given(counts=st.lists(st.integers(0, 6), min_size=2, max_size=8))
def test_frequency_ranks_is_a_permutation_sorted_by_count(counts):
    ids = torch.tensor([w for w, c in enumerate(counts) for _ in range(c)], dtype=torch.long)
    ranks = output_head.frequency_ranks(ids, len(counts))
    assert sorted(ranks.tolist()) == list(range(len(counts)))
    order = ranks.argsort()  # words from most to least frequent
    assert [counts[w] for w in order.tolist()] == sorted(counts, reverse=True)


@given(
    train=st.lists(st.integers(0, 5), min_size=1, max_size=30),
    evaluated=st.lists(st.integers(0, 5), min_size=1, max_size=10),
)
def test_unigram_perplexity_formula(train, evaluated):
    tr, ev = torch.tensor(train), torch.tensor(evaluated)
    counts = torch.bincount(tr, minlength=6).double()
    if (counts[ev] == 0).any():
        expect_refusal(perplexity.unigram_perplexity, ["eval_ids", "evaluated"], tr, ev, 6)
        return
    expected = math.exp(-(counts[ev] / len(train)).log().mean().item())
    assert math.isclose(perplexity.unigram_perplexity(tr, ev, 6), expected, rel_tol=1e-9)


@given(extra=st.integers(0, 40), batch_size=st.integers(1, 4), seq_len=st.integers(1, 8), seed=st.integers(0, 99))
def test_window_and_stream_batches_shift_by_one(extra, batch_size, seq_len, seed):
    n = batch_size * (seq_len + 1) + extra  # every stream holds at least one window and its targets
    ids = torch.randint(0, V, (n,), generator=torch.Generator().manual_seed(seed))
    for batches in (
        lm_training.window_batches(ids, batch_size, seq_len, seed),
        lm_training.stream_batches(ids, batch_size, seq_len),
    ):
        for _ in range(3):
            x, y, _fresh = next(batches)
            assert x.shape == y.shape and x.shape[0] == batch_size and 1 <= x.shape[1] <= seq_len
            assert torch.equal(x[:, 1:], y[:, :-1])


@given(n=st.integers(1, 50), world=st.integers(1, 4), seed=st.integers(0, 99), epoch=st.integers(0, 3))
def test_window_starts_are_distributed_samplers_shares(n, world, seed, epoch):
    for rank in range(world):
        ref = DistributedSampler(range(n), num_replicas=world, rank=rank, seed=seed, drop_last=True)
        ref.set_epoch(epoch)
        assert lm_training._window_starts(n, seed, epoch, rank, world).tolist() == list(ref)
