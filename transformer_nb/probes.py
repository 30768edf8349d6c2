"""Probes: run a model once and record what it really did, with forward hooks (003's objectives; 004 §11, §14).

- ``trace_shapes``: every submodule call in execution order, with its input and output shapes
  (and, for attention, the shape of its attention weights);
- ``capture_masks`` / ``mask_kind``: the mask every attention sublayer really applied, and a
  name for it (``"causal"``, ``"padding"``, ``"causal + padding"``, ``"none"``); notebook 08's
  comparison of the three variants is generated from these records;
- ``record_attention``: every ``MultiHeadAttention`` keeps its attention weights, for plotting;
- ``head_stats`` / ``uniform_distance``: per-head mean attention distance and entropy, to describe
  heads by measured numbers.

The records come from hooks on the modules that ran, so they describe the code, not a drawing of it.
"""

from contextlib import contextmanager

import torch
import torch.nn as nn

from transformer_nb.core.masks import causal_mask
from transformer_nb.core.multihead import MultiHeadAttention
from transformer_nb.core.utils import as_int
from transformer_nb.env import check_module

__all__ = [
    "capture_masks",
    "head_stats",
    "record_attention",
    "trace_shapes",
    "uniform_distance",
]  # mask_kind serves capture_masks


def record_attention(model: nn.Module):
    """Within the block, every ``MultiHeadAttention`` in ``model`` keeps its weights in ``last_weights``."""
    check_module("model", model)
    return _recording([m for m in model.modules() if isinstance(m, MultiHeadAttention)])


@contextmanager
def _recording(mods: list):
    for m in mods:
        m.keep_weights = True
    try:
        yield mods
    finally:
        for m in mods:
            m.keep_weights = False


def _shape(x):
    """The shape of the first tensor in ``x`` (a tensor, or nested tuples/lists), or None."""
    if isinstance(x, (tuple, list)):
        return next((s for s in map(_shape, x) if s is not None), None)
    return tuple(x.shape) if isinstance(x, torch.Tensor) else None


def trace_shapes(model: nn.Module, *args, **kwargs) -> list:
    """Run ``model(*args, **kwargs)`` (no grad) and record every submodule call in execution order.

    One dict per call (dropout is skipped):

    - ``name`` (the module path; the model itself gets its class name) and ``type``;
    - ``in``: the shape of the first tensor argument; ``inputs``: ``(argument, shape)`` for every
      tensor argument, keyword arguments included (``arg0``, ``arg1``, ..., then the keywords);
    - ``out``: the shape of the (first) tensor output;
    - ``weights``: for ``MultiHeadAttention``, the shape ``(B, h, T_q, T_k)`` of its attention weights.
    """
    check_module("model", model)
    records, handles = [], []

    def hook(name):
        def fn(module, args_, kwargs_, output):
            ins = [(f"arg{i}", tuple(a.shape)) for i, a in enumerate(args_) if isinstance(a, torch.Tensor)]
            ins += [(k, tuple(v.shape)) for k, v in kwargs_.items() if isinstance(v, torch.Tensor)]
            rec = {
                "name": name or type(module).__name__,
                "type": type(module).__name__,
                "in": _shape(args_ or list(kwargs_.values())),
                "inputs": ins,
                "out": _shape(output),
            }
            if isinstance(module, MultiHeadAttention) and module.last_weights is not None:
                rec["weights"] = tuple(module.last_weights.shape)
            records.append(rec)

        return fn

    for name, module in model.named_modules():
        if not isinstance(module, nn.Dropout):
            handles.append(module.register_forward_hook(hook(name), with_kwargs=True))
    try:
        with torch.no_grad(), record_attention(model):
            model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return records


# --------------------------------------------------------------------------- masks, as applied


def _effective_mask(mask, is_causal: bool, b: int, t_q: int, t_k: int, device) -> torch.Tensor:
    """The bool ``(B, T_q, T_k)`` "may attend" pattern that ``MultiHeadAttention`` applies."""
    eff = torch.ones(b, t_q, t_k, dtype=torch.bool, device=device)
    if mask is not None:
        m = mask if mask.dtype == torch.bool else ~torch.isneginf(mask)
        m = m.expand(*m.shape[:-2], t_q, t_k)
        while m.dim() > 3:  # (B, h, T_q, T_k): a key is open if open in every head
            m = m.all(dim=1) if m.dim() == 4 else m.all(dim=0)
        eff = eff & m
    if is_causal:
        eff = eff & causal_mask(t_q, t_k, device=device)
    return eff


