"""Generating text from a language model: greedy decoding, temperature and top-k sampling, and the
KV cache (000 §8.6; 002 KV cache; 004 §12).

``generate(model, prompt, n_new)`` works with the decoder-only ``Transformer`` and the ``LSTMLM``
through their one interface, ``model.hidden(ids, state) -> (h, state)``. Without a cache, every new token re-runs
the model over the whole sequence so far. With one (``use_cache=True``) the prompt is processed
once and each step feeds only the newest token: the Transformer's ``state`` is a ``KVCache`` per
layer (``MultiHeadAttention.forward(x, cache=...)`` appends the token's keys and values and
attends over all of them), the LSTM's state is its ``(h, c)``. Both ways run the same modules
and give the same tokens; the tests and ``python -m transformer_nb.bench kvcache`` check it.

Shapes: ``prompt (T0,)`` int64 -> ``(T0 + n_new,)`` on the model's device; logits ``(B, V)``.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch

from transformer_nb.core.output_head import OutputHead
from transformer_nb.core.stack import check_ids
from transformer_nb.core.transformer import LanguageModel, check_language_model
from transformer_nb.core.utils import as_int, as_real, plain_tensor


def _check_top_k(k) -> None:
    if k is not None:
        as_int("top_k", k, 0)


def _check_temperature(t) -> None:
    if as_real("temperature", t) < 0:
        raise ValueError(f"temperature must be a finite number >= 0 (0 = greedy), got {t}")


def _check_logits(logits) -> None:
    """``logits (..., V)``: a real floating tensor, no NaN or +inf, and every row with a word above -inf."""
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        got = f"a {logits.dtype} tensor" if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise TypeError(f"logits must be a floating-point tensor of shape (..., V), got {got}")
    plain_tensor("logits", logits)
    if logits.dim() < 1 or logits.shape[-1] == 0:
        raise ValueError(f"logits must have shape (..., V) with V >= 1, got {tuple(logits.shape)}")
    if logits.is_meta:
        raise ValueError("logits are on the meta device: they have shapes but no values to pick from")
    if torch.isnan(logits).any() or torch.isposinf(logits).any():
        raise ValueError("logits contain NaN or +inf: there is no distribution to pick from")
    if torch.isneginf(logits).all(-1).any():
        raise ValueError("a row of logits is -inf everywhere: every word is blocked, there is nothing to pick")


def top_k_filter(logits: torch.Tensor, k: int | None) -> torch.Tensor:
    """Keep exactly the ``k`` largest logits of each row, set the rest to ``-inf``. ``logits: (..., V)``;
    ``k`` None or 0 (or ``>= V``) keeps everything. Ties at the ``k``-th value go to the lower word ids,
    so exactly ``k`` words stay in every row."""
    _check_top_k(k)
    _check_logits(logits)
    return _top_k(logits, k)


def _top_k(logits: torch.Tensor, k: int | None) -> torch.Tensor:
    if not k or k >= logits.shape[-1]:
        return logits
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    above = logits > kth
    tied = logits == kth  # keep the first (k - #above) of them, by word id
    keep = above | (tied & (tied.cumsum(-1) <= k - above.sum(-1, keepdim=True)))
    return logits.masked_fill(~keep, float("-inf"))


def sample_next(
    logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Pick the next token from ``logits (B, V)``: greedy when ``temperature == 0``, else sample
    from ``softmax(top_k_filter(logits) / temperature)``. Returns ``(B,)`` int64. A row whose
    logits are all ``-inf`` (nothing to pick), NaN or ``+inf`` is a ``ValueError``."""
    _check_temperature(temperature)
    _check_top_k(top_k)
    _check_logits(logits)
    return _sample(logits, temperature, top_k, generator)


