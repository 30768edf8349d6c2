"""Training the reversal model (001 §19.9–19.10): the loss, the optimizer, the batches, and the cache.

``train`` runs the package's one training loop (``transformer_nb.train.train``) with the
reversal task's pieces: batches from a ``Recipe``, the label-smoothed cross-entropy, Adam with
the warm-up schedule, gradient clipping, exact-match evaluations on a held-out set
(``forced_match``: greedy decoding's exact match from one teacher-forced pass) and an early stop at
a target exact match. ``run`` makes one run for the trained-model cache (``cache.load_or_train``,
``cache.load_or_train_many``), which stores the weights with their history.

Devices: the model trains where it lives (or on ``device``); batches are drawn on the CPU and
moved there; the held-out set is moved there once. On a CUDA device the batches are padded to
one fixed width and the model's forward and backward run as CUDA graphs (``_GraphedForward``;
``CUDA_GRAPHS = False`` turns them off), Adam is fused, and nothing waits for the GPU inside a
step: it is the same recipe, without the launch overhead of hundreds of tiny kernels per step.
"""

from __future__ import annotations

import itertools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb import cache
from transformer_nb.core.utils import as_int
from transformer_nb.env import get_device
from transformer_nb.reversal.data import MAX_LEN, PAD, Batch, collate, make_pairs, random_batch, sequence_codes
from transformer_nb.reversal.decoding import forced_match, model_device
from transformer_nb.reversal.recipes import Recipe, build_model, warmup_factor
from transformer_nb.train import train as run_training

CUDA_GRAPHS = True  # on a CUDA device, run the training forward and backward as CUDA graphs (False: eager)
#: Notebook 09's run of ``IMPROVED`` (the lecture, notebook 14, loads the same model): evaluated on
#: ``heldout_set(N_EVAL)`` every ``EVAL_EVERY`` steps, stopped at ``TARGET`` exact match.
N_EVAL, EVAL_EVERY, TARGET = 1000, 25, 0.999
WORKERS = 2  # cache.load_or_train_many: runs trained at once on the CPU, one process and one thread each


