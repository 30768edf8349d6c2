"""Property-based tests of the data sides of ``reversal`` (``stacks``) and ``wikitext`` (``colab``): generated
batch sizes, lengths, symbol counts, ids, words, window sizes. Good input gives the defining property
(ids inside the vocabulary, targets = the reversal, teacher forcing shifted by one, y = x shifted by one,
encode/decode round trips); bad input a ``ValueError``/``TypeError`` naming the argument.
"""

import torch
from hypothesis import given
from hypothesis import strategies as st
from property_helpers import call, expect_refusal, size

from transformer_nb import reversal as rv
from transformer_nb import wikitext as wt


@given(
    batch_size=size(1, 8, huge=False),
    min_len=size(1, 5),
    max_len=size(1, 8),
    seed=st.integers(0, 999),
)
def test_random_batch_is_a_padded_reversal_inside_the_vocabulary(batch_size, min_len, max_len, seed):
    relation = [] if not (min_len.ok and max_len.ok) or min_len.value <= max_len.value else ["min_len", "max_len"]
    if max_len.ok and max_len.value > 16:
        relation += ["max_len"]
    args = {"batch_size": batch_size, "min_len": min_len, "max_len": max_len}
    b = call(
        lambda **kw: rv.random_batch(**kw, generator=torch.Generator().manual_seed(seed)), args, extra_bad=relation
    )
    if b is None:
        return
    lengths = b.src_keep.sum(1)
    assert b.src.shape[0] == batch_size.value and bool(((lengths >= min_len.value) & (lengths <= max_len.value)).all())
    symbols = b.src[b.src_keep]
    assert bool(((symbols >= rv.FIRST_SYMBOL) & (symbols < rv.VOCAB_SIZE)).all())
    assert bool((b.src[~b.src_keep] == rv.PAD).all())
    assert torch.equal(b.tgt_in[:, 1:][b.tgt_keep[:, 1:]], rv.reverse_padded(b.src)[b.src_keep])
    assert torch.equal(b.tgt_out[:, :-1][b.src_keep], rv.reverse_padded(b.src)[b.src_keep])
    assert b.src.shape[1] == int(lengths.max()) and not bool((b.tgt_in == rv.EOS).any())
    assert bool((b.tgt_in[:, 0] == rv.BOS).all()) and bool(
        (b.tgt_out[torch.arange(b.src.shape[0]), lengths] == rv.EOS).all()
    )


@given(
    rows=st.lists(
        st.lists(st.integers(rv.FIRST_SYMBOL, rv.VOCAB_SIZE - 1), min_size=1, max_size=6), min_size=1, max_size=4
    )
)
def test_reverse_shift_codes_collate_and_score(rows):
    pairs = [(r, r[::-1]) for r in rows]
    b = rv.collate(pairs)
    assert [row[keep].tolist() for row, keep in zip(rv.reverse_padded(b.src), b.src_keep)] == [r[::-1] for r in rows]
    width = b.src.shape[1]
    padded = torch.full((len(rows), width), rv.PAD)
    for i, r in enumerate(rows):
        padded[i, : len(r)] = torch.tensor(r[::-1])
    tgt_in, tgt_out = rv.shift_for_teacher_forcing(padded)
    assert torch.equal(tgt_in, b.tgt_in) and torch.equal(tgt_out, b.tgt_out)
    codes = rv.sequence_codes(b.src)
    assert len(set(codes.tolist())) == len({tuple(r) for r in rows})
    perfect = rv.score(b.tgt_out, b.tgt_out)
    assert (
        perfect["exact_match"] == 1.0
        and perfect["token_accuracy"] == 1.0
        and bool((perfect["first_wrong"] == -1).all())
    )


@given(
    symbols=st.lists(st.integers(rv.FIRST_SYMBOL, rv.VOCAB_SIZE - 1), min_size=1, max_size=8),
    sep=st.sampled_from([" ", ",", ", "]),
)
def test_parse_tokens_round_trip(symbols, sep):
    assert rv.parse_tokens(sep.join(map(str, symbols))) == symbols


# --------------------------------------------------------------------------- wikitext

WORDS = st.lists(st.sampled_from(["the", "cat", "sat", "on", "mat", "<unk>", "a", "dog"]), min_size=1, max_size=30)


@given(words=WORDS)
def test_vocab_round_trip(words):
    v = wt.Vocab(words)
    ids = v.encode(words)
    assert ids.dtype == torch.int64 and v.decode(ids) == " ".join(words) and v.decode(ids.tolist()) == " ".join(words)
    assert set(words) <= {v.decode([i]) for i in range(len(v))}


@given(words=WORDS, bad_ids=st.sampled_from([[0.9], [1.0], [True], torch.tensor([0.5]), "the", 3, [-1], [10**6]]))
def test_vocab_decode_refuses_what_is_not_an_id(words, bad_ids):
    expect_refusal(wt.Vocab(words).decode, ["id", "ids"], bad_ids)


@given(n=st.integers(2, 60), batch_size=size(1, 6), seq_len=size(1, 9, huge_ok=True), seed=st.integers(0, 99))
def test_batchify_get_batch_and_windows(n, batch_size, seq_len, seed):
    data = torch.randint(0, 50, (n,), generator=torch.Generator().manual_seed(seed))
    fits = batch_size.ok and n // batch_size.value >= 2
    streams = call(
        wt.batchify,
        {"data": data, "batch_size": batch_size},
        extra_bad=[] if fits or not batch_size.ok else ["batch_size", "data"],
    )
    if streams is None:
        return
    assert torch.equal(streams.reshape(-1), data[: streams.numel()]) and streams.shape[0] == batch_size.value
    batches = call(wt.iter_batches, {"streams": streams, "seq_len": seq_len})
    if batches is None:
        return
    targets = torch.cat([y for _, y in batches], dim=1)
    assert torch.equal(targets, streams[:, 1:])  # every target once, in order
    x, y = wt.get_batch(streams, 0, seq_len.value)
    assert torch.equal(x[:, 1:], y[:, :-1])
    if n > seq_len.value + 1:
        x, y = wt.random_windows(data, batch_size.value, seq_len.value, torch.Generator().manual_seed(seed))
        assert x.shape == y.shape == (batch_size.value, seq_len.value) and torch.equal(x[:, 1:], y[:, :-1])
