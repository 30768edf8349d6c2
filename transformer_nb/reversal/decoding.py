"""Decoding and scoring the reversal model (001 §19.10.4; 000 §8.6.3; 004 §13.3).

- ``greedy_decode``: batched greedy decoding (encode once, append the arg-max at the last position);
- ``forced_match``: the same exact match from one teacher-forced forward pass (training's evaluations);
- ``score`` / ``evaluate``: exact match (every label up to and including EOS), per-token accuracy,
  the first wrong position; ``failure_table`` and ``length_sweep`` say where the failures are;
- ``attention_maps`` / ``anti_diagonal_share``: the cross- and self-attention weights, and how
  much of the cross-attention follows the anti-diagonal that reversal needs.

Everything computes on the model's device: the inputs are moved there, and the tensors returned
live there (``failure_table``'s and ``length_sweep``'s results are plain numbers).
"""

from __future__ import annotations

import contextlib
import itertools

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.core.transformer import Transformer
from transformer_nb.core.utils import as_int, plain_tensor
from transformer_nb.probes import record_attention
from transformer_nb.reversal.data import BOS, EOS, MAX_LEN, MIN_LEN, PAD, Batch, check_tokens, random_batch

#: ``length_sweep``'s source lengths: the training lengths, then four that no training source has (notebook 09).
SWEEP_LENGTHS = range(MIN_LEN, MAX_LEN + 5)


def model_device(model: nn.Module) -> torch.device:
    """Where ``model`` computes: the device of its first parameter (or buffer); the CPU if it has neither."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    return next(itertools.chain(model.parameters(), model.buffers()), torch.empty(0)).device


@contextlib.contextmanager
def _evaluating(model: nn.Module):
    """Run the block with ``model`` in eval mode; give it back its mode afterwards (even after an error)."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


@torch.no_grad()
def greedy_decode(model: nn.Module, src: torch.Tensor, max_new: int | None = None) -> torch.Tensor:
    """Batched greedy decoding (001 §19.10.4): ``src (B, S) -> (B, max_new)`` token ids, on the model's device.

    Encode once; start every row from BOS; at each step append the arg-max of the logits at the
    LAST position. A row that has produced EOS gets PAD afterwards. Stops early when every row
    is done (the rest stays PAD). ``max_new`` defaults to ``S + 1`` (a reversal plus EOS).
    ``src`` holds symbols and PAD, right-padded (BOS and EOS belong to the decoder's side only).
    """
    check_tokens(src, "src", allowed="symbols")
    if max_new is not None:
        as_int("max_new", max_new, 1)
    device = model_device(model)
    src = src.to(device)
    src_keep = src != PAD
    b, s = src.shape
    max_new = s + 1 if max_new is None else max_new
    with _evaluating(model):
        memory = model.encode(src, src_keep)
        ys = torch.full((b, 1), BOS, dtype=torch.long, device=device)
        out = torch.full((b, max_new), PAD, dtype=torch.long, device=device)
        done = torch.zeros(b, dtype=torch.bool, device=device)
        for t in range(max_new):
            logits = model.decode(ys, memory, src_keep, ys != PAD)  # (B, t+1, V)
            nxt = logits[:, -1].argmax(-1)
            nxt = torch.where(done, torch.full_like(nxt, PAD), nxt)
            out[:, t] = nxt
            done |= nxt == EOS
            if done.all():
                break
            ys = torch.cat([ys, nxt[:, None]], dim=1)
    return out