def capture_masks(model: nn.Module, *args, **kwargs) -> list:
    """Run ``model(*args, **kwargs)`` (no grad) and record what every ``MultiHeadAttention`` call used.

    Returns one dict per call, in execution order: ``name`` (the module path), ``kind``
    (``"self"`` if keys are the queries' own sequence, else ``"cross"``), ``q_shape``,
    ``k_shape``, ``mask`` (bool ``(B, T_q, T_k)``, True = may attend, causal part included) and
    ``label`` (``mask_kind`` of it).
    """
    check_module("model", model)
    names = {m: n for n, m in model.named_modules()}
    records, handles = [], []

    def pre_hook(module, args_, kwargs_):
        query = args_[0] if args_ else kwargs_.get("query")
        key = args_[1] if len(args_) > 1 else kwargs_.get("key")
        key = query if key is None else key
        b, t_q, t_k = query.shape[0], query.shape[1], key.shape[1]
        eff = _effective_mask(kwargs_.get("mask"), bool(kwargs_.get("is_causal", False)), b, t_q, t_k, query.device)
        kind = "self" if key is query else "cross"
        records.append(
            {
                "name": names[module],
                "kind": kind,
                "q_shape": tuple(query.shape),
                "k_shape": tuple(key.shape),
                "mask": eff,
                "label": mask_kind(eff, kind),
            }
        )

    for m in model.modules():
        if isinstance(m, MultiHeadAttention):
            handles.append(m.register_forward_pre_hook(pre_hook, with_kwargs=True))
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return records


def mask_kind(mask: torch.Tensor, kind: str = "self") -> str:
    """Name a bool ``(B, T_q, T_k)`` "may attend" pattern from what it blocks.

    - ``"causal"`` part: a self-attention pattern that blocks every key after its query (j > i);
    - ``"padding"`` part: some key is blocked for a reason other than being in the future
      (a whole padded column);
    - ``"none"``: nothing is blocked.
    """
    t_q, t_k = mask.shape[-2:]
    future = (
        ~causal_mask(t_q, t_k, device=mask.device)
        if t_k >= t_q
        else torch.zeros(t_q, t_k, dtype=torch.bool, device=mask.device)
    )
    causal = kind == "self" and t_q == t_k and t_q > 1 and not bool((mask & future).any())
    blocked_not_future = ~mask & ~future if causal else ~mask
    parts = (["causal"] if causal else []) + (["padding"] if bool(blocked_not_future.any()) else [])
    return " + ".join(parts) if parts else "none"


# --------------------------------------------------------------------------- describing heads


def head_stats(weights: torch.Tensor) -> dict:
    """Per-head summaries of self-attention weights ``(..., T, T)`` (rows = queries, sum to 1).

    - ``distance``: mean over queries i of ``Σ_j w_ij·|i - j|`` (0 = attends to itself,
      small = local; uniform attention over T tokens gives ``(T² - 1) / (3T)``).
    - ``entropy``: mean over queries of ``-Σ_j w_ij·ln w_ij`` in nats (0 = one key,
      ``ln T`` = uniform, i.e. global).
    Returns tensors of shape ``(...)``.
    """
    if not isinstance(weights, torch.Tensor) or weights.dim() < 2 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(
            f"head_stats expects self-attention weights of shape (..., T, T), got "
            f"{tuple(weights.shape) if isinstance(weights, torch.Tensor) else type(weights).__name__}"
        )
    if not weights.is_floating_point():
        raise TypeError(f"weights must be real floating-point attention weights, got dtype {weights.dtype}")
    if weights.device.type != "meta":  # a meta tensor has a shape and no values to check
        rows = weights.sum(-1)  # within 3e-2 of 1: weights rounded to half precision and back still pass
        ok = ((rows - 1).abs() <= 3e-2) | (rows == 0)  # 0: a query with no key to attend to
        bad = weights.isfinite().all(-1) & (~ok | (weights < 0).any(-1))  # NaN and inf pass through
        if bad.any():
            raise ValueError(
                "weights must be attention weights: each row non-negative and summing to 1 (or 0 for a query with "
                f"no key), got a row summing to {rows[bad][0].item():.3g}"
            )
    t = weights.shape[-1]
    pos = torch.arange(t, device=weights.device, dtype=weights.dtype)
    dist = (pos[:, None] - pos[None, :]).abs()  # (T, T): |i - j|
    distance = (weights * dist).sum(-1).mean(-1)
    entropy = -(weights * weights.clamp_min(1e-30).log()).sum(-1).mean(-1)
    return {"distance": distance, "entropy": entropy}


def uniform_distance(t: int) -> float:
    """Mean ``|i - j|`` over all ``t × t`` pairs (``t >= 1``): the ``distance`` of a head that attends uniformly."""
    t = as_int("t", t, 1)
    return (t * t - 1) / (3 * t)
