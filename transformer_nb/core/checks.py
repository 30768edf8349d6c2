"""Every input check of the core, in one module: what the public functions and modules refuse, and why.

A public function, constructor or ``forward`` of the core is checked by one line, ``@boundary(check)``: ``check``
sees the same arguments and raises a ``TypeError`` / ``ValueError`` that says what is wrong; the body that follows
is the computation alone. Only the outermost call is checked: the modules a checked call runs (a block's
attention, a model's blocks, every step of ``generate``) trust it, so nothing is checked twice, nor per token.
Helpers that only the core calls (``sample_next``, ``top_k_filter``, ``KVCache.append``, ``OutputHead.logits``)
trust their callers and are not checked.

The notebooks' environment (``setup``, the profile, seeding, environment variables) is in ``env.py``.
"""

import functools
import math
import numbers
import operator
import os
from contextvars import ContextVar

import torch

__all__ = (  # noqa: SIM905 (what the companion uses)
    "as_device as_int as_real available_devices check_config check_cutoffs check_device check_eps check_ids "
    "check_keep check_language_model check_memory memory_of plain_tensor rope_dim"
).split()

_checked = ContextVar("checked", default=False)  # True while a checked call runs: the calls inside trust it


def boundary(check):
    """Decorator: ``check(*args, **kwargs)`` runs before the function, unless a checked call is already running."""

    def decorate(fn):
        @functools.wraps(fn)
        def checked(*args, **kwargs):
            if _checked.get():
                return fn(*args, **kwargs)
            check(*args, **kwargs)
            token = _checked.set(True)
            try:
                return fn(*args, **kwargs)
            finally:
                _checked.reset(token)

        return checked

    return decorate


