"""The one training loop: every model in the package trains through ``train`` (nanoGPT's style).

One step is: draw a batch, compute the loss (under bf16 autocast if asked), back-propagate, clip
the gradient norm, step every optimizer, then every ``torch.optim.lr_scheduler``. What differs
between the language model, the reversal task and the block notebook's toy experiments (the
data, the loss, the optimizers, the evaluation) is passed in:

- ``loss_fn(model, batch) -> loss``: a scalar tensor, the mean loss of the batch;
- ``batches``: an iterator of batches (anything ``loss_fn`` understands, already on the device);
- ``evaluate(model, hist) -> dict | None``: called every ``eval_every`` steps (or ``eval_every_s``
  training seconds), at the steps in ``eval_at`` and at the end; its numbers go into the history
  (``None``: skipped this time); ``stop(metrics) -> bool`` ends training early.

On a GPU nothing waits for the device at every step: losses and gradient norms stay in device
buffers and come to the host every ``log_every`` steps (and at evaluations). Under
``torch.distributed`` (DistributedDataParallel) every rank runs this loop; the losses are
averaged across ranks, only rank 0 draws the progress bar, and a wall-clock budget is decided on
rank 0 and broadcast, so every rank runs the same number of steps.

The history is a dict of plain lists and numbers (cacheable with the weights):
``loss``, ``lr``, ``step_seconds`` and (when clipping) ``grad_norm`` per step; ``eval_step``, ``eval_train_seconds`` and
one list per metric that ``evaluate`` returns; ``steps``, ``train_seconds``, ``eval_seconds``,
``stopped`` (``stop`` ended the run).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator

import torch
import torch.distributed as dist
import torch.nn as nn

from transformer_nb.env import check_module
from transformer_nb.plotting import LiveLoss


class Progress:
    """The fraction of the run done, in [0, 1] (steps done / steps, or training seconds / budget).

    ``train`` updates ``value`` after every step, before the schedulers step, so a ``LambdaLR``
    can follow a wall-clock budget: ``LambdaLR(opt, lambda _: factor(progress.value))``.
    """

    def __init__(self):
        self.value = 0.0


def rank_and_world() -> tuple[int, int]:
    """``(rank, world_size)`` of this process: ``(0, 1)`` outside ``torch.distributed``."""
    return (dist.get_rank(), dist.get_world_size()) if dist.is_available() and dist.is_initialized() else (0, 1)


def unwrap(model: nn.Module) -> nn.Module:
    """The model inside a ``DistributedDataParallel`` wrapper (the model itself otherwise)."""
    check_module("model", model)
    return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model


def _check_budget(steps, budget_s) -> None:
    if (steps is None) == (budget_s is None):
        raise ValueError(f"give exactly one of steps= or budget_s=, got steps={steps!r}, budget_s={budget_s!r}")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 0):
        raise ValueError(f"steps must be a non-negative int, got {steps!r}")
    if budget_s is not None and not (isinstance(budget_s, (int, float)) and 0 <= budget_s < math.inf):
        raise ValueError(f"budget_s must be a finite number of seconds >= 0, got {budget_s!r}")


def _as_list(x) -> list:
    return [] if x is None else list(x) if isinstance(x, (list, tuple)) else [x]


def train(
    model: nn.Module,
    loss_fn: Callable,
    batches: Iterable,
    optimizers,
    schedulers=None,
    *,
    steps: int | None = None,
    budget_s: float | None = None,
    clip: float | None = None,
    bf16: bool = False,
    log_every: int = 50,
    evaluate: Callable | None = None,
    eval_every: int | None = None,
    eval_every_s: float | None = None,
    eval_at: Iterable[int] = (),
    stop: Callable | None = None,
    progress: Progress | None = None,
    live: bool | LiveLoss = False,
    bar: bool = True,
    title: str = "training",
    clock: Callable[[], float] = time.perf_counter,
) -> dict:
    """Train ``model`` for ``steps`` optimizer steps or ``budget_s`` seconds of training; return the history.

    ``optimizers`` / ``schedulers``: one or a list. ``clip``: max gradient norm (``math.inf``
    records the norm without clipping). ``bf16``: autocast to bfloat16 on the model's device type.
    ``live``: ``True`` draws a live loss figure in Jupyter (a ``LiveLoss``), or pass your own
    ``LiveLoss``; ``bar=False`` hides the progress bar. ``clock`` measures training time (the
    evaluations are timed separately and never count towards ``budget_s``). Leaves the model in
    eval mode.
    """
    _check_budget(steps, budget_s)
    if isinstance(log_every, bool) or not isinstance(log_every, int) or log_every < 1:
        raise ValueError(f"log_every must be a positive int, got {log_every!r}")
    optimizers, schedulers = _as_list(optimizers), _as_list(schedulers)
    if not optimizers:
        raise ValueError("optimizers is empty: give at least one torch.optim optimizer")
    rank, world = rank_and_world()
    raw = unwrap(model)
    device = next(raw.parameters()).device
    batches: Iterator = iter(batches)
    eval_at = set(eval_at)
    total = steps if steps is not None else max(1, int(budget_s))
    own_live = not isinstance(live, LiveLoss)
    if own_live:
        live = LiveLoss(total=total, title=title, plot=None if live else False, disable=not bar or rank > 0)
    hist = {"loss": [], "lr": [], "grad_norm": [], "step_seconds": [], "eval_step": [], "eval_train_seconds": []}
    hist.update(steps=0, train_seconds=0.0, eval_seconds=0.0, stopped=False)
    losses, norms = torch.zeros(2, log_every, device=device)  # this log period's losses and norms, on the device
    pending = 0  # steps whose loss is still on the device
    last_eval_s = 0.0

    def flush() -> None:
        """Bring the pending losses to the host (averaged over ranks) and show their mean."""
        nonlocal pending
        if pending:
            both = torch.stack((losses[:pending], norms[:pending]))
            if world > 1:
                dist.all_reduce(both, op=dist.ReduceOp.AVG)
            loss_list, norm_list = both.tolist()
            hist["loss"] += loss_list
            if clip is not None:
                hist["grad_norm"] += norm_list
            live.log(loss=sum(loss_list) / pending)
            pending = 0

    def run_eval(step: int) -> bool:
        """Evaluate (all ranks); record the metrics; return whether to stop."""
        nonlocal last_eval_s
        flush()
        t0 = clock()
        metrics = evaluate(raw, hist)
        model.train()
        hist["eval_seconds"] += clock() - t0
        last_eval_s = hist["train_seconds"]
        if metrics is None:
            return False
        hist["eval_step"].append(step)
        hist["eval_train_seconds"].append(hist["train_seconds"])
        for k, v in metrics.items():
            hist.setdefault(k, []).append(float(v))
        live.log(**metrics)
        return bool(stop is not None and stop(metrics))

    def agree(*flags: bool) -> list[bool]:
        """Rank 0's flags, on every rank (time-based decisions must not differ between ranks)."""
        if world == 1:
            return list(flags)
        t = torch.tensor([float(f) for f in flags], device=device if dist.get_backend() == "nccl" else "cpu")
        dist.broadcast(t, src=0)
        return [bool(f) for f in t.tolist()]

    model.train()
    step = 0
    stopped = evaluate is not None and 0 in eval_at and run_eval(0)
    while not stopped:
        timed = eval_every_s is not None or budget_s is not None
        if timed and (world == 1 or pending == 0):  # under DDP: only at log points
            out_of_time, eval_due = agree(
                budget_s is not None and hist["train_seconds"] >= budget_s,
                eval_every_s is not None and step > 0 and hist["train_seconds"] - last_eval_s >= eval_every_s,
            )
            if out_of_time:
                break
            if eval_due and evaluate is not None and hist["eval_step"][-1:] != [step] and run_eval(step):
                stopped = True
                break
        if steps is not None and step >= steps:
            break
        t0 = clock()
        batch = next(batches)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(model, batch)
        for opt in optimizers:
            opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            norms[pending] = nn.utils.clip_grad_norm_(raw.parameters(), clip)
        for opt in optimizers:
            opt.step()
        losses[pending] = loss.detach()
        hist["lr"].append(optimizers[0].param_groups[0]["lr"])  # the rate this step used
        pending, step = pending + 1, step + 1
        hist["steps"] = step
        hist["step_seconds"].append(clock() - t0)  # host time: on a GPU, until the step is queued
        hist["train_seconds"] += hist["step_seconds"][-1]
        if progress is not None:
            progress.value = min(1.0, step / steps if steps is not None else hist["train_seconds"] / budget_s)
        for sched in schedulers:
            sched.step()  # the rate of the next step
        live.update(1 if steps is not None else max(0, min(total, int(hist["train_seconds"])) - live.step))
        if pending == log_every:
            flush()
        if evaluate is not None and ((eval_every and step % eval_every == 0) or step in eval_at) and run_eval(step):
            stopped = True
    flush()
    hist["stopped"] = stopped
    if evaluate is not None and not stopped and hist["eval_step"][-1:] != [step]:
        run_eval(step)
    if own_live:
        live.close()
    model.eval()
    return hist