def score(pred: torch.Tensor, tgt_out: torch.Tensor) -> dict:
    """Compare predictions ``(B, T')`` with labels ``tgt_out (B, T)`` (symbols, EOS, PAD), on ``pred``'s device.

    A sequence is an exact match when every label up to and including EOS is predicted at its
    position (so a missing, early or late EOS is wrong). Returns ``exact (B,)`` bool,
    ``correct (B, T)`` bool at real label positions, ``first_wrong (B,)`` (-1 if exact), and the
    rates ``exact_match`` and ``token_accuracy`` (over all real label positions, EOS included).
    """
    for name, t in (("pred", pred), ("tgt_out", tgt_out)):
        plain_tensor(name, t)
        check_tokens(t, name)
    if pred.shape[0] != tgt_out.shape[0]:
        raise ValueError(f"pred has {pred.shape[0]} rows but tgt_out has {tgt_out.shape[0]}")
    tgt_out = tgt_out.to(pred.device)
    b, t = tgt_out.shape
    real = tgt_out != PAD
    if not bool(real.any()):
        raise ValueError("tgt_out holds no labels (every entry is PAD): there is nothing to score")
    if pred.shape[1] < t:
        pred = F.pad(pred, (0, t - pred.shape[1]), value=PAD)
    pred = pred[:, :t]
    correct = (pred == tgt_out) & real
    wrong = real & ~correct
    exact = ~wrong.any(1)
    first_wrong = torch.where(exact, torch.full((b,), -1, device=pred.device), wrong.float().argmax(1))
    return {
        "exact": exact,
        "correct": correct,
        "first_wrong": first_wrong,
        "exact_match": exact.float().mean().item(),
        "token_accuracy": (correct.sum() / real.sum()).item(),
    }


def evaluate(model: nn.Module, batch: Batch) -> dict:
    """Greedy-decode ``batch.src`` and :func:`score` it. Adds ``pred`` and ``lengths``; ``n`` sequences.

    The batch is moved to the model's device (once); the tensors returned live there.
    """
    if not isinstance(batch, Batch):
        raise TypeError(f"batch must be a reversal Batch, got {type(batch).__name__}")
    batch = batch.to(model_device(model))
    pred = greedy_decode(model, batch.src, max_new=batch.tgt_out.shape[1])
    res = score(pred, batch.tgt_out)
    res.update(pred=pred, lengths=batch.lengths, n=len(batch))
    return res


@torch.no_grad()
def forced_match(model: nn.Module, batch: Batch) -> dict:
    """Exact match of greedy decoding, from one teacher-forced forward pass over ``batch`` (no decoding loop).

    Greedy decoding writes a sequence exactly right iff, fed the right prefix ``tgt_in``, the model's
    arg-max is the label at every position up to EOS: then each step of the loop sees exactly that
    prefix (the decoder is causal). Returns ``exact_match`` (that rate, as :func:`evaluate`'s, up to
    float rounding at arg-max ties) and ``forced_token_accuracy`` (per label, with the right prefix:
    higher than greedy decoding's per-token accuracy, where one mistake shifts the rest).
    """
    if not isinstance(batch, Batch):
        raise TypeError(f"batch must be a reversal Batch, got {type(batch).__name__}")
    batch = batch.to(model_device(model))
    with _evaluating(model):
        pred = model(batch.src, keep=batch.src_keep, tgt=batch.tgt_in, tgt_keep=batch.tgt_keep)[0].argmax(-1)  # (B, T)
    res = score(pred, batch.tgt_out)
    return {"exact_match": res["exact_match"], "forced_token_accuracy": res["token_accuracy"]}


def failure_table(res: dict) -> dict:
    """Where the failures are: ``by_length {L: (n, n_wrong)}`` and ``by_first_wrong {position: count}``
    (position 0 = the first output token; position L = where EOS belongs)."""
    missing = {"lengths", "exact", "first_wrong"} - set(res) if isinstance(res, dict) else None
    if missing is None or missing:
        raise ValueError(f"failure_table needs the dict evaluate() returns; missing {sorted(missing or [])}")
    lengths, exact, first = res["lengths"].cpu(), res["exact"].cpu(), res["first_wrong"].cpu()
    by_length = {int(L): (int((lengths == L).sum()), int(((lengths == L) & ~exact).sum())) for L in lengths.unique()}
    by_first = {int(p): int((first == p).sum()) for p in first[~exact].unique()}
    return {"by_length": by_length, "by_first_wrong": by_first, "n_wrong": int((~exact).sum())}


