"""Perplexity, the score of a language model, and the unigram baseline (000 §8.6.2, Exercise 8.9;
001 §19.13).

The perplexity of a model on a text of ``N`` predicted tokens is ``exp(-(1/N) Σ log p(w_t | w_<t))``:
the exponential of the mean negative log-likelihood (NLL) per token. A model that spreads its
probability evenly over ``k`` words has perplexity ``k``. Summing the NLL over the whole split and
dividing once by the number of tokens is what makes it exact (a mean of per-batch perplexities is not).
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist

from transformer_nb.core.checks import as_int, check_ids
from transformer_nb.train import rank_and_world, unwrap
from transformer_nb.wikitext import iter_batches


def _stream(name: str, ids, least: int, vocab: int | None = None) -> None:
    check_ids(ids[None] if isinstance(ids, torch.Tensor) and ids.dim() == 1 else ids, name, vocab)  # dtype, range
    if ids.is_meta or ids.dim() != 1 or ids.numel() < least:
        raise ValueError(f"{name} must be a flat (N,) stream of at least {least} ids with values, got {ids!r:.60}")


def unigram_perplexity(train_ids: torch.Tensor, eval_ids: torch.Tensor, vocab_size: int) -> float:
    """Perplexity of the unigram model ``p(w) = count_train(w) / N_train`` on ``eval_ids``.

    Raises ``ValueError`` if an evaluated word never occurs in training (infinite perplexity).
    """
    _stream("train_ids", train_ids, 1, vocab_size)
    _stream("eval_ids", eval_ids, 1, vocab_size)
    counts = torch.bincount(train_ids.cpu(), minlength=vocab_size).double()
    nll = -(counts / counts.sum()).log()[eval_ids.cpu()]
    if torch.isinf(nll).any():
        raise ValueError("an evaluated word has zero training count: the unigram perplexity is infinite")
    return math.exp(nll.mean().item())


@torch.no_grad()
def evaluate(model, ids: torch.Tensor, seq_len=128, batch_size=16, max_tokens=None, bf16=False, stride=None) -> dict:
    """Perplexity of ``model`` on a flat ``(N,)`` split: ``exp(sum of NLL / number of targets)``.

    The split is cut into ``batch_size`` contiguous streams (fewer if the split has fewer targets),
    each starting with the last word of the one before, read in windows of ``seq_len``; the
    ``(N - 1) % batch_size`` targets left over form one more stream (a carried state starts afresh
    there). Every target is scored exactly once, on the model's device. A model that carries a state (the LSTM)
    carries it from window to window, so every prediction sees all the text before it. A
    Transformer sees only its window: with ``stride=None`` the windows do not overlap (a word early
    in a window has little context); with ``stride < seq_len`` the window slides by ``stride`` and
    only its last ``stride`` targets are scored, so every prediction after the first window has at
    least ``seq_len - stride`` words of context (at ``seq_len / stride`` times the cost).
    Under ``torch.distributed`` each rank scores its own contiguous part and the sums are added up.
    Returns ``{"nll_sum", "tokens", "ppl"}``.
    """
    _stream("ids", ids, 2)
    seq_len, batch_size = as_int("seq_len", seq_len, 1), as_int("batch_size", batch_size, 1)
    max_tokens = None if max_tokens is None else as_int("max_tokens", max_tokens, 1)
    stride = None if stride is None else as_int("stride", stride, 1)
    raw = unwrap(model)
    device = next(raw.parameters()).device
    data = ids if max_tokens is None else ids[:max_tokens]
    rank, world = rank_and_world()
    if world > 1:  # rank r scores targets r*n+1 .. (r+1)*n; the last rank also the (N - 1) % world left over
        n = (data.numel() - 1) // world
        data = data[rank * n : (rank + 1) * n + 1 if rank < world - 1 else data.numel()]
    if data.numel() < 2:
        raise ValueError(f"max_tokens={max_tokens} leaves fewer than 2 tokens to score")
    check_ids(data[None], "ids", raw.vocab_size)
    rows = min(batch_size, data.numel() - 1)
    n = (data.numel() - 1) // rows  # targets per stream
    streams = data[: rows * n + 1].unfold(0, n + 1, n)  # (rows, n + 1): a row ends where the next one starts
    tail = data[rows * n :]  # the last (N - 1) % rows targets: one more stream of its own
    was_training = raw.training
    raw.eval()
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        total, count = _nll_sum(raw, streams.to(device), seq_len, stride)
        if tail.numel() > 1:
            more, k = _nll_sum(raw, tail[None].to(device), seq_len, stride)
            total, count = total + more, count + k
    raw.train(was_training)
    if world > 1:
        both = torch.stack([total, torch.tensor(float(count), dtype=torch.float64, device=device)])
        dist.all_reduce(both)
        total, count = both[0], int(both[1])
    return {"nll_sum": float(total), "tokens": count, "ppl": math.exp(float(total) / count)}


def _nll_sum(raw, streams: torch.Tensor, seq_len: int, stride: int | None) -> tuple[torch.Tensor, int]:
    """Summed NLL (float64) and count of every target ``streams[:, 1:]`` of ``(B, N)`` streams."""
    total, count = torch.zeros((), dtype=torch.float64, device=streams.device), 0
    if stride is None or stride >= seq_len:
        state = None
        for x, y in iter_batches(streams, seq_len):
            nll, state = raw.nll(x, y, state, reduction="sum")
            total += nll.double()
            count += y.numel()
        return total, count
    last, done = streams.shape[1] - 1, 0  # targets are streams[:, 1 .. last]; 0 .. done-1 are scored
    while done < last:
        end = min(done + (seq_len if done == 0 else stride), last)
        start = max(0, end - seq_len)
        h = raw.hidden(streams[:, start:end])[0][:, done - start :]  # the window, read for its new targets only
        targets = streams[:, done + 1 : end + 1]
        total += raw.head.nll(h.reshape(-1, h.shape[-1]), targets.reshape(-1)).double().sum()  # the head: new ones only
        count += targets.numel()
        done = end
    return total, count
