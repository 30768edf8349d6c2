"""Property-based tests of the language-model modules (``lm`` helper): ``generation``, ``lm``,
``output_head``, ``perplexity`` and ``lm_training``. Generated logits, temperatures, top-k values, prompts,
lengths, ids and schedule positions. Good input gives the defining property (top-k keeps exactly the k
largest, greedy = arg-max, generation with and without the KV cache agree, a causal LM blind to the future,
log-probabilities that normalise, the unigram perplexity formula, y = x shifted by one); bad input a
``ValueError``/``TypeError`` naming the argument."""

import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st
from property_helpers import NOT_REAL, Arg, bad, call, expect_refusal, float_tensors, good, heavy, int_tensors

from transformer_nb import lm_training, perplexity
from transformer_nb.core import generation as gen
from transformer_nb.core import output_head
from transformer_nb.core.transformer import Transformer
from transformer_nb.lstm import LSTMLM

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


@pytest.fixture(scope="module")
def tiny_lms():
    torch.manual_seed(0)
    models = {
        pos: Transformer(
            vocab=V,
            d_model=8,
            n_heads=2,
            d_ff=16,
            n_layers=2,
            max_len=12,
            positions=pos,
            tie_output=False,
            output_bias=True,
        ).eval()
        for pos in ("learned", "sinusoidal", "rope", "alibi")
    }
    models["lstm"] = LSTMLM(V, d_model=8, n_layers=1, head="full").eval()
    return models


@heavy
@given(
    kind=st.sampled_from(["learned", "sinusoidal", "rope", "alibi", "lstm"]),
    prompt=st.integers(1, 4).flatmap(lambda t: int_tensors((t,), 0, V)),
    n_new=st.integers(0, 5),
)
def test_greedy_generation_is_the_same_with_and_without_the_cache(tiny_lms, kind, prompt, n_new):
    model = tiny_lms[kind]
    a = gen.generate(model, prompt, n_new, use_cache=True)
    b = gen.generate(model, prompt, n_new, use_cache=False)
    assert a.shape == (len(prompt) + n_new,) and torch.equal(a[: len(prompt)], prompt) and torch.equal(a, b)
    assert bool(((a >= 0) & (a < V)).all())


@given(
    bad_arg=st.sampled_from(
        [
            ("prompt", torch.tensor([1.0, 2.0])),  # issue 18: a float prompt was truncated to ids
            ("prompt", torch.tensor([1, V])),  # beyond the vocabulary
            ("prompt", torch.tensor([[1, 2]])),
            ("prompt", [1, 2]),
            ("n_new", -1),  # issue 18: an obscure crash
            ("n_new", 2.5),
            ("temperature", -1.0),
            ("temperature", math.nan),
            ("top_k", -2),  # issue 18: meant no filtering
        ]
    ),
    kind=st.sampled_from(["learned", "lstm"]),
)
def test_generate_refuses_bad_arguments(tiny_lms, bad_arg, kind):
    name, value = bad_arg
    args = {"prompt": torch.tensor([1, 2]), "n_new": 3, "temperature": 0.0, "top_k": None}
    args[name] = value
    model = tiny_lms[kind].train()
    expect_refusal(gen.generate, [name, "ids", "id"], model, **args)
    assert model.training, "generate left the model in eval mode after an error"
    model.eval()


@heavy
@given(
    kind=st.sampled_from(["learned", "sinusoidal", "rope", "alibi"]),
    t=st.integers(1, 8),
    cut=st.integers(0, 7),
    seed=st.integers(0, 99),
)
def test_transformer_lm_is_blind_to_the_future(tiny_lms, kind, t, cut, seed):
    model = tiny_lms[kind]
    ids = torch.randint(0, V, (1, t), generator=torch.Generator().manual_seed(seed))
    other = ids.clone()
    cut = min(cut, t - 1)
    other[:, cut + 1 :] = (other[:, cut + 1 :] + 1) % V
    nll_a, _ = model.nll(ids, ids, reduction="none")
    nll_b, _ = model.nll(other, ids, reduction="none")
    assert nll_a.shape == (1, t) and torch.allclose(nll_a[:, : cut + 1], nll_b[:, : cut + 1], atol=1e-5)


@given(counts=st.lists(st.integers(0, 6), min_size=2, max_size=8))
def test_frequency_ranks_is_a_permutation_sorted_by_count(counts):
    ids = torch.tensor([w for w, c in enumerate(counts) for _ in range(c)], dtype=torch.long)
    ranks = output_head.frequency_ranks(ids, len(counts))
    assert sorted(ranks.tolist()) == list(range(len(counts)))
    order = ranks.argsort()  # words from most to least frequent
    assert [counts[w] for w in order.tolist()] == sorted(counts, reverse=True)


@given(
    kind=st.sampled_from(["full", "tied", "adaptive", "adaptive_tied"]), n=st.integers(1, 5), seed=st.integers(0, 99)
)
def test_output_head_log_probabilities_normalise(kind, n, seed):
    torch.manual_seed(seed)
    vocab, d = 20, 8
    ranks = output_head.frequency_ranks(torch.randint(0, vocab, (200,)), vocab)
    head = output_head.OutputHead(kind, d, vocab, ranks=ranks, cutoffs=(5, 10))
    lp = head.log_probs(torch.randn(n, d))
    assert lp.shape == (n, vocab) and torch.allclose(lp.exp().sum(-1), torch.ones(n), atol=1e-5)


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


@given(progress=st.floats(0, 1), warmup=st.floats(0, 0.5), floor=st.floats(0, 1))
def test_lr_factor_stays_between_the_floor_and_one(progress, warmup, floor):
    f = lm_training.lr_factor(progress, warmup, floor)
    assert -1e-12 <= f <= 1 + 1e-12
    if warmup < progress:
        assert f >= floor - 1e-12


@given(progress=st.one_of(good(st.floats(0, 1)), bad(st.floats(1.001, 10)), bad(st.floats(-10, -0.001)), bad(NOT_REAL)))
@example(progress=Arg(-0.5, False))
def test_lr_factor_refuses_progress_outside_the_run(progress):
    call(lm_training.lr_factor, {"progress": progress, "warmup": 0.1})


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
def test_window_sampler_splits_one_permutation_among_ranks(n, world, seed, epoch):
    shares = []
    for rank in range(world):
        s = lm_training.WindowSampler(n, seed, rank, world)
        s.set_epoch(epoch)
        shares.append(s.starts().tolist())
    flat = [i for share in shares for i in share]
    assert len(set(flat)) == len(flat) and set(flat) <= set(range(n))
    assert len({len(share) for share in shares}) == 1 and len(flat) == (n // world) * world
