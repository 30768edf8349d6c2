"""The WikiText-2 recipes of notebooks 10 and 11, and their cache (000 §8.6.2; 001 §19.13-19.14).

- ``RECIPE_MODEL`` / ``RECIPE_TRAIN``: the Transformer recipe; ``LSTM_MODEL`` / ``LSTM_TRAIN``: the
  LSTM baseline. Every choice was measured against its alternatives (notebook 11).
- ``build_model(kind, V, ranks)`` and ``recipe_config(kind, device=..., steps=...|budget_s=...)``:
  a fresh seeded model and its ``TrainConfig``. On a GPU the recipe reads ``GPU_BATCH_SCALE`` times
  more windows per step (and evaluates more streams at once): the device does the work.
- ``run(kind, data, steps)``: one run for the trained-model cache (``cache.load_or_train``; several,
  those the cache lacks trained side by side: ``cache.load_or_train_many(run, ...)``);
  ``_cached_results(prefix, config, compute)``: the same for results that are not weights, keyed on
  the code that made them: ``compare`` (variants trained for equal seconds) and ``final_perplexities``
  (whole splits) use it, so a warm re-run trains and scores nothing.
"""

from __future__ import annotations

from dataclasses import asdict

import torch
import torch.nn as nn

from transformer_nb import cache
from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.output_head import frequency_ranks
from transformer_nb.core.transformer import Transformer
from transformer_nb.env import get_device
from transformer_nb.lm_training import TrainConfig, train_lm
from transformer_nb.lstm import LSTMLM
from transformer_nb.perplexity import evaluate
from transformer_nb.wikitext import check_wikitext

KINDS = ("transformer", "lstm")
#: The ``TransformerConfig`` fields of each output layer (``output_head.HEADS``), for overriding the recipe's.
HEAD_FIELDS = {
    "full": dict(adaptive=False, tie_output=False, output_bias=True),
    "tied": dict(adaptive=False, tie_output=True, output_bias=True),
    "adaptive": dict(adaptive=True, tie_output=False),
    "adaptive_tied": dict(adaptive=True, tie_output=True),
}

#: The full-data recipe (notebook 10 and ``python -m transformer_nb.bench lm``); ``build_model`` sets its vocabulary.
RECIPE_MODEL = TransformerConfig(
    name="wikitext-2 recipe", d_model=128, n_heads=4, d_ff=512, n_layers=2, positions="rope", max_len=1024,
    activation="gelu", adaptive=True
)  # fmt: skip
#: fp32, not bf16 autocast: on 2 idle cores of an Intel machine (AMX, avx512_bf16) 9.9-11.6k words/s on one
#: thread against 8.9-10.0k, 12.9-13.3k on two against 10.8-12.3k; of an AMD EPYC (avx512_bf16, no AMX) 8.7k
#: against 8.5k on one thread (the recipe's, beside the LSTM), 10.4k against 11.1k on two. Batches of 8 windows:
#: at the same 2.25M words, fully decayed, 16 windows reached a whole-split validation perplexity of 155.1 and 32
#: windows 170.9.
RECIPE_TRAIN = dict(
    batch_size=8, seq_len=128, lr=3e-3, weight_decay=0.1, warmup=0.05, bf16=False, eval_stride=32, optimizer="muon",
    adamw_lr=9e-3
)  # fmt: skip
#: The LSTM baseline: the same embedding width and output head (tied adaptive: 154.4 against
#: 169.4 untied at 360 s), the same optimisers and schedule; consecutive windows with the state
#: carried over (its natural way to read a corpus); fp32, lr 3e-3 (better than 2e-3 at 150 s);
#: AdamW's part at 9e-3 like the Transformer's (182.7 against 195.2 with 3e-3 at 150 s).
LSTM_MODEL = dict(
    d_model=RECIPE_MODEL.d_model, hidden_size=256, n_layers=2, head="adaptive_tied", cutoffs=RECIPE_MODEL.cutoffs,
    div_value=RECIPE_MODEL.div_value, dropout=RECIPE_MODEL.dropout
)  # fmt: skip
LSTM_TRAIN = dict(
    batch_size=16, seq_len=64, lr=3e-3, weight_decay=0.1, warmup=0.05, bf16=False, contiguous=True, optimizer="muon",
    adamw_lr=9e-3
)  # fmt: skip
#: Optimiser steps of the notebook's full profile (450-550 s on one core of the Intel machine, 537-646 s of the AMD
#: EPYC, beside the LSTM on the other).
FULL_STEPS = 4600
#: The LSTM's steps in the full profile: about the Transformer's seconds, side by side on one core each.
LSTM_FULL_STEPS = 4000
#: On a GPU: this many times the windows per step, and this many evaluation streams.
GPU_BATCH_SCALE, GPU_EVAL_BATCH = 8, 64


def _check_kind(kind) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def build_model(kind: str, vocab_size: int, ranks: torch.Tensor | None = None, seed: int = 0, **overrides):
    """A fresh, seeded recipe model (on the CPU): ``kind`` is ``"transformer"`` or ``"lstm"``."""
    _check_kind(kind)
    torch.manual_seed(seed)
    if kind == "transformer":
        return Transformer(RECIPE_MODEL, ranks=ranks, vocab=vocab_size, **overrides)
    return LSTMLM(vocab_size, ranks=ranks, **{**LSTM_MODEL, **overrides})


def recipe_config(kind: str = "transformer", device=None, **overrides) -> TrainConfig:
    """The recipe's ``TrainConfig`` for ``device`` (default: the CPU); pass ``steps=`` or ``budget_s=``
    (and any override). On a CUDA device the batch is ``GPU_BATCH_SCALE`` times larger."""
    _check_kind(kind)
    base = dict(RECIPE_TRAIN if kind == "transformer" else LSTM_TRAIN)
    if torch.device(device or "cpu").type == "cuda":
        base.update(batch_size=base["batch_size"] * GPU_BATCH_SCALE, eval_batch_size=GPU_EVAL_BATCH)
    return TrainConfig(**{**base, **overrides})


