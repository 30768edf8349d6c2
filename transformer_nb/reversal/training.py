"""Training the reversal model (001 §19.9–19.10): the loss, the optimizer, the batches, and the cache.

``train`` runs the package's one training loop (``transformer_nb.train.train``) with the
reversal task's pieces: batches from a ``Recipe``, the label-smoothed cross-entropy, Adam with
the warm-up schedule, gradient clipping, exact-match evaluations on a held-out set
(``forced_match``: greedy decoding's exact match from one teacher-forced pass) and an early stop at
a target exact match. ``run`` makes one run for the trained-model cache (``cache.load_or_train``,
``cache.load_or_train_many``), which stores the weights with their history.

Devices: the model trains where it lives (or on ``device``); batches are drawn on the CPU and
moved there; the held-out set is moved there once.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb import cache
from transformer_nb.core.utils import as_int
from transformer_nb.env import get_device
from transformer_nb.reversal.data import PAD, Batch, collate, make_pairs, random_batch, sequence_codes
from transformer_nb.reversal.decoding import forced_match, model_device
from transformer_nb.reversal.recipes import Recipe, build_model, warmup_factor
from transformer_nb.train import train as run_training

#: Notebook 09's run of ``IMPROVED`` (the lecture, notebook 14, loads the same model): evaluated on
#: ``heldout_set(N_EVAL)`` every ``EVAL_EVERY`` steps, stopped at ``TARGET`` exact match.
N_EVAL, EVAL_EVERY, TARGET = 1000, 25, 0.999
WORKERS = 2  # cache.load_or_train_many: runs trained at once on the CPU, one process and one thread each


def loss_fn(logits: torch.Tensor, tgt_out: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean cross-entropy over real target tokens: ``logits (B, T, V)``, ``tgt_out (B, T)``; PAD ignored."""
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


def batches(recipe: Recipe, generator: torch.Generator, exclude: Batch | None = None, device=None):
    """The recipe's endless stream of training batches on ``device``, never holding a sequence of ``exclude``.

    ``data="fixed"``: ``n_train`` pairs made once and cycled in order; ``"fresh"``: a new random
    batch each step.
    """
    if not isinstance(recipe, Recipe):
        raise TypeError(f"recipe must be a reversal Recipe, got {type(recipe).__name__}")
    device = torch.device(device or "cpu")
    if recipe.data == "fixed":
        held = None if exclude is None else {tuple(r[r != PAD].tolist()) for r in exclude.src.cpu()}
        pairs = make_pairs(recipe.n_train, generator=generator, exclude=held)
        size = recipe.batch_size
        return itertools.cycle([collate(pairs[i : i + size], device) for i in range(0, len(pairs), size)])
    codes = None if exclude is None else sequence_codes(exclude.src.cpu())
    return (
        random_batch(recipe.batch_size, generator=generator, exclude=codes, device=device) for _ in itertools.count()
    )


def train(
    model: nn.Module,
    recipe: Recipe,
    eval_batch: Batch | None = None,
    eval_every: int = 100,
    target: float | None = None,
    seed: int = 0,
    live=None,
    device=None,
) -> dict:
    """Train ``model`` with ``recipe`` on ``device`` (default: where the model is); return the history.

    Every ``eval_every`` steps (and at the end) record the exact match of greedy decoding on
    ``eval_batch`` (``forced_match``); stop once it reaches ``target``. Training data never contains
    a sequence of ``eval_batch``. ``live``: a ``plotting.LiveLoss`` (or None: no bar).
    History: ``transformer_nb.train.train``'s (``loss``, ``lr``, ``grad_norm`` before clipping per step;
    ``eval_step``, ``eval_train_seconds``, ``exact_match``, ``forced_token_accuracy`` per evaluation;
    ``train_seconds`` counts the optimisation steps only, ``eval_seconds`` the evaluations), plus
    ``step`` (1, 2, ...) and ``reached`` (the target was reached).
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
    opt, sched = make_optimizer(model, recipe)
    hist = run_training(
        model,
        lambda m, b: loss_fn(
            m(b.src, keep=b.src_keep, tgt=b.tgt_in, tgt_keep=b.tgt_keep)[0], b.tgt_out, recipe.label_smoothing
        ),
        batches(recipe, torch.Generator().manual_seed(seed), eval_batch, device),
        opt,
        sched,
        steps=recipe.steps,
        clip=recipe.clip if recipe.clip else math.inf,
        log_every=25,
        evaluate=None if eval_batch is None else lambda m, _: forced_match(m, eval_batch),
        eval_every=eval_every,
        stop=(lambda r: r["exact_match"] >= target) if target is not None else None,
        live=live if live is not None else False,
        bar=live is not None,
    )
    hist.update(step=list(range(1, hist["steps"] + 1)), reached=hist.pop("stopped"))
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
):
    """One run of the recipe for ``cache.load_or_train`` / ``cache.load_or_train_many``: ``(cache name, fresh
    seeded model on device, config, train_fn)``.

    ``seed``, ``eval_every`` and ``target`` are ``train``'s. ``device``: default ``env.get_device()``; the model
    is on it whatever the cache does (``eval_batch`` may live anywhere). ``live``: a ``LiveLoss``, or a function
    returning one (called only if training happens). The history (losses, exact-match curve, seconds) is
    stored with the weights, so a re-run can redraw it.
    """
    if not isinstance(recipe, Recipe):
        raise TypeError(f"recipe must be a reversal Recipe (e.g. rv.IMPROVED), got {type(recipe).__name__}")
    device = get_device() if device is None else torch.device(device)
    eval_batch = None if eval_batch is None else eval_batch.to(device)
    model = build_model(recipe.model, recipe.init, seed=seed, device=device)
    config = {
        "recipe": asdict(recipe),  # JSON-able: the trained-model cache key
        "seed": seed,
        "eval_every": eval_every,
        "target": target,
        "eval_set": None if eval_batch is None else int(sequence_codes(eval_batch.src.cpu()).sum() % 1_000_003),
    }

    def train_fn(m):
        bar = live() if callable(live) else live  # a factory: only draw a bar when training
        try:
            return train(m, recipe, eval_batch, eval_every, target, seed, bar, device)
        finally:
            if bar is not None and bar is not live:
                bar.close()

    return cache.cache_name(f"reversal_{recipe.name}", config), model, config, train_fn