def _sample(logits: torch.Tensor, temperature, top_k, generator) -> torch.Tensor:
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(_top_k(logits.float(), top_k) / temperature, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def _pick(head: OutputHead, h: torch.Tensor, temperature, top_k, gen) -> torch.Tensor:
    """``h (1, d)`` -> the next token ``(1,)``: the head's exact greedy shortcut, or a sample."""
    if temperature == 0:
        return head.greedy(h)
    scores, order = head.next_token_scores(h)
    nxt = _sample(scores, temperature, top_k, gen)
    return nxt if order is None else order[nxt]


@contextmanager
def no_onednn():
    """Switch PyTorch's oneDNN (mkldnn) CPU kernels off inside the block (restored on exit).

    Generation works on one token at a time, and on such tiny tensors oneDNN's per-call set-up
    costs more than the arithmetic: a 512-wide GELU took 7.3 us through oneDNN and 1.4 us
    through PyTorch's own kernel on the 2 CPU cores this was written on. (The library's
    ``torch.backends.mkldnn.flags(enabled=False)`` would also reset oneDNN's TF32 and fp32-precision
    settings to its defaults, with a warning about Intel GPUs; this touches only ``enabled``.)"""
    before = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False
    try:
        yield
    finally:
        torch.backends.mkldnn.enabled = before


def _check_generate_args(model, prompt, n_new, temperature, top_k, seed, use_cache) -> None:
    check_language_model(model)
    if not isinstance(prompt, torch.Tensor) or prompt.dtype.is_floating_point or prompt.dtype.is_complex:
        got = f"{prompt.dtype} tensor" if isinstance(prompt, torch.Tensor) else type(prompt).__name__
        raise TypeError(f"prompt must be a 1-D integer tensor of word ids, got {got}")
    if prompt.dim() != 1 or prompt.numel() == 0 or prompt.dtype == torch.bool:
        raise ValueError(f"prompt must be a non-empty 1-D tensor of ids, got shape {tuple(prompt.shape)}")
    as_int("n_new", n_new, 0)
    _check_temperature(temperature)
    _check_top_k(top_k)
    if seed is not None and as_int("seed", seed, 0) >= 2**63:
        raise ValueError(f"seed must be None or an int below 2**63 (a torch.Generator's range), got {seed}")
    if use_cache and model.max_len is not None and prompt.numel() + n_new > model.max_len:
        raise ValueError(
            f"prompt ({prompt.numel()}) + n_new ({n_new}) exceeds max_len={model.max_len}: "
            f"the KV cache cannot slide its positions; generate fewer tokens or use_cache=False"
        )


@torch.inference_mode()
def generate(
    model: LanguageModel,
    prompt: torch.Tensor,
    n_new: int,
    temperature: float = 0.0,
    top_k: int | None = None,
    seed: int | None = 0,
    use_cache: bool = True,
) -> torch.Tensor:
    """Extend ``prompt`` (``(T0,)`` ids) by ``n_new`` tokens; returns ``(T0 + n_new,)`` on the model's device.

    ``temperature`` 0 is greedy; otherwise sample, from the ``top_k`` most likely words if given
    (0 or None: all). A ``torch.Generator`` seeded with ``seed`` draws the samples, so a seed fixes
    the text (on a given device). Without a cache the Transformer sees the last ``max_len`` tokens;
    with one the sequence must fit in ``max_len``. Runs in eval mode with oneDNN off
    (``no_onednn``); the model's train/eval mode is restored afterwards, also after an error.
    """
    _check_generate_args(model, prompt, n_new, temperature, top_k, seed, use_cache)
    device = next(model.parameters()).device
    check_ids(prompt[None].to(device), "prompt", model.vocab_size)
    was_training = model.training
    model.eval()
    try:
        with no_onednn(), model.head.lookup_table():
            gen = None if seed is None else torch.Generator(device=device).manual_seed(seed)
            n, window = prompt.numel(), model.max_len
            out = torch.empty(n + n_new, dtype=torch.long, device=device)
            out[:n] = prompt
            if use_cache:
                h, state = model.hidden(out[None, :n], model.init_state())
            for i in range(n_new):
                if not use_cache:
                    h, _ = model.hidden(out[None, max(0, n - (window or n)) : n])
                out[n] = _pick(model.head, h[:, -1], temperature, top_k, gen)[0]
                n += 1
                if use_cache and i < n_new - 1:
                    h, state = model.hidden(out[None, n - 1 : n], state)
    finally:
        model.train(was_training)
    return out