def available_devices() -> list[str]:
    """The device names that work here: ``cpu``, then ``cuda`` and ``cuda:N`` per GPU, then ``mps``."""
    cuda = ["cuda"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
    return ["cpu", *cuda] + ["mps"] * torch.backends.mps.is_available()


# --------------------------------------------------------------------------- arguments (shared with the companion)


def as_int(name: str, value, minimum: int = 0) -> int:
    """``value`` as a Python int ``>= minimum``; else a ``TypeError`` / ``ValueError`` that names ``name``.

    Accepts ints, numpy ints and 0-d integer tensors; refuses bools, floats (even ``2.0``) and strings.
    """
    if isinstance(value, bool) or (isinstance(value, torch.Tensor) and value.dtype == torch.bool):
        raise TypeError(f"{name} must be an int, got {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}") from None
    _refuse(n < minimum, f"{name} must be >= {minimum}, got {n}")
    return n


def as_real(name: str, value, positive: bool = False) -> float:
    """``value`` as a finite Python float (``> 0`` if ``positive``); bools, strings and NaN/inf are refused."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.dtype != torch.bool:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    x = float(value)
    if not math.isfinite(x) or (positive and x <= 0):
        raise ValueError(f"{name} must be a finite{' positive' if positive else ''} number, got {value!r}")
    return x


def _refuse(bad, message: str, error=ValueError) -> None:
    """Raise ``error(message)`` if ``bad``: one line per check."""
    if bad:
        raise error(message)


def _bool(name: str, value) -> None:
    _refuse(not isinstance(value, bool), f"{name} must be True or False, got {value!r}", TypeError)


def _one_of(name: str, value, choices) -> None:
    _refuse(value not in choices, f"{name} must be one of {choices}, got {value!r}")


def _tensor(name: str, x, what: str = "") -> torch.Tensor:
    _refuse(not isinstance(x, torch.Tensor), f"{name} must be a torch.Tensor{what}, got {type(x).__name__}", TypeError)
    return x


def _what(x) -> str:
    return f"a {x.dtype} tensor of shape {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__


def _same_batch(memory: torch.Tensor, b: int) -> None:
    _refuse(memory.shape[0] != b, f"memory has batch size {memory.shape[0]} but the decoder input has {b}")


def _float(name: str, x, what: str = "") -> None:
    if not _tensor(name, x, what).is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor{what}, got dtype {x.dtype}")


def check_dropout(p) -> None:
    """``p`` must be a dropout probability: a real number in ``[0, 1)``."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < 1:
        raise ValueError(f"dropout is a probability in [0, 1), got {p!r}")


def check_eps(eps) -> None:
    """A norm's ``eps``: a positive finite number."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < float("inf"):
        raise ValueError(f"eps must be a positive finite number (it keeps the denominator away from 0), got {eps!r}")


def positive_even(d, name: str, why: str) -> None:
    """``d`` must be a positive even integer (``why``: what pairs its dimensions)."""
    if isinstance(d, bool) or not isinstance(d, numbers.Integral) or d <= 0 or d % 2:
        raise ValueError(f"{why}, so {name} must be a positive even integer, got {d!r}")


def rope_dim(d, name: str = "d") -> None:
    positive_even(d, name, "RoPE rotates pairs of dimensions")


def as_device(name: str, device) -> torch.device | None:
    """``None``, or a ``torch.device`` that exists here (``meta`` included); else an error naming ``name``."""
    if device is None:
        return None
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"{name} must be a device name such as 'cpu', got {type(device).__name__}")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ValueError(f"{name} must be one of {', '.join([*available_devices(), 'meta'])}, got {device!r}") from None
    if dev.type not in ("cpu", "meta") and str(dev) not in available_devices():
        raise ValueError(f"{name}={str(dev)!r} is not on this machine, which has {', '.join(available_devices())}")
    return dev


def memory_of(device=None) -> int | None:
    """Bytes of memory of ``device`` (CPU: physical RAM; CUDA: the GPU's), or None if unknown/unbounded (meta)."""
    dev = as_device("device", device) or torch.device("cpu")
    if dev.type == "cuda":
        return torch.cuda.get_device_properties(dev).total_memory
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if dev.type == "cpu" else None
    except (AttributeError, ValueError, OSError):
        return None


def check_memory(what: str, n_bytes: int, device=None) -> None:
    """``ValueError`` naming ``what`` when a tensor of ``n_bytes`` cannot fit in ``device``'s memory."""
    limit = memory_of(device)
    if limit is not None and n_bytes > limit:
        raise ValueError(f"{what} would need {n_bytes / 2**30:.3g} GiB, more than the {limit / 2**30:.3g} GiB here")


# --------------------------------------------------------------------------- tensors


def plain_tensor(name: str, x) -> None:
    """Refuse a subclass of ``torch.Tensor`` (``nn.Parameter`` aside): its ``__torch_function__`` can answer
    every comparison, ``==``, ``allclose``, ``isfinite``, ..., with whatever it likes, so a result that rests on
    comparing it proves nothing. ``x.as_subclass(torch.Tensor)`` is the plain tensor underneath."""
    if isinstance(x, torch.Tensor) and type(x) not in (torch.Tensor, torch.nn.Parameter):
        raise TypeError(f"{name} is a {type(x).__name__}, a subclass of torch.Tensor; use .as_subclass(torch.Tensor)")


def is_int_tensor(x) -> bool:
    """Whether ``x`` is a tensor of integers (ids, lengths, counts): bool, float and complex tensors are not."""
    return isinstance(x, torch.Tensor) and not (x.is_floating_point() or x.is_complex() or x.dtype == torch.bool)


def check_device(name: str, x: torch.Tensor, device: torch.device) -> None:
    """``x`` must be on ``device`` (a module's); a module on the meta device takes inputs from anywhere.

    Meta inputs into a real module would otherwise compute on memory that was never written, or fail
    deep inside torch."""
    if device.type != "meta" and x.device != device:
        why = "it has shapes but no values" if x.is_meta else f"move it with .to({str(device)!r})"
        raise ValueError(f"{name} is on the {x.device} device but the model is on {device}: {why}")


def check_hidden(x, d_model: int, name: str, dims: str = "B, T", like: torch.Tensor | None = None) -> None:
    """``x`` must be a floating-point ``(B, T, d_model)`` tensor (``dims="..."``: any leading dimensions);
    given ``like`` (a weight of the module), on its device and, outside autocast, of its dtype."""
    shape = f"({dims}, d_model={d_model})"
    _tensor(name, x, f" of shape {shape}")
    if (x.dim() != 3 if dims == "B, T" else x.dim() < 1) or x.shape[-1] != d_model:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a real floating-point tensor (hidden states, not ids), got dtype {x.dtype}")
    if like is not None:
        check_device(name, x, like.device)
        if x.dtype != like.dtype and not torch.is_autocast_enabled(x.device.type):
            raise TypeError(f"{name} has dtype {x.dtype}, the weights {like.dtype}: convert one or use torch.autocast")


def check_ids(ids, name: str = "ids", vocab: int | None = None, min_len: int = 0, device=None) -> None:
    """``ids`` must be a ``(B, T)`` integer tensor with ``T >= min_len`` and, given ``vocab``, ids in ``[0, vocab)``
    (checked on the CPU only: elsewhere reading it back would wait for the device); given ``device``, on it."""
    if not is_int_tensor(ids):
        got = ids.dtype if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise TypeError(f"{name} must be an integer tensor of word ids, got {got} (integer token ids: a torch.Tensor)")
    if ids.dim() != 2 or ids.shape[1] < min_len:
        at_least = f" with T >= {min_len}" if min_len else ""
        raise ValueError(f"{name} must have shape (B, T){at_least}, got {tuple(ids.shape)}")
    if device is not None:
        check_device(name, ids, device)
    if vocab is not None and ids.device.type == "cpu" and ids.numel():
        lo, hi = torch.aminmax(ids)
        _refuse(lo < 0 or hi >= vocab, f"{name} must lie in [0, {vocab}), got range [{int(lo)}, {int(hi)}]")


def check_keep(keep, b: int, t: int, name: str) -> None:
    """``keep`` must be None or a ``(B, T)`` bool tensor (True = real token) matching the sequence it describes."""
    if keep is None:
        return
    if _tensor(name, keep, " (a (B, T) bool mask, True = real token)").dtype != torch.bool:
        raise TypeError(f"{name} must be a bool mask (True = real token), got {keep.dtype}; use {name}.bool()")
    _refuse(tuple(keep.shape) != (b, t), f"{name} must have the shape (B, T) = ({b}, {t}), got {tuple(keep.shape)}")


def _past_table(what: str, offset, t: int, max_len: int, fix: str) -> None:
    """Positions ``offset .. offset + t - 1`` must have rows in a table of ``max_len``."""
    offset = as_int("offset", offset)  # the position of the first token
    _refuse(offset + t > max_len, f"positions {offset}..{offset + t - 1} exceed {what} of max_len={max_len}; {fix}")


# --------------------------------------------------------------------------- attention and masks


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple:
    """Shapes ``q: (..., T_q, d_k)``, ``k: (..., T_k, d_k)``, ``v: (..., T_k, d_v)``; returns the batch shape."""
    for name, t in (("query", q), ("key", k), ("value", v)):
        _float(name, t)
        _refuse(t.dim() < 2, f"{name} must have shape (..., T, d), got {tuple(t.shape)}")
        if t.device.type != "meta" and not torch.isfinite(t).all():
            raise ValueError(f"{name} contains NaN or inf; attention of such values is NaN")
    shapes = f"query {tuple(q.shape)}, key {tuple(k.shape)}, value {tuple(v.shape)}"
    _refuse(not 0 < q.shape[-1] == k.shape[-1], f"query and key must share the last dimension d_k >= 1: {shapes}")
    _refuse(k.shape[-2] != v.shape[-2], f"key and value must have the same length T_k: {shapes}")
    if not q.device == k.device == v.device or not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"query, key and value must share one device and dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    try:
        return torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(f"batch dimensions do not broadcast: {shapes}") from None


def check_mask(mask: torch.Tensor, scores_shape: tuple, dtype: torch.dtype | None = None) -> None:
    """A bool or additive float ``mask`` that broadcasts to scores ``(..., T_q, T_k)`` (a float one: of ``dtype``)."""
    if _tensor("mask", mask).dtype != torch.bool and not mask.is_floating_point():
        raise TypeError(f"mask must be bool or float (added), got {mask.dtype}; for a 0/1 integer mask use mask.bool()")
    try:
        ok = torch.broadcast_shapes(mask.shape, scores_shape) == tuple(scores_shape)
    except RuntimeError:
        ok = False
    _refuse(not ok, f"mask of shape {tuple(mask.shape)} does not broadcast to the scores {tuple(scores_shape)}")
    if mask.is_floating_point():
        if dtype is not None and mask.dtype != dtype:
            raise TypeError(f"a float mask must have the dtype of the query ({dtype}), got {mask.dtype}")
        if torch.isnan(mask).any() or torch.isposinf(mask).any():
            raise ValueError("a float mask is added to the scores and must not contain NaN or +inf")
        if mask.numel() and (mask == 1).any() and ((mask == 0) | (mask == 1)).all():
            raise ValueError("a float mask of 0s and 1s looks multiplicative; it is added: pass mask.bool()")


def _attention(q, k, v, mask=None, scale=None) -> None:
    batch = check_qkv(q, k, v)
    if mask is not None:
        check_mask(mask, (*batch, q.shape[-2], k.shape[-2]), dtype=q.dtype)
        _refuse(mask.device != q.device, f"mask is on {mask.device}, the query on {q.device}; move the mask with .to()")
    if scale is not None:
        as_real("scale", scale)


def finite_scores(scores: torch.Tensor, dtype: torch.dtype) -> None:
    """The attention scores must not overflow their dtype (e.g. float16 past 65504): a NaN never comes out."""
    if scores.device.type != "meta" and not torch.isfinite(scores).all():
        raise ValueError(f"the scores q·kᵀ·scale overflow {dtype}: use smaller values or a wider dtype")


def _causal_mask(t_q, t_k=None, device=None) -> None:
    t_q = as_int("T_q", t_q)
    t_k = t_q if t_k is None else as_int("T_k", t_k)
    _refuse(t_k < t_q, f"causal mask needs 0 <= T_q <= T_k, got T_q={t_q}, T_k={t_k}")
    check_memory(f"a causal mask of T_q={t_q} x T_k={t_k}", t_q * t_k, as_device("device", device))


def _padding_mask(lengths, max_len=None, device=None) -> None:
    device = as_device("device", device)
    bad = f"lengths must be a non-empty 1-D sequence of integers >= 0, got {lengths!r}"
    _refuse(isinstance(lengths, (list, tuple)) and any(isinstance(v, bool) for v in lengths), bad)
    try:
        lengths = torch.as_tensor(lengths, device=device)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(bad) from None
    if lengths.is_meta or lengths.dim() != 1 or not lengths.numel() or not is_int_tensor(lengths) or lengths.min() < 0:
        raise ValueError(bad)
    t = int(lengths.max()) if max_len is None else as_int("max_len", max_len)
    _refuse((lengths > t).any(), f"a length exceeds max_len={t}: lengths {lengths.tolist()}")
    check_memory(f"a padding mask of B={len(lengths)} x T={t}", len(lengths) * t, lengths.device)


def _padding_mask_from_ids(ids, pad_id) -> None:
    check_ids(ids)
    as_int("pad_id", pad_id, minimum=-(2**63))


def _key_padding(keep, t_q=1) -> None:
    if not isinstance(keep, torch.Tensor) or keep.dtype != torch.bool or keep.dim() != 2:
        raise TypeError(f"keep must be a (B, T_k) bool mask (True = real token), got {_what(keep)}")
    as_int("T_q", t_q)


def _self_attention_mask(keep, causal=False) -> None:
    _bool("causal", causal)
    _key_padding(keep)


# --------------------------------------------------------------------------- multi-head attention and its KV cache

MAX_WEIGHTS = 2**40  # 4·d_model² weights beyond this cannot be allocated on any machine (4 TB in float32)


def check_heads(d_model, n_heads, n_kv_heads=None, bias: bool = True) -> tuple[int, int, int]:
    """Checked ``(d_model, n_heads, n_kv_heads)``: positive ints, ``n_heads | d_model``, ``n_kv_heads | n_heads``;
    and ``bias`` a bool. ``MultiHeadAttention``, ``validate`` and ``params.attention_params`` call it."""
    d_model, n_heads = as_int("d_model", d_model, 1), as_int("n_heads", n_heads, 1)
    n_kv_heads = n_heads if n_kv_heads is None else as_int("n_kv_heads", n_kv_heads, 1)
    if 4 * d_model * d_model > MAX_WEIGHTS:
        raise ValueError(f"d_model={d_model} would need 4·d_model² = {4 * d_model * d_model:.2e} weights")
    _refuse(d_model % n_heads, f"n_heads={n_heads} must divide d_model={d_model} (each head gets d_model / n_heads)")
    _refuse(n_heads % n_kv_heads, f"n_kv_heads={n_kv_heads} must divide n_heads={n_heads} (a group shares a k/v head)")
    _bool("bias", bias)
    return d_model, n_heads, n_kv_heads


def _split_heads(x, n_heads) -> None:
    n_heads = as_int("n_heads", n_heads, 1)
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[2] % n_heads:
        raise ValueError(f"split_heads expects a (B, T, n_heads·d_head) tensor with n_heads={n_heads}, got {_what(x)}")


def _merge_heads(x) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 4:
        raise ValueError(f"merge_heads expects a (B, h, T, d_head) tensor, got {_what(x)}")


def _multihead_init(self, d_model, n_heads, n_kv_heads=None, bias=True, dropout=0.0) -> None:
    check_heads(d_model, n_heads, n_kv_heads, bias)
    check_dropout(dropout)


def _attention_mask(attn, mask, b: int, t_q: int, t_k: int) -> None:
    """``mask`` must fit the scores ``(B, h, T_q, T_k)`` of the ``MultiHeadAttention`` ``attn``."""
    if mask is None:
        return
    try:
        check_mask(mask, (b, attn.n_heads, t_q, t_k))
    except ValueError as err:
        if isinstance(mask, torch.Tensor) and tuple(mask.shape) == (b, t_k):
            raise ValueError(f"{err}; this looks like a (B, T_k) key-padding mask: use masks.key_padding") from None
        raise


def _cache(attn, cache, b: int, t_new: int) -> int:
    """A ``KVCache`` that belongs to ``attn`` (or to no layer yet) with room for ``t_new`` positions; its length."""
    from transformer_nb.core.multihead import KVCache

    _refuse(not isinstance(cache, KVCache), f"cache must be a KVCache, got {type(cache).__name__}", TypeError)
    if cache.owner is not None and cache.owner() is not attn:
        raise ValueError("this KVCache is another attention layer's: each needs its own (model.init_state())")
    if cache.length + t_new > cache.capacity:
        raise ValueError(f"the KV cache holds {cache.capacity} positions; {cache.length + t_new} were asked for")
    if cache.k is not None and cache.k.shape[0] != b:
        raise ValueError(f"the KV cache holds a batch of {cache.k.shape[0]}, got {b}")
    return cache.length


def _rope_fits(rope, attn, t_q: int, t_k: int, past: int) -> None:
    """A ``RoPE`` (or its ``at(...)``) passed to attention has table rows for the positions it will turn."""
    if rope is None:
        return  # no rotation: RoPE is not even imported (a model without it does not depend on it)
    from transformer_nb.core.rope import RoPE

    kw = getattr(rope, "keywords", {})
    owner = rope if isinstance(rope, RoPE) else getattr(getattr(rope, "func", None), "__self__", None)
    if isinstance(owner, RoPE):
        for name, t, offset in (("q", t_q, kw.get("q_offset", past)), ("k", t_k, kw.get("k_offset", past))):
            _rotated(owner, owner.cos.new_empty(t, attn.d_head), offset, name)


def _self_attention(attn, x, mask, rope, cache) -> None:
    """What attention over ``x`` itself needs: a cache of its own, RoPE rows and a mask that fits."""
    past = 0 if cache is None else _cache(attn, cache, x.shape[0], x.shape[1])
    _rope_fits(rope, attn, x.shape[1], x.shape[1], past)
    _attention_mask(attn, mask, x.shape[0], x.shape[1], past + x.shape[1])


def _multihead(self, query, key=None, value=None, mask=None, is_causal=False, rope=None, cache=None) -> None:
    key = query if key is None else key
    value = key if value is None else value
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_hidden(t, self.d_model, name, like=self.q_proj.weight)
    if key.shape[1] != value.shape[1] or not query.shape[0] == key.shape[0] == value.shape[0]:
        raise ValueError(f"query, key and value must share B, key and value T_k: got {query.shape}, {key.shape}")
    if key is query and value is query:
        return _self_attention(self, query, mask, rope, cache)
    _refuse(cache is not None, "cache= is for self-attention: call forward(x, cache=...) without key and value")
    if is_causal:
        _causal_mask(query.shape[1], key.shape[1])
    _rope_fits(rope, self, query.shape[1], key.shape[1], 0)
    _attention_mask(self, mask, query.shape[0], query.shape[1], key.shape[1])


def _kv_cache_init(self, capacity) -> None:
    as_int("capacity", capacity, 1)


# --------------------------------------------------------------------------- the configuration, blocks and stacks


def check_config(cfg):
    """``cfg`` must be a ``TransformerConfig`` (which is valid: it was validated when it was made); return it."""
    from transformer_nb.core.config import TransformerConfig

    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"expected a TransformerConfig (e.g. PRESETS['gpt2-small']), got {type(cfg).__name__}")
    return cfg


def _built_from_config(self, cfg, *args, **kwargs) -> None:
    check_config(cfg)


def check_cutoffs(cutoffs, div_value, d_model: int, vocab: int) -> None:
    """An adaptive softmax's ``cutoffs`` (increasing word ranks in ``(0, vocab)``: the head's words, then each tail
    cluster's) and ``div_value`` (> 0; cluster ``i`` projects ``d_model`` to ``d_model // div_value**i`` >= 1)."""
    if not isinstance(cutoffs, (tuple, list)) or not cutoffs:
        raise ValueError(f"cutoffs must be a non-empty tuple of word ranks such as (2000, 10000), got {cutoffs!r}")
    cuts = [as_int("a cutoff", c, 1) for c in cutoffs]
    if cuts != sorted(set(cuts)) or cuts[-1] >= vocab:
        raise ValueError(f"cutoffs must increase strictly and stay below the vocabulary ({vocab}), got {cutoffs!r}")
    div = as_real("div_value", div_value, positive=True)
    widest = max(d_model / div, d_model / div ** len(cuts)) if div ** len(cuts) > 0 else math.inf
    if widest * (d_model + vocab) > MAX_WEIGHTS:
        raise ValueError(f"div_value={div_value} makes a tail cluster project d_model={d_model} to {widest:.3g}")
    if d_model // div ** len(cuts) < 1:
        raise ValueError(f"the last cluster maps d_model={d_model} to d_model // div_value**{len(cuts)} = 0 dimensions")


def validate(cfg):
    """Raise ``ValueError`` naming the field for any impossible configuration; return ``cfg``.

    ``TransformerConfig`` calls it when it is made, so a configuration is validated once."""
    from transformer_nb.core.config import ACTIVATIONS, ARCHS, FLAGS, NORMS, POSITIONS

    for name in ("name", "source"):
        _refuse(not isinstance(v := getattr(cfg, name), str), f"{name} must be a string, got {v!r}", TypeError)
    for name in FLAGS + ("final_norm",) * (cfg.final_norm is not None):
        _bool(name, getattr(cfg, name))
    if cfg.published is not None:
        as_real("published (the authors' parameter count)", cfg.published, positive=True)
    for name, choices in (("arch", ARCHS), ("activation", ACTIVATIONS), ("norm", NORMS), ("positions", POSITIONS)):
        _one_of(name, getattr(cfg, name), choices)
    check_heads(cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.bias)
    for name, low in (("n_layers", 1), ("vocab", 1), ("max_len", 1), ("token_types", 0)):
        as_int(name, getattr(cfg, name), low)
    if cfg.d_ff is not None and (isinstance(cfg.d_ff, bool) or not isinstance(cfg.d_ff, int) or cfg.d_ff <= 0):
        raise ValueError(f"d_ff (the FFN hidden width) must be a positive integer (e.g. 4·d_model), got {cfg.d_ff!r}")
    check_eps(cfg.eps)
    if cfg.positions == "rope" and (cfg.d_model // cfg.n_heads) % 2:
        raise ValueError(f"RoPE turns pairs: d_head = d_model / n_heads must be even, got {cfg.d_model // cfg.n_heads}")
    check_dropout(cfg.dropout)
    if cfg.arch != "encoder-decoder" and (cfg.n_dec_layers is not None or cfg.tgt_vocab is not None):
        raise ValueError(f"n_dec_layers and tgt_vocab belong to an encoder-decoder; arch={cfg.arch!r}")
    if cfg.arch == "encoder-decoder":
        as_int("n_dec_layers", cfg.dec_layers, 1)
        as_int("tgt_vocab", cfg.target_vocab, 1)
        if cfg.share_embeddings and cfg.target_vocab != cfg.vocab:
            raise ValueError(f"share_embeddings needs one vocabulary, not {cfg.vocab} and {cfg.target_vocab} words")
    if cfg.adaptive:
        check_cutoffs(cfg.cutoffs, cfg.div_value, cfg.d_model, cfg.target_vocab)
    if cfg.scale_embeddings and cfg.adaptive and cfg.tie_output:
        raise ValueError("scale_embeddings: a tied adaptive head's embeddings are already scaled by sqrt(d_model)")
    for name in ("tie_output", "output_bias", "adaptive"):
        _refuse(getattr(cfg, name) and not cfg.lm_head, f"{name}=True needs an output projection, but lm_head=False")
    if cfg.pad_id is not None and as_int("pad_id", cfg.pad_id, 0) >= (n := min(cfg.vocab, cfg.target_vocab)):
        raise ValueError(f"pad_id must be an id of the vocabulary, in [0, {n}), got {cfg.pad_id}")
    if cfg.pad_id is not None and cfg.tie_output:
        raise ValueError("pad_id needs own token tables, not the tied output layer's: set tie_output=False")
    return cfg


def _feed_forward_init(self, cfg) -> None:
    check_config(cfg)
    check_memory(f"d_model x d_ff = {cfg.d_model} x {cfg.ff} (the FFN's weights)", 3 * 4 * cfg.d_model * cfg.ff)


def _feed_forward(self, x) -> None:
    check_hidden(x, self.d_model, "the FeedForward input x", dims="...", like=self.linear1.weight)


def _encoder_layer(self, x, mask=None, is_causal=False, rope=None, cache=None) -> None:
    check_hidden(x, self.self_attn.d_model, "the EncoderLayer input x", like=self.self_attn.q_proj.weight)
    _self_attention(self.self_attn, x, mask, rope, cache)


def _decoder_inputs(x, memory, d_model: int, like: torch.Tensor, who: str) -> None:
    """``x (B, T, d_model)`` and ``memory (B, S, d_model)``: hidden states of one batch, like the weights ``like``."""
    check_hidden(x, d_model, f"the {who} input x", like=like)
    check_hidden(memory, d_model, "memory (the encoder output)", like=like)
    _same_batch(memory, x.shape[0])


def _decoder_layer(self, x, memory, self_mask=None, memory_mask=None) -> None:
    _decoder_inputs(x, memory, self.self_attn.d_model, self.self_attn.q_proj.weight, "DecoderLayer")
    _attention_mask(self.self_attn, self_mask, x.shape[0], x.shape[1], x.shape[1])
    _attention_mask(self.cross_attn, memory_mask, x.shape[0], x.shape[1], memory.shape[1])


def _encoder(self, x, keep=None, mask=None, rope=None, caches=None) -> None:
    _refuse(caches is not None, "caches= is for Transformer.hidden(ids, state); call the stack without it")
    attn = self.layers[0].self_attn
    check_hidden(x, self.d_model, "the encoder input x", like=attn.q_proj.weight)
    check_keep(keep, x.shape[0], x.shape[1], "keep")
    _self_attention(attn, x, mask, rope, None)


def _decoder(self, x, memory, keep=None, memory_keep=None) -> None:
    _decoder_inputs(x, memory, self.d_model, self.layers[0].self_attn.q_proj.weight, "decoder")
    check_keep(keep, x.shape[0], x.shape[1], "keep (target padding)")
    check_keep(memory_keep, memory.shape[0], memory.shape[1], "memory_keep (source padding)")


# --------------------------------------------------------------------------- the model


def check_language_model(model) -> None:
    """``model`` must be a language model: a decoder-only ``Transformer`` or an ``LSTMLM``."""
    from transformer_nb.core.transformer import LanguageModel, Transformer

    if not isinstance(model, LanguageModel) or (isinstance(model, Transformer) and model.cfg.arch != "decoder"):
        got = f"a Transformer with arch={model.cfg.arch!r}" if isinstance(model, Transformer) else type(model).__name__
        raise TypeError(f"model must be a decoder-only Transformer or an LSTMLM, got {got}")


def _transformer_init(self, cfg=None, ranks=None, **fields) -> None:
    from transformer_nb.core.config import TransformerConfig

    cfg = TransformerConfig(**fields) if cfg is None else check_config(cfg).with_(**fields)
    for what, rows in (("token table", cfg.vocab), ("target token table", cfg.target_vocab)):
        check_memory(f"the {what} of vocab={rows} x d_model={cfg.d_model}", 4 * rows * cfg.d_model)
    if cfg.lm_head:
        _output_head_init(None, cfg.head, cfg.d_model, cfg.target_vocab, ranks, cfg.cutoffs, cfg.div_value)
    _feed_forward_init(None, cfg)
    if cfg.positions in ("sinusoidal", "learned"):
        check_memory(
            f"a position table of max_len={cfg.max_len} x d_model={cfg.d_model}", 12 * cfg.max_len * cfg.d_model
        )
    elif cfg.positions == "rope":
        _rope_init(None, cfg.d_model // cfg.n_heads, cfg.max_len)


def _runnable(model) -> None:
    if model.cfg.positions == "t5-bias":
        raise NotImplementedError("T5's bucketed relative-position bias is counted here, not implemented")


def _hidden(self, ids, state=None, keep=None) -> None:
    _runnable(self)
    check_ids(ids, "ids", self.vocab_size, device=next(self.parameters()).device)
    n = len(self.blocks.layers)
    if state is not None:
        _refuse(not isinstance(state, list) or len(state) != n, f"state must be init_state(): a list of {n} KVCache")
        _refuse(len({id(c) for c in state}) != n, "state holds one KVCache twice: a cache belongs to one layer")
        for layer, cache in zip(self.blocks.layers, state):
            _cache(layer.self_attn, cache, ids.shape[0], 0)
        _refuse(keep is not None, "keep (padding) does not combine with a KV cache: generate one sequence at a time")
    past, t = (0 if state is None else state[0].length), ids.shape[1]
    _refuse(past + t > self.max_len, f"positions {past}..{past + t - 1} exceed max_len={self.max_len}")
    check_keep(keep, ids.shape[0], t, "keep")


def _targets(targets, ids, vocab: int) -> None:
    check_ids(targets, "targets", vocab)
    if targets.shape != ids.shape:
        raise ValueError(f"targets must have the shape of ids, got {tuple(targets.shape)} and {tuple(ids.shape)}")
    _refuse(not targets.numel(), f"a loss needs at least one target, got targets of shape {tuple(targets.shape)}")


def _model_inputs(self, ids, state=None) -> None:
    from transformer_nb.core.transformer import Transformer

    if isinstance(self, Transformer):
        _hidden(self, ids, state)
    else:
        check_ids(ids, "ids", self.vocab_size)


def _lm_forward(self, ids, targets=None, state=None) -> None:
    _model_inputs(self, ids, state)
    if targets is not None:
        _targets(targets, ids, self.head.vocab_size)


def _nll(self, ids, targets, state=None, reduction="mean") -> None:
    _one_of("reduction", reduction, ("mean", "sum", "none"))
    _model_inputs(self, ids, state)
    _targets(targets, ids, self.head.vocab_size)


def _encoder_decoder(self, name: str) -> None:
    _refuse(self.decoder is None, f"{name} belongs to an encoder-decoder; this model has arch={self.cfg.arch!r}")


def _encode(self, src, src_keep=None) -> None:
    _encoder_decoder(self, "encode")
    _hidden(self, src, keep=src_keep)


def _tgt(self, tgt, tgt_keep) -> None:
    check_ids(tgt, "tgt", self.cfg.target_vocab, device=next(self.parameters()).device)
    _refuse(tgt.shape[1] > self.max_len, f"positions 0..{tgt.shape[1] - 1} exceed max_len={self.max_len}")
    check_keep(tgt_keep, tgt.shape[0], tgt.shape[1], "tgt_keep")


def _decode(self, tgt, memory, src_keep=None, tgt_keep=None) -> None:
    _encoder_decoder(self, "decode")
    _tgt(self, tgt, tgt_keep)
    check_hidden(
        memory, self.d_model, "memory (the encoder output)", like=self.decoder.layers[0].self_attn.q_proj.weight
    )
    _same_batch(memory, tgt.shape[0])
    check_keep(src_keep, memory.shape[0], memory.shape[1], "memory_keep (source padding)")


def _transformer_forward(self, ids, targets=None, keep=None, tgt=None, tgt_keep=None) -> None:
    enc_dec = self.cfg.arch == "encoder-decoder"
    _runnable(self)
    _refuse(enc_dec and tgt is None, "an encoder-decoder needs forward(src, tgt=...)")
    if tgt is not None and not enc_dec:
        raise ValueError(f"arch={self.cfg.arch!r} takes one sequence of ids; tgt is for an encoder-decoder")
    _hidden(self, ids, keep=keep)
    if enc_dec:
        _tgt(self, tgt, tgt_keep)
        _same_batch(ids, tgt.shape[0])
        ids = tgt
    if self.head is None and targets is not None:
        raise ValueError("this model has no output layer (lm_head=False): it gives hidden states, no loss")
    if targets is not None:
        _targets(targets, ids, self.head.vocab_size)


# --------------------------------------------------------------------------- generation


def _generate(model, prompt, n_new, temperature=0.0, top_k=None, seed=0, use_cache=True) -> None:
    from transformer_nb.core.transformer import Transformer

    check_language_model(model)
    _refuse(model.head is None, "model has no output layer (lm_head=False): no next-word scores to generate from")
    if isinstance(model, Transformer):
        _runnable(model)
    if not is_int_tensor(prompt) or prompt.dim() != 1 or not prompt.numel():
        raise TypeError(f"prompt must be a non-empty 1-D integer tensor of word ids, got {_what(prompt)}")
    as_int("n_new", n_new, 0)
    t = as_real("temperature", temperature)
    _refuse(t < 0, f"temperature must be a finite number >= 0 (0 = greedy), got {t}")
    if 0 < t < 1e-30:  # below, logits / temperature overflow
        raise ValueError(f"temperature={t:g} is so small that logits / temperature overflow: use 0 or >= 1e-30")
    if top_k is not None:
        as_int("top_k", top_k, 0)
    if seed is not None and as_int("seed", seed, 0) >= 2**63:
        raise ValueError(f"seed must be None or an int below 2**63 (a torch.Generator's range), got {seed}")
    _bool("use_cache", use_cache)
    if use_cache and model.max_len is not None and prompt.numel() + n_new > model.max_len:
        raise ValueError(f"prompt + n_new = {prompt.numel() + n_new} exceeds max_len={model.max_len}: use_cache=False")
    device = next(model.parameters()).device
    if use_cache and isinstance(model, Transformer):
        cfg = model.cfg
        n_bytes = 2 * cfg.n_layers * cfg.kv_heads * model.max_len * (cfg.d_model // cfg.n_heads) * 4
        check_memory(f"a KV cache of {cfg.n_layers} layers x max_len={model.max_len} positions", n_bytes, device)
    check_ids(prompt[None].to(device), "prompt", model.vocab_size)


# --------------------------------------------------------------------------- positions


def _sinusoid_frequencies(d_model, base=10000.0) -> None:
    positive_even(d_model, "d_model", "sinusoidal encodings pair sin/cos dimensions")
    as_real("base", base, positive=True)


def _sinusoidal_encoding(n_positions, d_model, base=10000.0, name="n_positions", minimum=0) -> None:
    n_positions = as_int(name, n_positions, minimum)
    _sinusoid_frequencies(d_model, base)
    check_memory(f"a sinusoidal table of {name}={n_positions} x d_model={d_model}", 12 * n_positions * d_model)


def _sinusoidal_init(self, d_model, max_len=5000, base=10000.0) -> None:
    _sinusoidal_encoding(max_len, d_model, base, "max_len", 1)


def _learned_init(self, max_len, d_model) -> None:
    max_len, d_model = as_int("max_len", max_len, minimum=1), as_int("d_model", d_model, minimum=1)
    check_memory(f"a learned table of max_len={max_len} x d_model={d_model}", 4 * max_len * d_model)


def _positions(self, x, offset=0) -> None:
    name = type(self).__name__
    _float("x", x, f" of shape (B, T, d_model) ({name} adds to embeddings)")
    if x.dim() != 3 or x.shape[-1] != self.d_model:
        raise ValueError(f"{name} expects x of shape (B, T, d_model={self.d_model}), got {tuple(x.shape)}")
    check_device("x", x, self.pe.device if hasattr(self, "pe") else self.emb.weight.device)
    fix = f"use sequences of at most {self.max_len} tokens or build the module with a larger max_len"
    _past_table(f"the {name} table", offset, x.shape[1], self.max_len, fix)


def _alibi_slopes(n_heads) -> int:
    n_heads = as_int("n_heads", n_heads, 1)
    check_memory(f"ALiBi slopes for n_heads={n_heads}", 8 * n_heads)
    return n_heads


def _alibi_bias(t_q, n_heads, t_k=None, dtype=torch.float32, device=None) -> None:
    n_heads = _alibi_slopes(n_heads)
    t_q = as_int("T_q", t_q)
    t_k = t_q if t_k is None else as_int("T_k", t_k)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype (the bias is fractional), got {dtype!r}")
    _refuse(t_k < t_q, f"alibi_bias needs 0 <= T_q <= T_k, got T_q={t_q}, T_k={t_k}")
    n_bytes = 16 * n_heads * t_q * t_k + 8 * (t_q + t_k)  # the float64 bias and the positions it is built from
    check_memory(f"an ALiBi bias of n_heads={n_heads} x T_q={t_q} x T_k={t_k}", n_bytes, as_device("device", device))


def _alibi_init(self, n_heads) -> None:
    _alibi_slopes(n_heads)


def _alibi(self, t_q, t_k=None) -> None:
    _alibi_bias(t_q, self.n_heads, t_k, self.slopes.dtype, self.slopes.device)


# --------------------------------------------------------------------------- rotary embeddings

ROPE_PAIRINGS = ("interleaved", "half")


def _rope_frequencies(d, base=10000.0) -> None:
    rope_dim(d)
    as_real("base", base, positive=True)


def _apply_rope(x, positions=None, base=10000.0, pairing="interleaved") -> None:
    _one_of("pairing", pairing, ROPE_PAIRINGS)
    _float("x", x, " of shape (..., T, d) (RoPE rotates real vectors)")
    _refuse(x.dim() < 2, f"x must be a tensor of shape (..., T, d), got {tuple(x.shape)}")
    rope_dim(x.shape[-1], "the last dimension of x")
    as_real("base", base, positive=True)
    t = x.shape[-2]
    positions = torch.arange(t) if positions is None else torch.as_tensor(positions)
    if positions.dim() != 1 or positions.shape[0] != t:
        raise ValueError(f"positions must have shape (T,) = ({t},) to match x, got {tuple(positions.shape)}")


def _rope_init(self, d_head, max_len=4096, base=10000.0, pairing="interleaved") -> None:
    rope_dim(d_head, "d_head")
    _one_of("pairing", pairing, ROPE_PAIRINGS)
    max_len = as_int("max_len", max_len, minimum=1)
    as_real("base", base, positive=True)
    # float64 angles, cos and sin, then the float32 tables: 32 bytes per (position, pair)
    tables = f"RoPE's tables for max_len={max_len} x d_head/2={d_head // 2}"
    check_memory(tables, 32 * max_len * (d_head // 2), torch.get_default_device())  # meta: no limit


def _rotated(rope, x, offset, name: str) -> None:
    _float(name, x, " (RoPE rotates real vectors)")
    check_device(name, x, rope.cos.device)
    if x.dim() < 2 or x.shape[-1] != rope.d_head:
        raise ValueError(f"RoPE(d_head={rope.d_head}) expects {name} of shape (..., T, d_head), got {tuple(x.shape)}")
    fix = f"build RoPE(d_head, max_len=...) with max_len >= {as_int('offset', offset) + x.shape[-2]}"
    _past_table("RoPE's table", offset, x.shape[-2], rope.max_len, fix)


def _rope_rotate(self, x, offset=0) -> None:
    _rotated(self, x, offset, "x")


def _rope(self, q, k, q_offset=0, k_offset=0, in_place=False) -> None:
    _rotated(self, q, q_offset, "q")
    _rotated(self, k, k_offset, "k")
    _bool("in_place", in_place)


# --------------------------------------------------------------------------- the output head


def _frequency_ranks(train_ids, vocab_size) -> None:
    vocab_size = as_int("vocab_size", vocab_size, 1)
    _refuse(not is_int_tensor(train_ids), f"train_ids must be an integer tensor, got {_what(train_ids)}", TypeError)
    if train_ids.numel() and (train_ids.min() < 0 or train_ids.max() >= vocab_size):
        raise ValueError(f"train_ids must lie in [0, vocab_size={vocab_size})")


def _output_head_init(self, kind, d_model, vocab_size, ranks=None, cutoffs=(2000, 10000), div_value=4.0, bias=True):
    from transformer_nb.core.output_head import HEADS

    _one_of("head", kind, HEADS)
    d_model, vocab_size = as_int("d_model", d_model, 1), as_int("vocab_size", vocab_size, 1)
    check_memory(f"an output layer of vocab_size={vocab_size} x d_model={d_model}", 4 * vocab_size * d_model)
    if kind in ("adaptive", "adaptive_tied"):
        _refuse(ranks is None, f"the {kind} head needs ranks = frequency_ranks(train_ids, V): frequent words first")
        if not isinstance(ranks, torch.Tensor) or ranks.shape != (vocab_size,):
            raise ValueError(f"ranks must be a tensor of shape ({vocab_size},), got {_what(ranks)}")
        if not torch.equal(torch.sort(ranks.long().cpu()).values, torch.arange(vocab_size)):
            raise ValueError("ranks must be a permutation of 0 .. V-1 (use frequency_ranks)")
