"""The toy reversal task (001 §19.9–19.10; 000 §8.6.3; 004 §13.3): an encoder–decoder learns to
reverse short sequences of symbols.

- Data: token ids ``PAD=0, BOS=1, EOS=2``, symbols ``3 .. 3+n_symbols-1``; a source of length
  ``L`` in ``[min_len, max_len]`` and its reverse as the target. ``make_pairs`` is the text's
  list-of-pairs generator, ``random_batch`` a vectorised one that draws a fresh batch each step.
  Both can exclude a held-out set, so evaluation sequences are never trained on.
- ``Batch``: ``src (B, S)``, ``tgt_in (B, T)`` (``BOS y1 .. yL``), ``tgt_out (B, T)``
  (``y1 .. yL EOS``), and the bool padding masks ``src_keep``, ``tgt_keep`` (True = real token).
  ``shift_for_teacher_forcing`` makes ``tgt_in`` / ``tgt_out`` from the bare targets.
- Training: ``Recipe`` (``TEXT_RECIPE`` = the text as written, ``IMPROVED``), ``train`` (Adam,
  ``F.cross_entropy(label_smoothing=...)``, the warm-up schedule through ``LambdaLR``,
  gradient clipping, periodic evaluation, early stop at a target exact match).
- Evaluation: batched ``greedy_decode``, ``evaluate`` (exact match, per-token accuracy, first
  wrong position), ``failure_table``, ``attention_maps`` (cross- and self-attention weights).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass, field, replace
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb import cache
from transformer_nb.models import EncoderDecoder
from transformer_nb.multihead import record_attention

PAD, BOS, EOS = 0, 1, 2
FIRST_SYMBOL = 3
N_SYMBOLS = 10
VOCAB_SIZE = FIRST_SYMBOL + N_SYMBOLS  # 13: 10 symbols + PAD + BOS + EOS
MIN_LEN, MAX_LEN = 3, 8


def _check_lengths(min_len, max_len, n_symbols):
    for name, v in (("min_len", min_len), ("max_len", max_len), ("n_symbols", n_symbols)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if min_len > max_len:
        raise ValueError(f"min_len must be <= max_len, got min_len={min_len}, max_len={max_len}")


# --------------------------------------------------------------------------- data


class Batch(NamedTuple):
    """A padded batch. ``src: (B, S)``, ``tgt_in``/``tgt_out: (B, T)`` with ``T = S + 1`` (one
    position for BOS / EOS), ``src_keep: (B, S)`` and ``tgt_keep: (B, T)`` bool, True at real tokens."""

    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    src_keep: torch.Tensor
    tgt_keep: torch.Tensor

    @property
    def lengths(self) -> torch.Tensor:
        """``(B,)`` source lengths."""
        return self.src_keep.sum(1)

    def __len__(self) -> int:
        return self.src.shape[0]

    def to(self, device) -> Batch:
        return Batch(*(t.to(device) for t in self))


def make_pairs(
    n: int,
    min_len: int = MIN_LEN,
    max_len: int = MAX_LEN,
    n_symbols: int = N_SYMBOLS,
    generator: torch.Generator | None = None,
    exclude=None,
) -> list:
    """The text's generator (001 §19.10.1): ``n`` pairs ``(src, reversed(src))`` as lists of ints.

    Each length is uniform in ``[min_len, max_len]``, each symbol uniform in
    ``[3, 3 + n_symbols)``. ``exclude``: a set of tuples never to produce (redrawn instead).
    """
    _check_lengths(min_len, max_len, n_symbols)
    pairs = []
    while len(pairs) < n:
        length = int(torch.randint(min_len, max_len + 1, (1,), generator=generator))
        src = torch.randint(FIRST_SYMBOL, FIRST_SYMBOL + n_symbols, (length,), generator=generator).tolist()
        if exclude and tuple(src) in exclude:
            continue
        pairs.append((src, src[::-1]))
    return pairs


def shift_for_teacher_forcing(tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Decoder input and labels from right-padded targets ``tgt: (B, L)`` (symbols, then PAD).

    ``tgt_in = BOS y1 .. yL`` and ``tgt_out = y1 .. yL EOS``, both ``(B, L + 1)`` and PAD after:
    the label at position t is the token the decoder must predict having seen ``tgt_in[:, :t+1]``.
    """
    if not isinstance(tgt, torch.Tensor) or tgt.dim() != 2 or tgt.dtype != torch.long:
        what = f"{tgt.dtype} {tuple(tgt.shape)}" if isinstance(tgt, torch.Tensor) else type(tgt).__name__
        raise ValueError(f"tgt must be a (B, L) long tensor of token ids, got {what}")
    keep = tgt != PAD
    if (keep[:, 1:] & ~keep[:, :-1]).any():
        raise ValueError("tgt must be right-padded: a real token follows a PAD in some row")
    b, length = tgt.shape
    lengths = keep.sum(1)
    full = torch.full((b, length + 2), PAD, dtype=torch.long, device=tgt.device)
    full[:, 0] = BOS
    full[:, 1 : length + 1] = tgt
    full[torch.arange(b, device=tgt.device), lengths + 1] = EOS
    tgt_in, tgt_out = full[:, :-1], full[:, 1:]
    # a shorter row's EOS would land in tgt_in too (the text's collate keeps it there; its label is
    # PAD, so it is harmless): we replace it by PAD so that tgt_in is exactly "BOS y1 .. yL".
    return tgt_in.masked_fill(tgt_in == EOS, PAD), tgt_out