def cache_config(kind: str, tcfg: TrainConfig, vocab_size: int) -> dict:
    """What a cached model was trained with; a cache saved under another config is retrained. The vocabulary is
    ``vocab_size``, whatever the recipe's placeholder says."""
    _check_kind(kind)
    model = asdict(RECIPE_MODEL) if kind == "transformer" else LSTM_MODEL
    return {"kind": kind, "model": model, "train": asdict(tcfg), "vocab_size": vocab_size}


#: Notebook 10's run of the Transformer recipe per profile (notebook 14's lecture loads the same model): optimiser
#: steps and the validation points (words each, steps between them; None: about 20 per run).
NOTEBOOK_RUN = {
    "quick": dict(steps=100, eval_tokens=2_000, eval_every=50),
    "full": dict(steps=FULL_STEPS, eval_tokens=20_000, eval_every=None),
}


def run(kind: str, data, steps: int, *, device=None, live=True, seed=0, eval_tokens=20_000, eval_every=None):
    """The recipe model trained for ``steps`` optimiser steps, as one run for ``cache.load_or_train`` /
    ``cache.load_or_train_many``: ``(cache name, fresh seeded model on device, config, train_fn)``.

    ``data`` is a ``wikitext.WikiText2``. The validation points: ``eval_tokens`` (the first words of the
    validation split they read), ``eval_every`` (steps between them; None: 20 per run). ``device``: where the
    model trains (default: ``get_device()``, i.e. ``TNB_DEVICE`` or the best one here); the recipe scales with
    it (``recipe_config``). The history is stored with the weights.
    """
    _check_kind(kind)
    check_wikitext(data)
    device = torch.device(device) if device is not None else get_device()
    vocab_size = len(data.vocab)
    model = build_model(kind, vocab_size, frequency_ranks(data.train, vocab_size), seed=seed).to(device)
    tcfg = recipe_config(kind, device, steps=steps, seed=seed, eval_tokens=eval_tokens, eval_every=eval_every)
    config = cache_config(kind, tcfg, vocab_size)

    def train_fn(m):
        return train_lm(m, data.train, tcfg, valid_ids=data.valid, live=live, bar=live, title=f"{kind} on WikiText-2")

    return cache.cache_name(f"wikitext2_{kind}", config), model, config, train_fn


class _CachedResults(nn.Module):
    """No weights: what ``_cached_results`` saves its numbers with (the cache keys them on this
    module's code and the package modules it uses, so a change to the models recomputes them)."""


def _cached_results(prefix: str, config: dict, compute, retrain: bool = False) -> tuple[dict, bool]:
    """``compute() -> dict`` (numbers, lists, tensors), run once per ``config`` and then read from the
    cache (``cache.load_or_train``: verified, keyed on ``config`` and on the model code). Returns
    ``(results, computed_now)``."""
    return cache.load_or_train(cache.cache_name(prefix, config), _CachedResults(), config, lambda _: compute(), retrain)


def compare(variants: dict, data, budget_s: float, kind="transformer", eval_tokens=10_000, seed=0, retrain=False,
            device=None) -> dict:  # fmt: skip
    """Equal-time comparison: each variant ``{label: (model_overrides, train_overrides)}`` is trained
    from the same seed for ``budget_s`` seconds of training and scored on the first ``eval_tokens``
    validation tokens (non-overlapping windows). Cached as a whole (``_cached_results``): a re-run
    reads the numbers instead of training again. Returns ``{label: history}`` (``train_lm``'s)."""
    check_wikitext(data)
    device = torch.device(device) if device is not None else get_device()
    vocab_size = len(data.vocab)
    ranks = frequency_ranks(data.train, vocab_size)

    def run() -> dict:
        out = {}
        for label, (model_kw, train_kw) in variants.items():
            model = build_model(kind, vocab_size, ranks, seed=seed, **model_kw).to(device)
            tcfg = recipe_config(kind, device, budget_s=budget_s, seed=seed, eval_stride=None, eval_tokens=eval_tokens,
                                 **train_kw)  # fmt: skip
            out[label] = train_lm(model, data.train, tcfg, valid_ids=data.valid, live=False, bar=False, title=label)
        return out

    config = dict(kind=kind, variants=variants, budget_s=budget_s, eval_tokens=eval_tokens, seed=seed)
    config.update(device=device.type, vocab_size=vocab_size)
    return _cached_results(f"wikitext2_compare_{kind}", config, run, retrain)[0]


def final_perplexities(models: dict, data, splits=("valid", "test"), eval_tokens: int | None = None, key=None) -> dict:
    """``{name: {split: perplexity}}`` of trained ``models`` ``{name: (model, TrainConfig)}`` on whole
    splits, each read as its recipe evaluates (the Transformer's sliding windows, the LSTM's carried
    state). Cached under ``key`` (a JSON-able description of the models, e.g. their cache configs):
    scoring whole splits is the slowest step of a warm re-run."""
    check_wikitext(data)

    def score(m, c, s):
        return evaluate(m, data.split(s), c.seq_len, c.eval_batch_size, eval_tokens, c.bf16, c.eval_stride)["ppl"]

    def run() -> dict:
        return {name: {s: score(m, c, s) for s in splits} for name, (m, c) in models.items()}

    config = {"models": key, "splits": list(splits), "eval_tokens": eval_tokens, "vocab_size": len(data.vocab)}
    return _cached_results("wikitext2_final_ppl", config, run)[0]