def length_sweep(model: nn.Module, lengths=SWEEP_LENGTHS, n: int = 500, seed: int = 99) -> dict:
    """Exact match and per-token accuracy at each source length (``n`` random sequences each)."""
    as_int("n", n, 1)
    device, out = model_device(model), {}
    for L in lengths:
        b = random_batch(n, L, L, generator=torch.Generator().manual_seed(seed + L), device=device)
        r = evaluate(model, b)
        out[int(L)] = {
            "exact_match": r["exact_match"],
            "token_accuracy": r["token_accuracy"],
            "pred_len": (r["pred"] != PAD).sum(1).float().sub(1).mean().item(),
        }
    return out


@torch.no_grad()
def attention_maps(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor | None = None) -> dict:
    """Attention weights for ``src (B, S)`` with decoder input ``tgt_in`` (default: BOS + the greedy output).

    Returns ``tgt_in`` and ``cross``: per layer, the cross-attention weights ``(B, h, T, S)``, on the model's
    device. Row t of ``cross``
    is the query that predicts output token t.
    """
    if not isinstance(model, Transformer) or model.decoder is None:
        got = f"a Transformer with arch={model.cfg.arch!r}" if isinstance(model, Transformer) else type(model).__name__
        raise TypeError(f"attention_maps needs an encoder-decoder Transformer, got {got}")
    check_tokens(src, "src", allowed="symbols")
    device = model_device(model)
    src = src.to(device)
    src_keep = src != PAD
    if tgt_in is None:
        pred = greedy_decode(model, src)
        tgt_in = torch.cat([torch.full_like(pred[:, :1], BOS), pred[:, :-1]], 1)
        tgt_in = torch.where(tgt_in == EOS, torch.full_like(tgt_in, PAD), tgt_in)
        tgt_in = tgt_in[:, : int((tgt_in != PAD).sum(1).max())]
    else:
        check_tokens(tgt_in, "tgt_in")
        if tgt_in.shape[0] != src.shape[0]:
            raise ValueError(f"tgt_in has {tgt_in.shape[0]} rows but src has {src.shape[0]}")
        tgt_in = tgt_in.to(device)
    with _evaluating(model), record_attention(model):
        model(src, keep=src_keep, tgt=tgt_in, tgt_keep=tgt_in != PAD)
        maps = {
            "tgt_in": tgt_in,
            "cross": [layer.cross_attn.last_weights for layer in model.decoder.layers],
        }
    return maps


def anti_diagonal_share(cross: torch.Tensor, src_keep: torch.Tensor, tgt_len: torch.Tensor) -> float:
    """Share of output positions t < L whose head-averaged cross-attention peaks at source L-1-t.

    ``cross: (B, h, T, S)``; ``src_keep: (B, S)``; ``tgt_len: (B,)`` the number of symbols L.
    """
    if not isinstance(cross, torch.Tensor) or cross.dim() != 4:
        raise ValueError(f"cross must be (B, h, T, S) attention weights, got {getattr(cross, 'shape', cross)!r}")
    if not cross.is_floating_point() or cross.is_meta:
        raise TypeError(
            f"cross must hold real attention weights (floating point, not meta), got {cross.dtype} on {cross.device}"
        )
    b, _, _, s = cross.shape
    if tuple(src_keep.shape) != (b, s) or tuple(tgt_len.shape) != (b,):
        raise ValueError(
            f"src_keep must be (B, S) = ({b}, {s}) and tgt_len (B,) = ({b},), got "
            f"{tuple(src_keep.shape)} and {tuple(tgt_len.shape)}"
        )
    peak = cross.mean(1).argmax(-1)  # (B, T)
    t = torch.arange(peak.shape[1], device=peak.device)[None, :]
    L = src_keep.to(peak.device).sum(1, keepdim=True)
    real = t < tgt_len.to(peak.device)[:, None]
    if not bool(real.any()):
        raise ValueError("tgt_len is 0 for every row: there is no output position to score")
    return ((peak == (L - 1 - t)) & real).sum().item() / real.sum().item()
