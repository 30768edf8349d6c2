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

from contextlib import contextmanager, nullcontext

import torch

from transformer_nb.core import checks
from transformer_nb.core.output_head import OutputHead
from transformer_nb.core.transformer import LanguageModel


def top_k_filter(logits: torch.Tensor, k: int | None) -> torch.Tensor:
    """Keep exactly the ``k`` largest logits of each row, set the rest to ``-inf``. ``logits: (..., V)``;
    ``k`` None or 0 (or ``>= V``) keeps everything. Ties at the ``k``-th value go to the lower word ids,
    so exactly ``k`` words stay in every row."""
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
    from ``softmax(top_k_filter(logits) / temperature)``: with ``top_k``, among the ``k`` kept words only (in column
    order; the same distribution; one ``topk`` finds them unless the k-th value ties: 0.13 ms instead of 1 at
    V = 33,278, k = 40). Returns ``(B,)`` int64. A row whose logits are all ``-inf``, NaN or ``+inf`` is an error."""
    if temperature == 0:
        return logits.argmax(dim=-1)
    if top_k and top_k < logits.shape[-1]:  # a draw among the kept words (B, k) only
        v, i = torch.topk(logits.float(), top_k + 1)  # no tie at the k-th value: its first k are top_k_filter's
        tie = not bool((v[:, top_k - 1] > v[:, top_k]).all()) or bool(v.isnan().any())
        kept = (torch.topk(top_k_filter(logits.float(), top_k), top_k).indices if tie else i[:, :top_k]).sort(-1).values
        return kept.gather(-1, sample_next(logits.gather(-1, kept), temperature, generator=generator)[:, None])[:, 0]
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def _pick(head: OutputHead, h: torch.Tensor, temperature, top_k, gen) -> torch.Tensor:
    """``h (1, d)`` -> the next token ``(1,)``: the head's exact greedy shortcut, or a sample."""
    if temperature == 0:
        return head.greedy(h)
    scores, order = head.next_token_scores(h)
    nxt = sample_next(scores, temperature, top_k, gen)
    return nxt if order is None else order[nxt]


@contextmanager
def no_onednn():
    """Switch oneDNN's CPU kernels off inside the block: on one token, their set-up costs more than the
    arithmetic. Only ``enabled`` is touched (``mkldnn.flags`` would also reset precision settings)."""
    before = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False
    try:
        yield
    finally:
        torch.backends.mkldnn.enabled = before


@torch.inference_mode()
@checks.boundary(checks._generate)
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
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        # The table costs about what embedding 100 words one at a time does (V = 33,278, d = 128): long runs only.
        with no_onednn(), model.head.lookup_table() if n_new > 100 else nullcontext():
            gen = None if seed is None else torch.Generator(device=device).manual_seed(int(seed))
            n, window = prompt.numel(), model.max_len
            out = torch.empty(n + n_new, dtype=torch.long, device=device)
            out[:n] = prompt
            if use_cache:
                h, state = model.hidden(out[None, :n], model.init_state())
            for i in range(n_new):
                if not use_cache:
                    h, _ = model.hidden(out[None, max(0, n - (window or n)) : n])
                nxt = _pick(model.head, h[:, -1], temperature, top_k, gen)  # (1,)
                out[n] = nxt[0]
                n += 1
                if use_cache and i < n_new - 1:
                    h, state = model.hidden(nxt.view(1, 1), state)
    finally:
        model.train(was_training)
    return out
