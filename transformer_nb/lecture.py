"""Lecture mode: every widget of the companion ready to drive (notebook 14), with the trained models of
notebooks 09, 10 and 12 loaded from the package's cache, never trained during a lecture.

    make lecture                                 # python -m transformer_nb.lecture: train once what is missing
    python -m transformer_nb.lecture --check     # say what is cached; train nothing

The models are the ones the notebooks train, in the same cache entries (``TNB_CACHE_DIR``), for the
active profile (``TNB_PROFILE``: full by default; quick on a slow laptop, or in CI, where notebooks
09, 10 and 12 have just filled the cache):

- 09: ``reversal.IMPROVED``, evaluated on ``heldout_set(N_EVAL)`` every ``EVAL_EVERY`` steps, stopped at
  ``TARGET`` exact match (``reversal.load_or_train``);
- 10: the Transformer recipe, run as ``LM_RUN[profile]`` says (``lm_recipe.load_or_train``);
- 12, when the capstone is there: its reference model (``exercises.capstone_train``).

Notebooks 09 and 10 train with these constants, so the lecture loads exactly what they stored (a
test compares them with the notebooks). Only the standard library and the package's infrastructure
are imported here at first; each model's modules are imported when it is asked for.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time

from transformer_nb.cache import cache_dir  # noqa: F401  (the notebook says where the models came from)
from transformer_nb.utils import get_device, profile

N_EVAL = 1000  # 09: held-out sequences the improved recipe is evaluated on
EVAL_EVERY = 25  # 09: steps between evaluations
TARGET = 0.999  # 09: training stops at this exact match
#: 10: the Transformer recipe's run per profile: optimiser steps (None: lm_recipe.FULL_STEPS) and its validation
#: points (words each, steps between them; None: about 20 per run), as notebook 10 passes them to load_or_train.
LM_RUN = {
    "quick": {"steps": 150, "eval_tokens": 2_000, "eval_every": 50},
    "full": {"steps": None, "eval_tokens": 20_000, "eval_every": None},
}
MAKE = "make lecture"
NAMES = ("reversal", "lm", "capstone")
# make lecture with an empty cache, full profile, 2 idle CPU cores (2026-11-23): 9 s, 264 s, 170 s (500 capstone steps
# then); on a slower machine state the same day the lm took 419 s, and the capstone's 600 steps now train in 136 s
# (plus 20 s of validation)
COLD_MINUTES = {"reversal": 1, "lm": 7, "capstone": 3}


class NotPrepared(LookupError):
    """A model the lecture needs is not in the cache (the message says what to run)."""


def _missing(name: str, why: str) -> NotPrepared:
    why = why.removesuffix("; retraining.").removesuffix("; retraining")  # the cache's words; nothing retrains here
    minutes = COLD_MINUTES[name] if profile() == "full" else 1
    return NotPrepared(
        f"no trained {name} model for the {profile()} profile: {why}. Run `{MAKE}` once (it trains what is "
        f"missing, about {minutes} min for this one on 2 CPU cores), then run this cell again."
    )


def lm_run() -> dict:
    """Notebook 10's ``load_or_train`` arguments for the Transformer in the active profile."""
    from transformer_nb import lm_recipe

    run = dict(LM_RUN[profile()])
    run["steps"] = run["steps"] or lm_recipe.FULL_STEPS
    return run


def reversal_model(device=None, train: bool = False):
    """Notebook 09's trained encoder-decoder (eval mode, on ``device``), from the cache; ``train=True``
    trains and caches it when it is missing (``make lecture``), else a missing cache is ``NotPrepared``."""
    from transformer_nb import reversal as rv

    device = get_device() if device is None else device
    out = io.StringIO()

    def refuse():  # load_or_train calls its live factory only when it is about to train
        raise _missing("reversal", out.getvalue().strip().splitlines()[-1] if out.getvalue().strip() else "no cache")

    with contextlib.redirect_stdout(sys.stdout if train else out):
        model, _, _ = rv.load_or_train(
            rv.IMPROVED,
            rv.heldout_set(N_EVAL),
            eval_every=EVAL_EVERY,
            target=TARGET,
            device=device,
            live=None if train else refuse,
        )
    return model.eval()


def _wikitext():
    from transformer_nb.wikitext import load_wikitext2

    return load_wikitext2()