def _batch(src: torch.Tensor, tgt: torch.Tensor) -> Batch:
    tgt_in, tgt_out = shift_for_teacher_forcing(tgt)
    return Batch(src, tgt_in, tgt_out, src != PAD, tgt_in != PAD)


def collate(pairs) -> Batch:
    """Pad a list of ``(src, tgt)`` pairs (lists of ints) into a :class:`Batch` (001 §19.10.2)."""
    if not pairs:
        raise ValueError("collate needs at least one (src, tgt) pair")
    src = nn.utils.rnn.pad_sequence(
        [torch.tensor(s, dtype=torch.long) for s, _ in pairs], batch_first=True, padding_value=PAD
    )
    tgt = nn.utils.rnn.pad_sequence(
        [torch.tensor(t, dtype=torch.long) for _, t in pairs], batch_first=True, padding_value=PAD
    )
    return _batch(src, tgt)


def reverse_padded(src: torch.Tensor) -> torch.Tensor:
    """Reverse each right-padded row of ``src: (B, S)`` within its own length; PAD stays at the end."""
    keep = src != PAD
    lengths = keep.sum(1, keepdim=True)
    pos = torch.arange(src.shape[1], device=src.device)[None, :]
    rev = torch.gather(src, 1, (lengths - 1 - pos).clamp(min=0))
    return torch.where(keep, rev, torch.full_like(rev, PAD))


def sequence_codes(src: torch.Tensor) -> torch.Tensor:
    """``(B,)`` int64: one number per right-padded row, equal only for equal sequences (any padding width).

    Little-endian base-``VOCAB_SIZE`` digits; PAD = 0 adds nothing. Exact up to 16 tokens.
    """
    if src.shape[1] > 16:
        raise ValueError(f"sequence_codes is exact for at most 16 tokens, got width {src.shape[1]}")
    powers = VOCAB_SIZE ** torch.arange(src.shape[1], dtype=torch.long, device=src.device)
    return (src.long() * powers).sum(1)


def _draw(n, min_len, max_len, n_symbols, generator) -> torch.Tensor:
    """``(n, max_len)`` right-padded random sources."""
    lengths = torch.randint(min_len, max_len + 1, (n,), generator=generator)
    src = torch.randint(FIRST_SYMBOL, FIRST_SYMBOL + n_symbols, (n, max_len), generator=generator)
    src[torch.arange(max_len)[None, :] >= lengths[:, None]] = PAD
    return src


def random_batch(
    batch_size: int,
    min_len: int = MIN_LEN,
    max_len: int = MAX_LEN,
    n_symbols: int = N_SYMBOLS,
    generator: torch.Generator | None = None,
    exclude: torch.Tensor | None = None,
) -> Batch:
    """A fresh random batch, drawn with tensor ops (no Python loop over sequences).

    ``exclude``: ``sequence_codes`` of held-out sequences; rows that hit one are redrawn.
    """
    _check_lengths(min_len, max_len, n_symbols)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    src = _draw(batch_size, min_len, max_len, n_symbols, generator)
    if exclude is not None and exclude.numel():
        hit = torch.isin(sequence_codes(src), exclude)
        while hit.any():  # rare: redraw the rows that hit a held-out sequence
            src[hit] = _draw(int(hit.sum()), min_len, max_len, n_symbols, generator)
            hit = torch.isin(sequence_codes(src), exclude)
    src = src[:, : int((src != PAD).sum(1).max())]  # trim to the longest row
    return _batch(src, reverse_padded(src))


