"""Property-based tests of ``transformer_nb.core.attention``: generated batch shapes, lengths, widths, dtypes,
masks (bool, additive float, causal, fully masked rows) and scales. Good input matches
``F.scaled_dot_product_attention`` and gives weight rows that sum to 1 (0 for a fully masked row);
bad input raises a ``ValueError``/``TypeError`` that names the argument."""

import math

import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from property_helpers import NOT_REAL, bool_tensors, expect_refusal, float_tensors

from transformer_nb.core.attention import scaled_dot_product_attention

QKV_NAMES = {"q": ["query", "q"], "k": ["key", "k"], "v": ["value", "v"]}
TOL = {torch.float32: 1e-5, torch.float64: 1e-10, torch.bfloat16: 5e-3}


@st.composite
def problems(draw):
    """A good attention problem: q, k, v, an optional mask and scale."""
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    t_q, t_k, d_k, d_v = (
        draw(st.integers(1, 5)),
        draw(st.integers(1, 5)),
        draw(st.integers(1, 6)),
        draw(st.integers(1, 4)),
    )
    dtype = draw(st.sampled_from([torch.float32, torch.float64, torch.bfloat16]))
    q = draw(float_tensors((*batch, t_q, d_k), dtype))
    k = draw(float_tensors((*batch, t_k, d_k), dtype))
    v = draw(float_tensors((*batch, t_k, d_v), dtype))
    kind = draw(st.sampled_from(["none", "bool", "additive", "bias", "causal"]))
    mask_shape = draw(st.sampled_from([(t_q, t_k), (t_k,), (*batch, t_q, t_k), (1, t_k)]))
    mask = None
    if kind in ("bool", "additive"):
        mask = draw(bool_tensors(mask_shape))
        if kind == "additive":
            mask = torch.zeros(mask_shape, dtype=dtype).masked_fill(~mask, -math.inf)
    elif kind == "bias":
        mask = draw(float_tensors(mask_shape, dtype, -2.0, 0.5))
        mask = (mask + 0.25 * (mask == 0)).to(dtype)  # never a pure 0/1 float mask (refused as multiplicative)
    elif kind == "causal":
        mask = torch.ones(t_q, t_k, dtype=torch.bool).tril(t_k - t_q)
    scale = draw(st.one_of(st.none(), st.floats(-2, 2, allow_nan=False)))
    return q, k, v, mask, scale


@given(problems())
def test_matches_torch_and_rows_sum_to_one(problem):
    q, k, v, mask, scale = problem
    out, w = scaled_dot_product_attention(q, k, v, mask, scale)
    assert out.shape == (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], v.shape[-1])
    assert w.shape == (*out.shape[:-1], k.shape[-2]) and out.dtype == q.dtype
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    blocked = torch.zeros(w.shape[:-1], dtype=torch.bool)
    if mask is not None:
        allowed = mask if mask.dtype == torch.bool else ~torch.isneginf(mask)
        blocked = ~allowed.expand(w.shape).any(-1)
    sums = w.double().sum(-1)
    tol = TOL[q.dtype] * 10
    assert torch.allclose(sums[~blocked], torch.ones_like(sums[~blocked]), atol=tol)
    assert bool((w[blocked] == 0).all()) and bool((out[blocked] == 0).all())
    full = None if mask is None else mask.expand(w.shape)
    full = full if full is None or full.dtype == torch.bool else full.double()
    ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), full, scale=scale)
    ref = ref.masked_fill(blocked[..., None], 0.0)  # torch leaves NaN or zeros there; ours is zeros by contract
    assert torch.allclose(out.double(), ref, atol=TOL[q.dtype] * 20, rtol=TOL[q.dtype] * 20)


@st.composite
def spoiled(draw):
    """A good problem with one argument spoiled; returns (args, names that may be blamed)."""
    q, k, v, mask, scale = draw(problems())
    which = draw(st.sampled_from(["q", "k", "v", "mask", "scale", "shape"]))
    args = {"q": q, "k": k, "v": v, "mask": mask, "scale": scale}
    if which in ("q", "k", "v"):
        t = args[which]
        how = draw(st.sampled_from(["list", "int", "bool", "complex", "1d", "nan", "inf", "dtype", "none"]))
        if how == "nan" or how == "inf":
            t = t.clone()
            t.view(-1)[draw(st.integers(0, t.numel() - 1))] = math.nan if how == "nan" else -math.inf
        else:
            t = {
                "list": lambda: t.tolist(),
                "int": lambda: t.long(),
                "bool": lambda: t > 0,
                "complex": lambda: t.to(torch.complex64),
                "1d": lambda: t.reshape(-1),
                "dtype": lambda: t.to(torch.float16 if t.dtype != torch.float16 else torch.float32),
                "none": lambda: None,
            }[how]()
        args[which] = t
        blame = QKV_NAMES[which] + (["dtype", "query", "key", "value"] if how == "dtype" else [])
        return args, blame
    if which == "mask":
        t_q, t_k = q.shape[-2], k.shape[-2]
        args["mask"] = draw(
            st.sampled_from(
                [
                    torch.ones(t_q, t_k, dtype=torch.long),  # integer mask
                    torch.ones(t_q, t_k, dtype=torch.uint8),
                    torch.ones(t_q, t_k).tril(),  # 0/1 float: multiplicative, not additive
                    torch.full((t_q, t_k), math.nan, dtype=q.dtype),
                    torch.full((t_q, t_k), math.inf, dtype=q.dtype),
                    torch.zeros(t_q, t_k, dtype=torch.float16 if q.dtype != torch.float16 else torch.float32),
                    torch.ones(t_q + 1, t_k + 2, dtype=torch.bool),  # does not broadcast
                    torch.ones(2, 3, 1, t_q, t_k, dtype=torch.bool),  # more batch dims than the scores
                    [[True] * t_k] * t_q,
                ]
            )
        )
        return args, ["mask"]
    if which == "scale":
        args["scale"] = draw(NOT_REAL.filter(lambda x: x is not None))
        return args, ["scale"]
    args["k"] = torch.zeros(*k.shape[:-1], k.shape[-1] + 1, dtype=k.dtype)  # d_k mismatch
    return args, ["d_k", "key"]


@given(spoiled())
def test_bad_arguments_are_refused_by_name(case):
    args, blame = case
    expect_refusal(scaled_dot_product_attention, blame, **args)