def language_model(device=None, train: bool = False, data=None):
    """Notebook 10's trained Transformer and the vocabulary: ``(model, vocab)``, from the cache (or trained
    with ``train=True``); a missing cache is ``NotPrepared``."""
    import torch

    from transformer_nb import cache, lm_recipe
    from transformer_nb.output_head import frequency_ranks

    device = torch.device(get_device() if device is None else device)
    data, run = data or _wikitext(), lm_run()
    if train:
        model, _, _ = lm_recipe.load_or_train("transformer", data, live=False, device=device, **run)
        return model.eval(), data.vocab
    # the model, configuration and cache name that lm_recipe.load_or_train uses for this run (tested equal)
    vocab_size = len(data.vocab)
    model = lm_recipe.build_model("transformer", vocab_size, frequency_ranks(data.train, vocab_size)).to(device)
    tcfg = lm_recipe.recipe_config("transformer", device, seed=0, **run)
    config = lm_recipe.cache_config("transformer", tcfg, vocab_size)
    ok, message, _ = cache.load(cache.cache_name("wikitext2_transformer", config), model, config)
    if not ok:
        raise _missing("lm", message)
    return model.eval(), data.vocab


def capstone_model(device=None, train: bool = False, data=None):
    """The capstone's (12) trained reference model as the package's ``TransformerLM``, and the vocabulary:
    ``(model, vocab)``; None when the capstone is not part of this checkout."""
    try:
        from transformer_nb.exercises import capstone_train as ct
        from transformer_nb.exercises.solutions import capstone as sol
    except ImportError:
        return None
    device = get_device() if device is None else device
    data = data or _wikitext()
    vocab_size = len(data.vocab)
    if train:
        model, _, _ = ct.load_or_train(sol.LanguageModel, data, "reference", live=False, device=device)
    else:
        model, message = ct.load_trained(vocab_size)
        if model is None:
            raise _missing("capstone", message)
    return ct.to_package(model.to(device), vocab_size).eval(), data.vocab


LOADERS = {"reversal": reversal_model, "lm": language_model, "capstone": capstone_model}


def cached(name: str, device=None):
    """What the lecture notebook calls: the model ``name`` (see ``NAMES``) from the cache, or None after
    printing why and that ``make lecture`` prepares it. Never trains."""
    if name not in LOADERS:
        raise ValueError(f"name must be one of {NAMES}, got {name!r}")
    try:
        return LOADERS[name](device)
    except (NotPrepared, FileNotFoundError) as err:  # no cache, or no WikiText-2 here: the other widgets still work
        print(f"⚠ {err}")
        return None


def models(device=None) -> dict:
    """Every cached model, for ``widgets.catalog.build``: ``{"reversal": model, "lm": (model, vocab), ...}``;
    ``NotPrepared`` names the first one missing."""
    out = {name: LOADERS[name](device) for name in NAMES}
    return {k: v for k, v in out.items() if v is not None}


def prepare(device=None, names=NAMES) -> dict:
    """Train and cache every model the lecture needs that is not cached yet (``make lecture``);
    ``{name: seconds}`` it took (a few seconds each when the cache was warm)."""
    data, took = None, {}
    for name in names:
        t0 = time.perf_counter()
        print(f"lecture: {name} ...", flush=True)
        if name in ("lm", "capstone"):
            data = data or _wikitext()
            result = LOADERS[name](device, train=True, data=data)
        else:
            result = LOADERS[name](device, train=True)
        took[name] = time.perf_counter() - t0
        state = "not part of this checkout" if result is None else f"ready ({took[name]:.0f} s)"
        print(f"lecture: {name} {state}", flush=True)
    return took


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="say what is cached; train nothing")
    parser.add_argument("names", nargs="*", help=f"some of {', '.join(NAMES)} (default: all)")
    args = parser.parse_args(argv)
    names = tuple(args.names) or NAMES
    if set(names) - set(NAMES):
        parser.error(f"unknown model(s) {sorted(set(names) - set(NAMES))}: choose from {', '.join(NAMES)}")
    print(f"lecture: profile {profile()}, device {get_device()}")
    if not args.check:
        took = prepare(names=names)
        print(f"lecture: every model cached in {sum(took.values()):.0f} s; open notebooks/14_lecture.ipynb")
        return 0
    missing = 0
    for name in names:
        try:
            state = "cached" if LOADERS[name]() is not None else "not part of this checkout"
        except (NotPrepared, FileNotFoundError) as err:
            state, missing = f"MISSING: {err}", missing + 1
        print(f"lecture: {name}: {state}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