def heldout_set(n: int = 1000, seed: int = 1234, min_len: int = MIN_LEN, max_len: int = MAX_LEN) -> Batch:
    """The fixed evaluation set: ``n`` sequences from their own generator (training excludes them)."""
    return random_batch(n, min_len, max_len, generator=torch.Generator().manual_seed(seed))


# --------------------------------------------------------------------------- model

INITS = ("default", "xavier", "xavier_embeddings")


@dataclass(frozen=True)
class ModelConfig:
    """An ``EncoderDecoder`` for the task. ``init``: ``"default"`` keeps PyTorch's initialisation
    (``nn.Embedding``: N(0, 1)); ``"xavier"`` re-initialises every matrix, embeddings included, with
    Xavier-uniform, as the text's ``_init_parameters`` does (001 §19.8.2); ``"xavier_embeddings"``
    does so for the two embedding tables only."""

    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 256
    dropout: float = 0.0
    activation: str = "relu"
    norm_first: bool = True
    init: str = "default"
    max_len: int = 64

    def __post_init__(self):
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")


def build_model(cfg: ModelConfig = ModelConfig(), seed: int | None = 0) -> EncoderDecoder:
    """The package's ``EncoderDecoder`` (vocabulary ``VOCAB_SIZE`` on both sides), seeded."""
    if seed is not None:
        torch.manual_seed(seed)
    model = EncoderDecoder(
        VOCAB_SIZE,
        VOCAB_SIZE,
        cfg.d_model,
        cfg.n_heads,
        cfg.n_layers,
        cfg.n_layers,
        cfg.d_ff,
        cfg.dropout,
        cfg.max_len,
        cfg.norm_first,
        PAD,
        cfg.activation,
    )
    embeddings = (model.src_embed.tok, model.tgt_embed.tok)
    if cfg.init == "xavier":
        for p in model.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
    elif cfg.init == "xavier_embeddings":
        for emb in embeddings:
            nn.init.xavier_uniform_(emb.weight)
    if cfg.init != "default":
        with torch.no_grad():  # keep nn.Embedding's contract: the PAD row is zero
            for emb in embeddings:
                emb.weight[emb.padding_idx].zero_()
    return model


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# --------------------------------------------------------------------------- the recipe


def paper_lr(step: int, d_model: int, warmup: int) -> float:
    """The text's schedule (001 §19.9.3): ``d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)``, step >= 1."""
    if step < 1:
        raise ValueError(f"the schedule is defined for step >= 1, got {step}")
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def warmup_factor(warmup: int):
    """``LambdaLR`` factor for the warm-up schedule, normalised to 1 at the peak.

    ``factor(s) = min(n / warmup, sqrt(warmup / n))`` with ``n = s + 1`` (``LambdaLR`` counts from
    0). With base lr ``(d_model · warmup)^-0.5`` this is exactly :func:`paper_lr` at step ``n``.
    ``warmup = 0`` means a constant factor 1.
    """
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a non-negative integer number of steps, got {warmup!r}")
    if warmup == 0:
        return lambda s: 1.0
    return lambda s: min((s + 1) / warmup, math.sqrt(warmup / (s + 1)))


@dataclass(frozen=True)
class Recipe:
    """How to train. ``lr`` is the peak learning rate; ``schedule`` is ``"constant"`` or ``"warmup"``
    (linear warm-up over ``warmup`` steps, then ∝ 1/sqrt(step)). ``data="fixed"``: ``n_train`` pairs
    made once and cycled in order, ``steps`` counting batches (the text's epochs); ``data="fresh"``:
    a new random batch every step."""

    name: str = "improved"
    lr: float = 2e-3
    schedule: str = "warmup"
    warmup: int = 100
    batch_size: int = 128
    data: str = "fresh"
    n_train: int = 2000
    steps: int = 2000
    label_smoothing: float = 0.1
    clip: float | None = 1.0
    betas: tuple = (0.9, 0.98)
    eps: float = 1e-9
    model: ModelConfig = field(default_factory=ModelConfig)

    def __post_init__(self):
        if self.schedule not in ("constant", "warmup"):
            raise ValueError(f"schedule must be 'constant' or 'warmup', got {self.schedule!r}")
        if self.data not in ("fresh", "fixed"):
            raise ValueError(f"data must be 'fresh' or 'fixed', got {self.data!r}")

    def steps_per_epoch(self) -> int:
        return math.ceil(self.n_train / self.batch_size)

    def config(self) -> dict:
        """A JSON-able description (the trained-model cache key)."""
        return asdict(self)


