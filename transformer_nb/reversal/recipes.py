"""The reversal task's model and training recipes (001 §19.8.2, §19.9.3, §19.10.3, §19.10.5).

- ``MODEL`` / ``build_model``: the task's ``TransformerConfig`` and the package's ``Transformer`` built from
  it, seeded, with the text's or PyTorch's initialisation.
- ``paper_lr`` / ``warmup_factor``: the warm-up schedule, as the text writes it and as a
  ``LambdaLR`` factor.
- ``Recipe``: how to train. ``TEXT_RECIPE`` is the text as written, ``IMPROVED`` what this
  companion uses; ``LADDER`` goes from one to the other a change at a time, ``ABLATIONS`` undo one
  change of ``IMPROVED`` each (notebook 09 measures all of them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
import torch.nn as nn

from transformer_nb.core.checks import check_config
from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.transformer import Transformer
from transformer_nb.core.utils import as_int
from transformer_nb.env import get_device
from transformer_nb.reversal.data import MAX_LEN, PAD, VOCAB_SIZE

INITS = ("default", "xavier", "xavier_embeddings")


def _check_number(name: str, value, low: float, high: float = math.inf, low_open: bool = True) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not (ok and (value > low if low_open else value >= low) and value < high):
        raise ValueError(f"{name} must be a finite number in {'(' if low_open else '['}{low}, {high}), got {value!r}")


# The task's encoder-decoder (001 §19.8.2): the original's embeddings, ``VOCAB_SIZE`` words on each side in two
# tables, scaled by sqrt(d_model), sinusoidal positions, a zero ``PAD`` row; a full output layer with a bias.
MODEL = TransformerConfig(
    name="reversal",
    arch="encoder-decoder",
    d_model=64,
    n_heads=4,
    n_layers=2,
    d_ff=256,
    activation="relu",
    norm_first=True,
    vocab=VOCAB_SIZE,
    positions="sinusoidal",
    max_len=64,
    share_embeddings=False,
    scale_embeddings=True,
    pad_id=PAD,
    tie_output=False,
    output_bias=True,
)


def check_model(cfg) -> TransformerConfig:
    """``cfg`` must be the task's model, ``MODEL`` or a copy of it (``MODEL.with_(d_ff=64)``); return it."""
    check_config(cfg)
    task = {k: getattr(MODEL, k) for k in ("arch", "vocab", "tgt_vocab", "pad_id")}
    if {k: getattr(cfg, k) for k in task} != task:
        raise ValueError(f"the reversal task's model needs {task}; make it from rv.MODEL, e.g. rv.MODEL.with_(d_ff=64)")
    as_int("max_len", cfg.max_len, MAX_LEN + 1)
    return cfg


def build_model(cfg: TransformerConfig = MODEL, init: str = "default", seed: int | None = 0, device=None):
    """The package's ``Transformer`` for the task (``cfg``: ``MODEL`` or a copy), seeded, on ``device``.

    ``init``: ``"default"`` is PyTorch's initialisation (``nn.Embedding``: N(0, 1), ``nn.Linear``:
    Kaiming-uniform); ``"xavier"`` re-initialises every matrix, embeddings included, with Xavier-uniform,
    as the text's ``_init_parameters`` does (001 §19.8.2); ``"xavier_embeddings"`` does so for the two
    embedding tables only. Built on the CPU (the same initial weights on every machine), then moved to
    ``device`` (default: ``env.get_device()``, the device ``setup()`` reports).
    """
    check_model(cfg)
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    device = get_device() if device is None else torch.device(device)
    model = Transformer(cfg)
    # The output layer last, after the stacks (the Transformer makes it first). PyTorch's initialisation below draws,
    # and gradient clipping sums, in this order; float sums depend on their order, so the order is part of the recipe.
    head = model.head
    del model.head
    model.head = head
    if seed is not None:
        torch.manual_seed(seed)
    for m in model.modules():
        if hasattr(m, "reset_parameters"):  # PyTorch's own initialisation of each layer
            m.reset_parameters()
    embeddings = (model.tok, model.tgt_tok)
    if init == "xavier":
        for p in model.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
    elif init == "xavier_embeddings":
        for emb in embeddings:
            nn.init.xavier_uniform_(emb.weight)
    if init != "default":
        with torch.no_grad():  # keep nn.Embedding's contract: the PAD row is zero
            for emb in embeddings:
                emb.weight[emb.padding_idx].zero_()
    return model.to(device)


