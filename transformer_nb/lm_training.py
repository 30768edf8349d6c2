"""Training a language model on a token stream (000 §8.6.2; 001 §19.13; Jordan et al. 2024, Muon).

``train_lm(model, train_ids, cfg)`` runs the package's one training loop (``train.train``) with:

- batches: random windows of the flat ``(N,)`` stream (every start position once per epoch, in a
  seeded order: ``WindowSampler``), or for the LSTM consecutive windows of ``batch_size``
  parallel streams with the state carried across (``cfg.contiguous``);
- ``make_optimizers``: AdamW, or ``torch.optim.Muon`` for the hidden weight matrices beside AdamW;
- linear warm-up then cosine decay (``_lr_factor`` in a ``LambdaLR``), following the step count or
  the wall-clock budget;
- validation perplexity points (``perplexity.evaluate``) timed apart from training.

Under ``torch.distributed`` every rank reads its own share of each batch (the ranks together read
what one process reads with ``world * batch_size`` windows) and the loop averages the losses.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import torch
import torch.nn as nn

from transformer_nb.core.checks import check_ids, check_language_model
from transformer_nb.core.utils import as_int, as_real
from transformer_nb.perplexity import evaluate
from transformer_nb.train import Progress, rank_and_world, train, unwrap
from transformer_nb.wikitext import batchify

OPTIMIZERS = ("adamw", "muon")


@dataclass
class TrainConfig:
    """How ``train_lm`` trains. Give ``steps`` (reproducible) or ``budget_s`` (wall clock)."""

    steps: int | None = None
    budget_s: float | None = None
    batch_size: int = 32  # windows per optimizer step (all ranks together)
    seq_len: int = 128
    lr: float = 2e-3
    weight_decay: float = 0.1
    warmup: float = 0.05  # fraction of the run spent warming up linearly
    min_lr_frac: float = 0.0  # cosine decays to lr * min_lr_frac
    betas: tuple = (0.9, 0.99)
    optimizer: str = "adamw"  # "muon": Muon for the hidden weight matrices (see make_optimizers)
    adamw_lr: float | None = None  # with "muon": AdamW's peak lr (embeddings, output layer, norms); None: lr
    clip: float = 1.0
    bf16: bool = False
    contiguous: bool = False  # consecutive windows with carried state (LSTM) vs random windows
    eval_every: int | None = None  # steps between validation points (None: ~20 per run)
    eval_tokens: int = 20_000  # validation tokens per point
    eval_stride: int | None = None  # the final scores' sliding windows (``perplexity.evaluate``; not the points)
    eval_batch_size: int = 16  # parallel streams of the evaluation
    seed: int = 0

    def __post_init__(self):
        if (self.steps is None) == (self.budget_s is None):
            raise ValueError(f"give exactly one of steps= or budget_s=, got {self.steps}, {self.budget_s}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.adamw_lr is not None and self.optimizer != "muon":
            raise ValueError("adamw_lr sets the AdamW half of optimizer='muon'; with AdamW alone use lr")
        for name in ("batch_size", "seq_len", "eval_tokens", "eval_batch_size", "steps", "eval_every", "eval_stride"):
            if getattr(self, name) is not None:
                as_int(name, getattr(self, name), 0 if name == "steps" else 1)
        for name in ("budget_s", "lr", "adamw_lr", "weight_decay", "warmup", "min_lr_frac", "clip"):
            if getattr(self, name) is not None and as_real(name, getattr(self, name)) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if not (self.lr > 0 and self.warmup < 1 and self.min_lr_frac <= 1):
            raise ValueError(f"need lr > 0, warmup < 1, min_lr_frac <= 1: {self.lr}, {self.warmup}, {self.min_lr_frac}")


def _lr_factor(progress: float, warmup: float, min_lr_frac: float = 0.0) -> float:
    """Linear warm-up over ``warmup`` of the run, then cosine decay to ``min_lr_frac``; progress in [0, 1]
    (``TrainConfig`` checked the other two)."""
    if progress < warmup:
        return max(progress / warmup, 1e-3)
    q = min(1.0, (progress - warmup) / max(1e-9, 1.0 - warmup))
    return min_lr_frac + (1.0 - min_lr_frac) * 0.5 * (1.0 + math.cos(math.pi * q))


def _param_groups(model: nn.Module, weight_decay: float) -> list:
    """Weight decay on matrices of the blocks/head only; not on embeddings, norms, biases."""
    named = [(p, p.dim() >= 2 and not n.startswith(("tok.", "pos.", "head.tok."))) for n, p in model.named_parameters()]
    decay, no_decay = [p for p, d in named if d], [p for p, d in named if not d]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_adamw(params, **kw) -> torch.optim.AdamW:
    """AdamW with the fused kernel when this torch build has one for the parameters' device
    (measured: 8 ms vs 52 ms per step for 13M parameters on one CPU core), else the default one."""
    try:
        return torch.optim.AdamW(params, fused=True, **kw)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(params, **kw)


def make_optimizers(model: nn.Module, cfg: TrainConfig) -> list:
    """``[AdamW]`` over all parameters, or with ``cfg.optimizer == "muon"`` ``[Muon, AdamW]``.

    ``torch.optim.Muon`` (Jordan et al., 2024) replaces each update of a weight matrix by the nearest
    orthogonal matrix to its momentum (5 Newton-Schulz steps). It is meant for the *hidden* matrices:
    the 2-D weights inside the blocks (or the LSTM and its projection). Embeddings, the output layer,
    norms and biases stay with AdamW. ``adjust_lr_fn="match_rms_adamw"`` scales Muon's update to
    AdamW's size, so both share the weight decay and the schedule. Muon's peak learning rate is
    ``cfg.lr``; AdamW's is ``cfg.adamw_lr`` (``cfg.lr`` when None).
    """
    if not isinstance(model, nn.Module) or not isinstance(cfg, TrainConfig):
        raise TypeError(f"make_optimizers needs an nn.Module and a TrainConfig, got {model!r:.40}, {cfg!r:.40}")
    if cfg.optimizer == "adamw":
        return [make_adamw(_param_groups(model, cfg.weight_decay), lr=cfg.lr, betas=cfg.betas)]
    inside = ("blocks.layers.", "rnn.", "proj.")  # the hidden matrices' names
    hidden = [p for n, p in model.named_parameters() if p.dim() == 2 and n.startswith(inside)]
    if not hidden:
        raise ValueError("Muon needs 2-D weights in blocks.layers.*, rnn.* or proj.*; this model has none")
    ids = {id(p) for p in hidden}
    rest = [
        dict(g, params=[p for p in g["params"] if id(p) not in ids]) for g in _param_groups(model, cfg.weight_decay)
    ]
    return [
        torch.optim.Muon(hidden, lr=cfg.lr, weight_decay=cfg.weight_decay, adjust_lr_fn="match_rms_adamw"),
        make_adamw(rest, lr=cfg.lr if cfg.adamw_lr is None else cfg.adamw_lr, betas=cfg.betas),
    ]


def _window_starts(n: int, seed: int, epoch: int, rank: int = 0, world: int = 1) -> torch.Tensor:
    """``(n // world,)`` int64: this rank's starts of windows for ``epoch``, of ``n`` possible ones.

    The contract of ``torch.utils.data.DistributedSampler(range(n), num_replicas=world, rank=rank,
    shuffle=True, seed=seed, drop_last=True)`` after ``set_epoch(epoch)`` (the same permutation,
    ``seed + epoch``, every rank takes ``rank, rank + world, ...`` of it), kept as one tensor instead of
    a Python list of ``n`` ints.
    """
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch))
    return perm[: n - n % world][rank::world]


def _share(batch_size: int, world: int) -> int:
    if batch_size % world:
        raise ValueError(f"batch_size={batch_size} (all ranks together) must be divisible by the {world} ranks")
    return batch_size // world


def window_batches(ids: torch.Tensor, batch_size: int, seq_len: int, seed: int = 0, device=None):
    """Forever: ``(x, y, fresh=True)`` with ``x, y: (batch_size / world, seq_len)`` on ``device``, y = x shifted by one.

    Windows start anywhere in the flat ``(N,)`` stream; every start is drawn once per epoch
    (``WindowSampler``). Under ``torch.distributed`` rank ``r`` reads windows ``r, r + world, ..``
    of the epoch's order: together the ranks read what one process reads. ``ids`` must hold at least
    ``seq_len + batch_size`` tokens (one start per window of a batch); checked at the call.
    """
    batch_size, seq_len = as_int("batch_size", batch_size, 1), as_int("seq_len", seq_len, 1)
    rank, world = rank_and_world()
    b = _share(batch_size, world)
    if (starts := ids.numel() - seq_len) < batch_size:
        raise ValueError(f"{max(0, starts)} starts of windows of seq_len={seq_len}: fewer than batch_size={batch_size}")
    return _windows(ids, b, seq_len, seed, rank, world, device)


def _windows(ids: torch.Tensor, b: int, seq_len: int, seed: int, rank: int, world: int, device):
    ids, offsets = ids.to(device), torch.arange(seq_len + 1, device=device)
    for epoch in itertools.count():
        starts = _window_starts(ids.numel() - seq_len, seed, epoch, rank, world).to(device)
        for i in range(0, starts.numel() - b + 1, b):
            w = ids[starts[i : i + b, None] + offsets]  # (b, T + 1)
            yield w[:, :-1], w[:, 1:], True


def stream_batches(ids: torch.Tensor, batch_size: int, seq_len: int, device=None):
    """Forever: consecutive ``(x, y, fresh)`` windows of ``batch_size`` parallel streams (``batchify``).

    ``fresh`` is True where the streams start over (a carried state must be dropped). Under
    ``torch.distributed`` rank ``r`` reads its own ``batch_size / world`` of the streams. Checked at the call.
    """
    rank, world = rank_and_world()
    b = _share(batch_size, world)
    streams = batchify(ids, batch_size)[rank * b : (rank + 1) * b].to(device)
    if streams.shape[1] <= seq_len:
        raise ValueError(f"{ids.numel()} tokens in {batch_size} streams do not fill one window of seq_len={seq_len}")
    return _consecutive(streams, seq_len)


def _consecutive(streams: torch.Tensor, seq_len: int):
    while True:
        for pos in range(0, streams.shape[1] - seq_len, seq_len):  # only full windows; then start over
            yield streams[:, pos : pos + seq_len], streams[:, pos + 1 : pos + 1 + seq_len], pos == 0


def train_lm(model: nn.Module, train_ids: torch.Tensor, cfg: TrainConfig, valid_ids: torch.Tensor | None = None,
             live=True, title="training", bar=True, clock=time.perf_counter) -> dict:  # fmt: skip
    """Train ``model`` (a ``LanguageModel``, or one wrapped in ``DistributedDataParallel``) on the flat
    ``(N,)`` stream ``train_ids``; return the history.

    Validation points on the first ``cfg.eval_tokens`` of ``valid_ids`` come every ``cfg.eval_every``
    steps (default: 20 per run; with a budget, every twentieth of it) and are timed apart; they read
    non-overlapping windows (``cfg.eval_stride`` is for the final scores: 4 times the cost at 32 of 128). History:
    ``train.train``'s (``loss`` per step, ...) plus, at the points, ``step``, ``tokens``, ``seconds``,
    ``train_ppl`` (over the steps since the previous point) and ``val_ppl``; and ``tokens_seen``,
    ``tokens_per_s``. ``clock`` measures training time (``time.process_time`` counts CPU seconds).
    """
    raw = unwrap(model)
    check_language_model(raw)
    if not isinstance(cfg, TrainConfig):
        raise TypeError(f"cfg must be a TrainConfig, got {type(cfg).__name__}")
    if not isinstance(train_ids, torch.Tensor) or train_ids.dim() != 1:
        raise ValueError(f"train_ids must be a flat (N,) tensor of ids, got {getattr(train_ids, 'shape', train_ids)}")
    check_ids(train_ids[None], "train_ids", raw.vocab_size)
    torch.manual_seed(cfg.seed)
    device = next(raw.parameters()).device
    opts = make_optimizers(raw, cfg)
    progress = Progress()
    factor = lambda _: _lr_factor(progress.value, cfg.warmup, cfg.min_lr_frac)
    scheds = [torch.optim.lr_scheduler.LambdaLR(o, factor) for o in opts]
    if cfg.contiguous:
        batches = stream_batches(train_ids, cfg.batch_size, cfg.seq_len, device)
    else:
        batches = window_batches(train_ids, cfg.batch_size, cfg.seq_len, cfg.seed, device)
    carried = [None]  # the state (the LSTM's), carried across consecutive windows (updated in place)

    def loss_fn(m, batch):
        x, y, fresh = batch
        if not raw.recurrent:  # the Transformer: every window starts fresh
            return m(x, y)[1]
        if fresh:
            carried[0] = raw.init_state()
        return m(x, y, state=carried[0])[1]

    def validate(m, hist):
        ev = evaluate(m, valid_ids, cfg.seq_len, cfg.eval_batch_size, cfg.eval_tokens, cfg.bf16)  # windows side by side
        return {"val_loss": ev["nll_sum"] / ev["tokens"]}

    every = cfg.eval_every or max(1, (cfg.steps or 10**9) // 20)
    h = train(
        model, loss_fn, batches, opts, scheds, steps=cfg.steps, budget_s=cfg.budget_s, clip=cfg.clip or None,
        bf16=cfg.bf16, log_every=min(every, 50), evaluate=None if valid_ids is None else validate,
        eval_every=every if cfg.steps is not None else None,
        eval_every_s=None if cfg.budget_s is None else cfg.budget_s / 20, progress=progress, live=live, bar=bar,
        title=title, clock=clock,
    )  # fmt: skip
    points, per_step = h["eval_step"], cfg.batch_size * cfg.seq_len
    ends = [0, *points]  # the previous point of each
    h.update(
        step=points,
        tokens=[s * per_step for s in points],
        seconds=h["eval_train_seconds"],
        train_ppl=[math.exp(sum(h["loss"][a:b]) / (b - a)) if b > a else math.nan for a, b in zip(ends, points)],
        val_ppl=[math.exp(v) for v in h.get("val_loss", [])],
        tokens_seen=h["steps"] * per_step,
        tokens_per_s=h["steps"] * per_step / max(h["train_seconds"], 1e-9),
    )
    return h