# The text as written (001 §19.10.3, §19.10.5): 2,000 pairs, batches of 64 in a fixed order,
# Adam lr 1e-4 constant (no schedule, no label smoothing), clipping at 1.0, 30 epochs; the
# model: d_model 64, 4 heads, d_ff 256, 2+2 layers, dropout 0.1, GELU, Pre-LN, Xavier init.
TEXT_MODEL = ModelConfig(dropout=0.1, activation="gelu", init="xavier")
TEXT_RECIPE = Recipe(
    name="text",
    lr=1e-4,
    schedule="constant",
    warmup=0,
    batch_size=64,
    data="fixed",
    n_train=2000,
    steps=30 * 32,
    label_smoothing=0.0,
    clip=1.0,
    model=TEXT_MODEL,
)
# What this companion uses instead (every change measured in notebook 09).
IMPROVED = Recipe(lr=2e-3, model=ModelConfig(init="xavier_embeddings"))

# From the text's recipe to the improved one, one change at a time (notebook 09 measures each).
_ladder_lr = replace(TEXT_RECIPE, name="ladder_lr", lr=1e-3)
_ladder_nodrop = replace(_ladder_lr, name="ladder_nodrop", model=replace(TEXT_MODEL, dropout=0.0))
_ladder_fresh = replace(_ladder_nodrop, name="ladder_fresh", data="fresh")
_ladder_b128 = replace(_ladder_fresh, name="ladder_batch", batch_size=128)
_ladder_warm = replace(_ladder_b128, name="ladder_warmup", lr=2e-3, schedule="warmup", warmup=100)
_ladder_ls = replace(_ladder_warm, name="ladder_ls", label_smoothing=0.1)
LADDER = [
    ("the text as written", TEXT_RECIPE),
    ("+ lr 1e-3 instead of 1e-4", _ladder_lr),
    ("+ no dropout", _ladder_nodrop),
    ("+ a fresh random batch every step", _ladder_fresh),
    ("+ batch 128 instead of 64", _ladder_b128),
    ("+ warm-up (100 steps, peak lr 2e-3)", _ladder_warm),
    ("+ label smoothing 0.1", _ladder_ls),
    ("+ Xavier on embeddings only, ReLU (= improved)", IMPROVED),
]


# The improved recipe with one thing changed back.
def _abl(name, **changes):
    model_changes = {k: changes.pop(k) for k in list(changes) if k in ModelConfig.__dataclass_fields__}
    return replace(IMPROVED, name=f"abl_{name}", model=replace(IMPROVED.model, **model_changes), **changes)


ABLATIONS = [
    ("constant lr (no warm-up)", _abl("constant", schedule="constant")),
    ("peak lr 1e-3", _abl("lr1e-3", lr=1e-3)),
    ("fixed 2,000 pairs", _abl("fixed", data="fixed")),
    ("batch 64", _abl("b64", batch_size=64)),
    ("dropout 0.1", _abl("dropout", dropout=0.1)),
    ("no label smoothing", _abl("ls0", label_smoothing=0.0)),
    ("no gradient clipping", _abl("noclip", clip=None)),
    ("Post-LN", _abl("postln", norm_first=False)),
    ("Xavier on every matrix (the text)", _abl("xavier", init="xavier")),
    ("PyTorch's default init", _abl("default_init", init="default")),
]


