"""Property-based tests of every public function of ``transformer_nb.core.masks``: generated sizes, lengths,
ids and masks, good or bad. Good input gives a mask with the defining property; bad input a
``ValueError``/``TypeError`` that names the argument."""

import torch
from hypothesis import given
from hypothesis import strategies as st
from property_helpers import NOT_INT, bad, bool_tensors, call, good, int_tensors, size

from transformer_nb import interop
from transformer_nb.core import masks

T_ALIASES = {"t_q": ["T_q"], "t_k": ["T_k"], "keep": ["keep"], "src_keep": ["keep"]}


@given(t_q=size(huge_ok=True), t_k=size(none_ok=True, huge_ok=True))
def test_causal_mask(t_q, t_k):
    """Huge sizes are fine when the mask is empty (T_q = 0): a (0, 10**12) mask holds nothing."""
    n_q = t_q.value if t_q.ok else None
    n_k = n_q if t_k.value is None else t_k.value if t_k.ok else None
    relation_bad = n_q is not None and n_k is not None and n_k < n_q
    too_big = n_q is not None and n_k is not None and n_q * n_k > 10**12  # beyond any machine's memory
    extra = ["t_q", "t_k"] if relation_bad or too_big else None
    mask = call(masks.causal_mask, {"t_q": t_q, "t_k": t_k}, T_ALIASES, extra)
    if mask is None:
        return
    assert mask.dtype == torch.bool and mask.shape == (n_q, n_k)
    for i in range(n_q):  # query i sits at position n_k - n_q + i and sees keys 0 .. that position
        assert mask[i].tolist() == [j <= n_k - n_q + i for j in range(n_k)]


@given(
    mask=st.one_of(
        good(st.integers(0, 5).flatmap(lambda n: bool_tensors((n, n + 1)))),
        bad(st.sampled_from([torch.ones(2, 2), torch.ones(2, 2, dtype=torch.long), [[True]], None])),
    ),
    dtype=st.one_of(
        good(st.sampled_from([torch.float32, torch.float64, torch.float16, torch.bfloat16])),
        bad(st.sampled_from([torch.int64, torch.bool, "float32", None])),
    ),
)
def test_additive(mask, dtype):
    out = call(interop.additive, {"mask": mask, "dtype": dtype})
    if out is None:
        return
    m = mask.value
    assert out.dtype == dtype.value and out.shape == m.shape
    assert bool((out[m] == 0).all()) and bool(torch.isneginf(out[~m]).all())


@given(
    lengths=st.one_of(
        good(st.lists(st.integers(0, 6), min_size=1, max_size=4)),
        bad(st.lists(st.integers(-3, -1), min_size=1, max_size=3)),
        bad(st.sampled_from([[], [1.5, 2.0], [True, False], [[1, 2]], "ab", None, [float("nan")]])),
    ),
    max_len=size(0, 8, none_ok=True),
)
def test_padding_mask(lengths, max_len):
    too_short = lengths.ok and max_len.ok and max_len.value is not None and max(lengths.value) > max_len.value
    keep = call(
        masks.padding_mask,
        {"lengths": lengths, "max_len": max_len},
        {"lengths": ["length"]},
        ["max_len", "lengths"] if too_short else None,
    )
    if keep is None:
        return
    t = max(lengths.value) if max_len.value is None else max_len.value
    assert keep.shape == (len(lengths.value), t) and keep.dtype == torch.bool
    for row, n in zip(keep.tolist(), lengths.value):
        assert row == [True] * n + [False] * (t - n)


@given(
    ids=st.one_of(
        good(st.tuples(st.integers(1, 3), st.integers(0, 5)).flatmap(lambda s: int_tensors(s, 0, 4))),
        bad(
            st.sampled_from(
                [torch.zeros(3, dtype=torch.long), torch.ones(2, 3), torch.ones(2, 3, dtype=torch.bool), [[1, 0]]]
            )
        ),
    ),
    pad_id=st.one_of(good(st.integers(-2, 5)), bad(NOT_INT)),
)
def test_padding_mask_from_ids(ids, pad_id):
    keep = call(masks.padding_mask_from_ids, {"ids": ids, "pad_id": pad_id})
    if keep is not None:
        assert torch.equal(keep, ids.value != pad_id.value)


KEEP = st.one_of(
    good(st.tuples(st.integers(1, 3), st.integers(0, 5)).flatmap(lambda s: bool_tensors(s))),
    bad(
        st.sampled_from(
            [torch.ones(2, 3), torch.ones(3, dtype=torch.bool), torch.ones(1, 2, 3, dtype=torch.bool), [[True]], None]
        )
    ),
)


@given(keep=KEEP, t_q=size(0, 5, huge_ok=True))
def test_key_padding(keep, t_q):
    mask = call(masks.key_padding, {"keep": keep, "t_q": t_q}, T_ALIASES)
    if mask is None:
        return
    b, t_k = keep.value.shape
    assert mask.shape == (b, 1, t_q.value, t_k) and mask.dtype == torch.bool
    if t_q.value <= 5:  # a huge T_q is an expanded view: correct, but not compared element by element
        assert torch.equal(mask, keep.value[:, None, None, :].expand(b, 1, t_q.value, t_k))


@given(keep=KEEP, causal=st.one_of(good(st.booleans()), bad(st.sampled_from([1, 0, "yes", None, torch.tensor(True)]))))
def test_self_attention_mask(keep, causal):
    mask = call(masks.self_attention_mask, {"keep": keep, "causal": causal}, T_ALIASES)
    if mask is None:
        return
    b, t = keep.value.shape
    expected = keep.value[:, None, None, :].expand(b, 1, t, t)
    if causal.value:
        expected = expected & torch.ones(t, t, dtype=torch.bool).tril()
    assert torch.equal(mask, expected)