# --------------------------------------------------------------------------- the schedule


def paper_lr(step: int, d_model: int, warmup: int) -> float:
    """The text's schedule (001 §19.9.3): ``d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)``, step >= 1.

    ``warmup`` must be >= 1 (the formula divides by it; for no warm-up use a constant rate).
    """
    for name, v in (("step", step), ("warmup", warmup)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r} (for no warm-up: warmup_factor(0))")
    as_int("d_model", d_model, 1)
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def warmup_factor(warmup: int):
    """``LambdaLR`` factor for the warm-up schedule, normalised to 1 at the peak.

    ``factor(s) = min(n / warmup, sqrt(warmup / n))`` with ``n = s + 1`` (``LambdaLR`` counts from
    0). With base lr ``(d_model · warmup)^-0.5`` this is exactly :func:`paper_lr` at step ``n``.
    ``warmup = 0`` means a constant factor 1.
    """
    if as_int("warmup", warmup, 0) == 0:
        return lambda s: 1.0
    return lambda s: min((s + 1) / warmup, math.sqrt(warmup / (s + 1)))


# --------------------------------------------------------------------------- recipes


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
    model: TransformerConfig = MODEL
    init: str = "xavier_embeddings"

    def __post_init__(self):
        for name, choices in (("schedule", ("constant", "warmup")), ("data", ("fresh", "fixed")), ("init", INITS)):
            if getattr(self, name) not in choices:
                raise ValueError(f"{name} must be one of {choices}, got {getattr(self, name)!r}")
        for name, low in (("warmup", 0), ("batch_size", 1), ("n_train", 1), ("steps", 1)):
            as_int(name, getattr(self, name), low)
        if len(tuple(self.betas)) != 2:
            raise ValueError(f"betas must be two numbers, got {self.betas!r}")
        for name, value, high, low_open in (
            ("lr", self.lr, math.inf, True),
            ("eps", self.eps, math.inf, True),
            ("clip", 1.0 if self.clip is None else self.clip, math.inf, True),
            ("label_smoothing", self.label_smoothing, 1.0, False),
            *(("betas", b, 1.0, False) for b in self.betas),
        ):
            _check_number(name, value, 0.0, high, low_open)
        check_model(self.model)

    def steps_per_epoch(self) -> int:
        return math.ceil(self.n_train / self.batch_size)


# The text as written (001 §19.10.3, §19.10.5): 2,000 pairs, batches of 64 in a fixed order,
# Adam lr 1e-4 constant (no schedule, no label smoothing), clipping at 1.0, 30 epochs; the
# model: d_model 64, 4 heads, d_ff 256, 2+2 layers, dropout 0.1, GELU, Pre-LN, Xavier init.
TEXT_MODEL = MODEL.with_(dropout=0.1, activation="gelu")
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
    init="xavier",
)
# What this companion uses instead (every change measured in notebook 09).
IMPROVED = Recipe()

# From the text's recipe to the improved one, one change at a time (notebook 09 measures each).
_ladder_lr = replace(TEXT_RECIPE, name="ladder_lr", lr=1e-3)
_ladder_nodrop = replace(_ladder_lr, name="ladder_nodrop", model=TEXT_MODEL.with_(dropout=0.0))
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
    model_changes = {k: changes.pop(k) for k in list(changes) if k in TransformerConfig.__dataclass_fields__}
    return replace(IMPROVED, name=f"abl_{name}", model=IMPROVED.model.with_(**model_changes), **changes)


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