def loss_fn(logits: torch.Tensor, tgt_out: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean cross-entropy over real target tokens: ``logits (B, T, V)``, ``tgt_out (B, T)``; PAD ignored."""
    return F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD, label_smoothing=label_smoothing)


def make_optimizer(model: nn.Module, recipe: Recipe):
    """Adam (β = 0.9, 0.98, ε = 1e-9 as in the paper) and its ``LambdaLR`` schedule."""
    opt = torch.optim.Adam(model.parameters(), lr=recipe.lr, betas=tuple(recipe.betas), eps=recipe.eps)
    factor = warmup_factor(recipe.warmup if recipe.schedule == "warmup" else 0)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)


def _fixed_batches(recipe: Recipe, generator, exclude_set):
    pairs = make_pairs(recipe.n_train, generator=generator, exclude=exclude_set)
    batches = [collate(pairs[i : i + recipe.batch_size]) for i in range(0, len(pairs), recipe.batch_size)]
    while True:
        yield from batches


def _fresh_batches(recipe: Recipe, generator, exclude_codes):
    while True:
        yield random_batch(recipe.batch_size, generator=generator, exclude=exclude_codes)


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
    """Train ``model`` with ``recipe``; return the history (plain lists, cacheable).

    Every ``eval_every`` steps (or at the steps in ``eval_at``) greedy-decode ``eval_batch`` and
    record exact match; stop once it reaches ``target``. Training data never contains a sequence
    of ``eval_batch``. ``live``: a ``plotting.LiveLoss`` (or None). ``train_seconds`` counts the
    optimisation steps only, ``eval_seconds`` the evaluations. ``grad_norm`` is the gradient norm
    before clipping. ``snapshot_at``: keep a copy of the weights after that step in ``snapshot``.
    ``eval_below``: skip the periodic evaluation while the mean training loss of the last
    ``eval_every`` steps is above this (saves decoding time early on; the benchmark uses it).
    """
    device = device or next(model.parameters()).device
    gen = torch.Generator().manual_seed(seed)
    exclude_codes = sequence_codes(eval_batch.src.cpu()) if eval_batch is not None else None
    if recipe.data == "fixed":
        exclude_set = None
        if eval_batch is not None:
            exclude_set = {tuple(r[r != PAD].tolist()) for r in eval_batch.src.cpu()}
        batches = _fixed_batches(recipe, gen, exclude_set)
    else:
        batches = _fresh_batches(recipe, gen, exclude_codes)
    opt, sched = make_optimizer(model, recipe)
    eval_at = set(eval_at or [])
    hist = {
        "step": [],
        "loss": [],
        "lr": [],
        "grad_norm": [],
        "snapshot": None,
        "eval_step": [],
        "eval_train_seconds": [],
        "exact_match": [],
        "token_accuracy": [],
        "train_seconds": 0.0,
        "eval_seconds": 0.0,
        "steps": 0,
        "reached": False,
    }
    for step in range(1, recipe.steps + 1):
        t0 = time.perf_counter()
        model.train()
        b = next(batches).to(device)
        logits = model(b.src, b.tgt_in, b.src_keep, b.tgt_keep)
        loss = loss_fn(logits, b.tgt_out, recipe.label_smoothing)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.clip if recipe.clip else math.inf)
        hist["grad_norm"].append(norm.item())
        hist["lr"].append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
        hist["train_seconds"] += time.perf_counter() - t0
        hist["step"].append(step)
        hist["loss"].append(loss.item())
        hist["steps"] = step
        if step == snapshot_at:
            hist["snapshot"] = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
        if live is not None:
            live.update(loss=hist["loss"][-1])
        due = step % eval_every == 0 and (
            eval_below is None or sum(hist["loss"][-eval_every:]) / eval_every < eval_below
        )
        if eval_batch is not None and (due or step in eval_at or step == recipe.steps):
            t1 = time.perf_counter()
            res = evaluate(model, eval_batch)
            hist["eval_seconds"] += time.perf_counter() - t1
            hist["eval_step"].append(step)
            hist["eval_train_seconds"].append(hist["train_seconds"])
            hist["exact_match"].append(res["exact_match"])
            hist["token_accuracy"].append(res["token_accuracy"])
            if live is not None:
                live.log(exact_match=res["exact_match"])
            if target is not None and res["exact_match"] >= target:
                hist["reached"] = True
                break
    model.eval()
    return hist


def cache_name(recipe: Recipe, config: dict) -> str:
    """``reversal_<recipe name>_<8 hex digits of the config>``: one cache file per configuration."""
    digest = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return f"reversal_{recipe.name}_{digest}"


def load_or_train(
    recipe: Recipe,
    eval_batch: Batch | None = None,
    seed: int = 0,
    eval_every: int = 100,
    target: float | None = None,
    retrain: bool = False,
    live=None,
    device=None,
    eval_at=None,
    name: str | None = None,
    snapshot_at: int | None = None,
):
    """Build the recipe's model and load its trained weights from the cache, or train and save it.

    Uses ``cache.load_or_train`` (``torch.load(weights_only=True)``; a corrupt or mismatched file is
    reported and the model retrained). Returns ``(model, history, trained_now)``; the history
    (losses, exact-match curve, seconds) is stored with the weights, so a re-run can redraw it.
    ``live``: a ``LiveLoss``, or a function returning one (called only if training happens).
    """
    model = build_model(recipe.model, seed=seed)
    if device is not None:
        model = model.to(device)
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

    hist, trained = cache.load_or_train(name or cache_name(recipe, config), model, config, train_fn, retrain)
    model.eval()
    return model, hist, trained


# --------------------------------------------------------------------------- decoding and scoring


@torch.no_grad()
def greedy_decode(
    model: nn.Module, src: torch.Tensor, src_keep: torch.Tensor | None = None, max_new: int | None = None
) -> torch.Tensor:
    """Batched greedy decoding (001 §19.10.4): ``src (B, S) -> (B, max_new)`` token ids.

    Encode once; start every row from BOS; at each step append the arg-max of the logits at the
    LAST position. A row that has produced EOS gets PAD afterwards. Stops early when every row
    is done (the rest stays PAD). ``max_new`` defaults to ``S + 1`` (a reversal plus EOS).
    """
    if not isinstance(src, torch.Tensor) or src.dim() != 2:
        raise ValueError(
            f"src must be a (B, S) tensor of token ids, got "
            f"{tuple(src.shape) if isinstance(src, torch.Tensor) else type(src).__name__}"
        )
    was_training = model.training
    model.eval()
    src_keep = (src != PAD) if src_keep is None else src_keep
    b, s = src.shape
    max_new = s + 1 if max_new is None else max_new
    memory = model.encode(src, src_keep)
    ys = torch.full((b, 1), BOS, dtype=torch.long, device=src.device)
    out = torch.full((b, max_new), PAD, dtype=torch.long, device=src.device)
    done = torch.zeros(b, dtype=torch.bool, device=src.device)
    for t in range(max_new):
        logits = model.decode(ys, memory, src_keep, ys != PAD)  # (B, t+1, V)
        nxt = logits[:, -1].argmax(-1)
        nxt = torch.where(done, torch.full_like(nxt, PAD), nxt)
        out[:, t] = nxt
        done |= nxt == EOS
        if done.all():
            break
        ys = torch.cat([ys, nxt[:, None]], dim=1)
    model.train(was_training)
    return out


def score(pred: torch.Tensor, tgt_out: torch.Tensor) -> dict:
    """Compare predictions ``(B, T')`` with labels ``tgt_out (B, T)`` (symbols, EOS, PAD).

    A sequence is an exact match when every label up to and including EOS is predicted at its
    position (so a missing, early or late EOS is wrong). Returns ``exact (B,)`` bool,
    ``correct (B, T)`` bool at real label positions, ``first_wrong (B,)`` (-1 if exact), and the
    rates ``exact_match`` and ``token_accuracy`` (over all real label positions, EOS included).
    """
    b, t = tgt_out.shape
    if pred.shape[1] < t:
        pred = F.pad(pred, (0, t - pred.shape[1]), value=PAD)
    pred = pred[:, :t]
    real = tgt_out != PAD
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


def evaluate(model: nn.Module, batch: Batch, chunk: int = 1000) -> dict:
    """Greedy-decode ``batch.src`` and :func:`score` it. Adds ``pred`` and ``lengths``; ``n`` sequences."""
    preds = [
        greedy_decode(model, batch.src[i : i + chunk], batch.src_keep[i : i + chunk], max_new=batch.tgt_out.shape[1])
        for i in range(0, len(batch), chunk)
    ]
    pred = torch.cat(preds)
    res = score(pred, batch.tgt_out)
    res.update(pred=pred, lengths=batch.lengths, n=len(batch))
    return res


def failure_table(res: dict) -> dict:
    """Where the failures are: ``by_length {L: (n, n_wrong)}`` and ``by_first_wrong {position: count}``
    (position 0 = the first output token; position L = where EOS belongs)."""
    lengths, exact, first = res["lengths"].cpu(), res["exact"].cpu(), res["first_wrong"].cpu()
    by_length = {int(L): (int((lengths == L).sum()), int(((lengths == L) & ~exact).sum())) for L in lengths.unique()}
    by_first = {int(p): int((first == p).sum()) for p in first[~exact].unique()}
    return {"by_length": by_length, "by_first_wrong": by_first, "n_wrong": int((~exact).sum())}


def length_sweep(model: nn.Module, lengths=range(3, 13), n: int = 500, seed: int = 99) -> dict:
    """Exact match and per-token accuracy at each source length (``n`` random sequences each)."""
    out = {}
    for L in lengths:
        b = random_batch(n, L, L, generator=torch.Generator().manual_seed(seed + L))
        b = b.to(next(model.parameters()).device)
        r = evaluate(model, b)
        out[int(L)] = {
            "exact_match": r["exact_match"],
            "token_accuracy": r["token_accuracy"],
            "pred_len": (r["pred"] != PAD).sum(1).float().sub(1).mean().item(),
        }
    return out


@torch.no_grad()
def attention_maps(model: EncoderDecoder, src: torch.Tensor, tgt_in: torch.Tensor | None = None) -> dict:
    """Attention weights for ``src (B, S)`` with decoder input ``tgt_in`` (default: BOS + the greedy output).

    Returns ``tgt_in`` and, per layer, ``cross`` ``(B, h, T, S)``, ``dec_self`` ``(B, h, T, T)`` and
    ``enc_self`` ``(B, h, S, S)`` (lists over layers). Row t of ``cross`` is the query that
    predicts output token t.
    """
    was_training = model.training
    model.eval()
    src_keep = src != PAD
    if tgt_in is None:
        pred = greedy_decode(model, src, src_keep)
        tgt_in = torch.cat([torch.full_like(pred[:, :1], BOS), pred[:, :-1]], 1)
        tgt_in = torch.where(tgt_in == EOS, torch.full_like(tgt_in, PAD), tgt_in)
        tgt_in = tgt_in[:, : int((tgt_in != PAD).sum(1).max())]
    with record_attention(model):
        model(src, tgt_in, src_keep, tgt_in != PAD)
        maps = {
            "tgt_in": tgt_in,
            "cross": [l.cross_attn.last_weights for l in model.decoder.layers],
            "dec_self": [l.self_attn.last_weights for l in model.decoder.layers],
            "enc_self": [l.self_attn.last_weights for l in model.encoder.layers],
        }
    model.train(was_training)
    return maps


def anti_diagonal_share(cross: torch.Tensor, src_keep: torch.Tensor, tgt_len: torch.Tensor) -> float:
    """Share of output positions t < L whose head-averaged cross-attention peaks at source L-1-t.

    ``cross: (B, h, T, S)``; ``src_keep: (B, S)``; ``tgt_len: (B,)`` the number of symbols L.
    """
    peak = cross.mean(1).argmax(-1)  # (B, T)
    t = torch.arange(peak.shape[1], device=peak.device)[None, :]
    L = src_keep.sum(1, keepdim=True)
    real = t < tgt_len[:, None]
    return ((peak == (L - 1 - t)) & real).sum().item() / real.sum().item()


def parse_tokens(text: str, n_symbols: int = N_SYMBOLS) -> list:
    """``"3 5 7 9 4"`` (spaces or commas) -> ``[3, 5, 7, 9, 4]``; ValueError for anything else."""
    parts = [p for p in text.replace(",", " ").replace("[", " ").replace("]", " ").split() if p]
    if not parts:
        raise ValueError("type at least one token, e.g. 3 5 7 9 4")
    try:
        toks = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"tokens must be integers, got {text!r}") from None
    lo, hi = FIRST_SYMBOL, FIRST_SYMBOL + n_symbols - 1
    bad = [t for t in toks if not lo <= t <= hi]
    if bad:
        raise ValueError(f"symbols are the integers {lo}..{hi} (0, 1, 2 are PAD, BOS, EOS); got {bad}")
    return toks