def loss_fn(logits: torch.Tensor, tgt_out: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean cross-entropy over real target tokens: ``logits (B, T, V)``, ``tgt_out (B, T)``; PAD ignored."""
    if logits.dim() != 3 or tgt_out.shape != logits.shape[:2]:
        raise ValueError(
            f"logits must be (B, T, V) and tgt_out (B, T), got {tuple(logits.shape)}, {tuple(tgt_out.shape)}"
        )
    return F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD, label_smoothing=label_smoothing)


def make_optimizer(model: nn.Module, recipe: Recipe):
    """Adam (β = 0.9, 0.98, ε = 1e-9 as in the paper) and its ``LambdaLR`` schedule.

    One fused kernel on a GPU; on the CPU the multi-tensor (``foreach``) update, which gives the
    same numbers as PyTorch's CPU default, one parameter at a time, only faster.
    """
    kernel = {"fused": True} if model_device(model).type == "cuda" else {"foreach": True}
    opt = torch.optim.Adam(model.parameters(), lr=recipe.lr, betas=tuple(recipe.betas), eps=recipe.eps, **kernel)
    factor = warmup_factor(recipe.warmup if recipe.schedule == "warmup" else 0)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)


def batches(recipe: Recipe, generator: torch.Generator, exclude: Batch | None = None, device=None, width=None):
    """The recipe's endless stream of training batches on ``device``, never holding a sequence of ``exclude``.

    ``data="fixed"``: ``n_train`` pairs made once and cycled in order; ``"fresh"``: a new random
    batch each step. ``width``: pad every batch to this many source positions (a fixed shape;
    the padding is masked, so the losses do not change). Checked at the call.
    """
    if not isinstance(recipe, Recipe):
        raise TypeError(f"recipe must be a reversal Recipe, got {type(recipe).__name__}")
    return _batches(recipe, generator, exclude, torch.device(device or "cpu"), width)


def _batches(recipe: Recipe, generator: torch.Generator, exclude: Batch | None, device: torch.device, width):

    def place(b: Batch) -> Batch:
        b = b if width is None else b.pad_to(width)
        if device.type != "cuda":
            return b.to(device)
        # from pinned memory, without waiting: a plain .to() would wait for the GPU to finish every queued step
        return Batch(*(t.pin_memory().to(device, non_blocking=True) for t in b))

    if recipe.data == "fixed":
        held = None if exclude is None else {tuple(r[r != PAD].tolist()) for r in exclude.src.cpu()}
        pairs = make_pairs(recipe.n_train, generator=generator, exclude=held)
        fixed = [place(collate(pairs[i : i + recipe.batch_size])) for i in range(0, len(pairs), recipe.batch_size)]
        yield from itertools.cycle(fixed)
    codes = None if exclude is None else sequence_codes(exclude.src.cpu())
    while True:
        yield place(random_batch(recipe.batch_size, generator=generator, exclude=codes))


class _Logits(nn.Module):
    """``(src, tgt_in, src_keep, tgt_keep) -> logits (B, T, V)``: the model's forward with positional tensors,
    the form ``torch.cuda.make_graphed_callables`` captures."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, src, tgt_in, src_keep, tgt_keep):
        return self.model(src, keep=src_keep, tgt=tgt_in, tgt_keep=tgt_keep)[0]


class _GraphedForward:
    """The training forward ``_Logits(model)`` as two CUDA graphs (forward and backward).

    Captured for the shape of ``sample``; a batch of another shape runs the ordinary forward.
    ``close()`` drops the graphs. If capture fails, it says why once and every
    batch runs eagerly.
    """

    def __init__(self, model: nn.Module, sample: Batch):
        self.model, self.logits, self.shape = model, _Logits(model), tuple(sample.src.shape)
        self.eager = self.logits.forward
        args = (sample.src, sample.tgt_in, sample.src_keep, sample.tgt_keep)
        try:
            torch.cuda.make_graphed_callables(self.logits, args)  # replaces self.logits.forward
            self.graphed = self.logits.forward
        except Exception as err:
            self.close()
            self.graphed = None
            print(f"CUDA graphs unavailable ({type(err).__name__}: {str(err).splitlines()[0][:120]}); training eagerly")

    def __call__(self, b: Batch) -> torch.Tensor:
        fast = self.graphed is not None and self.model.training and tuple(b.src.shape) == self.shape
        return (self.graphed if fast else self.eager)(b.src, b.tgt_in, b.src_keep, b.tgt_keep)

    def close(self) -> None:
        self.logits.__dict__.pop("forward", None)


def _use_graphs(device: torch.device) -> bool:
    return CUDA_GRAPHS and device.type == "cuda"


def _evaluator(eval_batch, eval_every, eval_below, last_step, snapshot_at, out):
    """The loop's ``evaluate`` callback: exact match on ``eval_batch`` when due; weights kept at ``snapshot_at``."""

    def ev(model, hist):
        step = hist["steps"]
        if step == snapshot_at:
            out["snapshot"] = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
        recent = hist["loss"][-eval_every:]
        quiet = eval_below is not None and sum(recent) / max(1, len(recent)) >= eval_below
        due = (step % eval_every == 0 and not quiet) or step in out["eval_at"] or step == last_step
        if eval_batch is None or step == 0 or not due:
            return None
        return forced_match(model, eval_batch)

    return ev


def train(
    model: nn.Module,
    recipe: Recipe,
    eval_batch: Batch | None = None,
    eval_every: int = 100,
    target: float | None = None,
    seed: int = 0,
    live=None,
    device=None,
    eval_at=None,
    snapshot_at: int | None = None,
    eval_below: float | None = None,
) -> dict:
    """Train ``model`` with ``recipe`` on ``device`` (default: where the model is); return the history.

    Every ``eval_every`` steps (or at the steps in ``eval_at``, and at the end) record the exact
    match of greedy decoding on ``eval_batch`` (``forced_match``); stop once it reaches ``target``.
    Training data never contains a sequence of ``eval_batch``. ``live``: a ``plotting.LiveLoss``
    (or None: no bar).
    ``train_seconds`` counts the optimisation steps only, ``eval_seconds`` the evaluations.
    ``grad_norm`` is the gradient norm before clipping. ``snapshot_at``: keep a CPU copy of the
    weights after that step in ``snapshot``. ``eval_below``: skip the periodic evaluation while the
    mean training loss of the last ``eval_every`` steps is above this (the final one always runs).
    History: plain lists per step (``step``, ``loss``, ``lr``, ``grad_norm``) and per evaluation
    (``eval_step``, ``eval_train_seconds``, ``exact_match``, ``forced_token_accuracy``), ``steps``,
    ``train_seconds``, ``eval_seconds``, ``reached`` (the target was reached), ``snapshot``.
    """
    if not isinstance(recipe, Recipe):
        raise TypeError(f"recipe must be a reversal Recipe, got {type(recipe).__name__}")
    as_int("eval_every", eval_every, 1)
    if target is not None and not (isinstance(target, (int, float)) and 0.0 <= target <= 1.0):
        raise ValueError(f"target is an exact-match rate in [0, 1] (or None), got {target!r}")
    if eval_batch is not None and not isinstance(eval_batch, Batch):
        raise TypeError(f"eval_batch must be a reversal Batch (e.g. heldout_set()), got {type(eval_batch).__name__}")
    device = model_device(model) if device is None else torch.device(device)
    model.to(device)
    eval_batch = None if eval_batch is None else eval_batch.to(device)
    graphs = _use_graphs(device)
    stream = batches(recipe, torch.Generator().manual_seed(seed), eval_batch, device, MAX_LEN if graphs else None)
    forward = None
    if graphs:
        first = next(stream)
        model.train()
        forward = _GraphedForward(model, first)
        stream = itertools.chain([first], stream)

    def step_loss(m: nn.Module, b: Batch) -> torch.Tensor:
        logits = forward(b) if forward is not None else m(b.src, keep=b.src_keep, tgt=b.tgt_in, tgt_keep=b.tgt_keep)[0]
        return loss_fn(logits, b.tgt_out, recipe.label_smoothing)

    opt, sched = make_optimizer(model, recipe)
    extra = {"snapshot": None, "eval_at": set(eval_at or [])}
    ev = _evaluator(eval_batch, eval_every, eval_below, recipe.steps, snapshot_at, extra)
    try:
        hist = run_training(
            model,
            step_loss,
            stream,
            opt,
            sched,
            steps=recipe.steps,
            clip=recipe.clip if recipe.clip else math.inf,
            log_every=25,
            evaluate=ev,
            eval_every=eval_every,
            eval_at=sorted(extra["eval_at"] | ({snapshot_at} if snapshot_at else set())),
            stop=(lambda r: r["exact_match"] >= target) if target is not None else None,
            live=live if live is not None else False,
            bar=live is not None,
        )
    finally:
        if forward is not None:
            forward.close()
    hist.update(step=list(range(1, hist["steps"] + 1)), reached=hist.pop("stopped"), snapshot=extra["snapshot"])
    return hist


def run(
    recipe: Recipe,
    eval_batch: Batch | None = None,
    *,
    device=None,
    live=None,
    seed: int = 0,
    eval_every: int = 100,
    target: float | None = None,
    eval_at=None,
    name: str | None = None,
    snapshot_at: int | None = None,
):
    """One run of the recipe for ``cache.load_or_train`` / ``cache.load_or_train_many``: ``(cache name, fresh
    seeded model on device, config, train_fn)``.

    ``seed``, ``eval_every``, ``target``, ``eval_at`` and ``snapshot_at`` are ``train``'s; ``name`` the cache
    file's (default: one per configuration). ``device``: default ``env.get_device()``; the model is on it
    whatever the cache does (``eval_batch`` may live anywhere). ``live``: a ``LiveLoss``, or a function
    returning one (called only if training happens). The history (losses, exact-match curve, seconds) is
    stored with the weights, so a re-run can redraw it.
    """
    if not isinstance(recipe, Recipe):
        raise TypeError(f"recipe must be a reversal Recipe (e.g. rv.IMPROVED), got {type(recipe).__name__}")
    device = get_device() if device is None else torch.device(device)
    eval_batch = None if eval_batch is None else eval_batch.to(device)
    model = build_model(recipe.model, recipe.init, seed=seed, device=device)
    config = {
        "recipe": recipe.config(),
        "seed": seed,
        "eval_every": eval_every,
        "target": target,
        "eval_at": sorted(eval_at or []),
        "snapshot_at": snapshot_at,
        "eval_set": None if eval_batch is None else int(sequence_codes(eval_batch.src.cpu()).sum() % 1_000_003),
    }

    def train_fn(m):
        bar = live() if callable(live) else live  # a factory: only draw a bar when training
        try:
            return train(m, recipe, eval_batch, eval_every, target, seed, bar, device, eval_at, snapshot_at)
        finally:
            if bar is not None and bar is not live:
                bar.close()

    return name or cache.cache_name(f"reversal_{recipe.name}", config), model, config, train_fn
