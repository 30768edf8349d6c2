"""Lecture mode: every widget of the companion ready to drive (notebook 14), with the trained models of
notebooks 09, 10 and 12 loaded from the package's cache, never trained during a lecture.

    make lecture                                 # python -m transformer_nb.lecture: train what is missing
    python -m transformer_nb.lecture --check     # say which model each widget would show; train nothing
    python -m transformer_nb.lecture --full lm   # notebook 10's full-profile model (about 7 min), not the small one

The models are the ones the notebooks train, in the same cache entries (``TNB_CACHE_DIR``). A widget needs a
small model that answers quickly, not the best perplexity, so ``make lecture`` trains the *quick* profile's
entries (``LECTURE_PROFILE``), whatever ``TNB_PROFILE`` says, and only those that are missing: a model already
cached in either profile is kept. The lecture then shows, for each widget, the best model cached (``PROFILES``:
full, else quick) and says which one:

- 09: ``reversal.IMPROVED``, evaluated on ``heldout_set(N_EVAL)`` every ``EVAL_EVERY`` steps, stopped at
  ``TARGET`` exact match (those of ``reversal``; the same run in both profiles);
- 10: the Transformer recipe, run as ``lm_recipe.NOTEBOOK_RUN[profile]`` says (``lm_recipe.run``);
- 12: the student's own model when notebook 12 trained one (it trains it only once steps 1-5 pass), else its
  reference model (``exercises.capstone_train``).

Notebooks 09 and 10 train with these runs (``reversal.run``, ``lm_recipe.run``) and constants, so the lecture
loads exactly what they stored. Each model's modules are imported when it is asked for.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from unittest import mock

from transformer_nb import cache
from transformer_nb.core.utils import as_device
from transformer_nb.env import get_device, profile

__all__ = ["NotPrepared", "best", "cached", "main", "models", "prepare"]  # what a user or make calls

MAKE = "make lecture"
FETCH_DATA = 'python -c "from transformer_nb.wikitext_files import find_data_dir; find_data_dir()"'  # 13 MB, once
NAMES = ("reversal", "lm", "capstone")
PROFILES = ("full", "quick")  # what the lecture looks for, best first
LECTURE_PROFILE = "quick"  # what `make lecture` trains when neither is cached
#: Minutes to train each model with an empty cache on 2 idle CPU cores: the lecture-sized (quick) entries that
#: `make lecture` trains, and the full ones (`--full`). Full: measured 2026-11-23 (reversal 9 s, lm 264-419 s,
#: capstone 136 s + 20 s of validation). Quick: notebooks 09, 10 and 12, which train them among other things, ran in
#: 37.2, 25.4 and 28.2 s in the quick profile (notebooks/runtimes.json); `make lecture` cold on the shared 2-core
#: machine under load 7-12 (2026-11-26): 446, 323 and 266 s, 1,048 s in all; under load 4-6: 317, 111 and 93 s,
#: 523 s; under load 3-4: 84, 106 and 253 s, 445 s. Quick minutes: the fastest run of each, rounded up
#: (CONTRIBUTING.md, "Lecture mode"). No idle-core measurement yet.
COLD_MINUTES = {"quick": {"reversal": 2, "lm": 2, "capstone": 2}, "full": {"reversal": 1, "lm": 7, "capstone": 3}}
WHAT = dict(reversal="notebook 09's reversal model", lm="notebook 10's language model", capstone="notebook 12's model")


class NotPrepared(LookupError):
    """A model the lecture needs is not in the cache (the message says what to run)."""


def _missing(name: str) -> NotPrepared:
    return NotPrepared(
        f"no trained {name} model in the cache {cache.cache_dir()} (neither the full-profile nor the lecture-sized "
        f"{WHAT[name]}). Run `{MAKE}` once (it trains what is missing, about {COLD_MINUTES[LECTURE_PROFILE][name]} "
        "min for this one on 2 CPU cores, with the same TNB_CACHE_DIR), then run this cell again."
    )


def _from_cache(run, train: bool, name: str):
    """The model of ``run`` (``(name, model, config, train_fn)``) loaded from the cache, or trained with
    ``train=True``; else a missing or refused file is ``NotPrepared``."""
    if train:
        cache.load_or_train(*run)
    elif not cache.load(*run)[0]:
        raise _missing(name)
    return run[1].eval()


def _wikitext():
    from transformer_nb.wikitext import load_wikitext2

    return load_wikitext2()


def reversal_model(device=None, train: bool = False, data=None, prof: str | None = None):
    """Notebook 09's trained encoder-decoder (eval mode, on ``device``) from the cache (``train=True``: trained
    when missing), else ``NotPrepared``. The same run in every profile (``data`` and ``prof`` are ignored)."""
    from transformer_nb import reversal as rv

    run = rv.run(rv.IMPROVED, rv.heldout_set(rv.N_EVAL), eval_every=rv.EVAL_EVERY, target=rv.TARGET, device=device)
    return _from_cache(run, train, "reversal")


def language_model(device=None, train: bool = False, data=None, prof: str | None = None):
    """Notebook 10's trained Transformer of profile ``prof`` (default: the active one) and the vocabulary:
    ``(model, vocab)``, from the cache (or trained with ``train=True``), else ``NotPrepared``."""
    from transformer_nb import lm_recipe

    data = data or _wikitext()
    run = lm_recipe.run("transformer", data, live=False, device=device, **lm_recipe.NOTEBOOK_RUN[prof or profile()])
    return _from_cache(run, train, "lm"), data.vocab


def student_capstone(vocab_size: int, prof: str, device=None):
    """The student's capstone model that notebook 12 trained in profile ``prof``, as the package's ``Transformer``
    (eval mode), or None when there is none or its weights do not fit.

    Notebook 12 trains it only once steps 1-5 pass (step 5 proves that the package's model holding its weights
    computes the same logits), so its weights are read without the student's class: the cache file's checksum,
    configuration and torch release are verified as ``cache.load`` does, not the digest of the student's code."""
    from transformer_nb.exercises import capstone_train as ct
    from transformer_nb.exercises.capstone import student_name
    from transformer_nb.exercises.capstone_lm import package_lm

    name, config = ct._entry("student", vocab_size, prof)
    blob, _ = cache.read(name, config)
    if blob is None:
        return None
    state = blob["state_dict"]
    pkg = package_lm(vocab_size, *ct.sizes(ct.CAPSTONE_MODEL), device=device)
    try:
        pkg.load_state_dict({k: state[student_name(k)] for k in pkg.state_dict()})
    except (KeyError, RuntimeError):  # weights that do not fit: the reference model is shown instead
        return None
    pkg.shows = "your capstone model (notebook 12)"
    return pkg.eval()


def capstone_model(device=None, train: bool = False, data=None, prof: str | None = None):
    """The capstone's (12) trained reference model of profile ``prof`` as the package's ``Transformer``, and the
    vocabulary: ``(model, vocab)``; ``.shows`` on the model says whose it is (``describe``)."""
    from transformer_nb.exercises import capstone_train as ct
    from transformer_nb.exercises.solutions import capstone as sol

    device, prof, data = get_device() if device is None else device, prof or profile(), data or _wikitext()
    with mock.patch.dict(os.environ, {"TNB_PROFILE": prof}):  # the capstone reads its run from the active profile
        if train:
            name, model, config, train_fn = ct.training_run(sol.LanguageModel, data, "reference", False, device)
            cache.load_or_train(name, model, config, train_fn)
        else:
            model, _ = ct.load_trained(len(data.vocab), prof)
    if model is None:
        raise _missing("capstone")
    model = ct.to_package(model.to(device), len(data.vocab))
    model.shows = "notebook 12's reference model"
    return model.eval(), data.vocab


LOADERS = {"reversal": reversal_model, "lm": language_model, "capstone": capstone_model}


def best(name: str, device=None, data=None):
    """``(model, profile)``: the best cached model ``name`` (``PROFILES``: full, else quick; ``"both"`` for 09's
    run, the same in both; for the capstone, the student's own model before the reference); else ``NotPrepared``."""
    if name not in NAMES:
        raise ValueError(f"name must be one of {NAMES}, got {name!r}")
    data = data or (None if name == "reversal" else _wikitext())
    for prof in PROFILES if name == "capstone" else ():  # the student's own model first, whatever the profile
        student = student_capstone(len(data.vocab), prof, device)
        if student is not None:
            return (student, data.vocab), prof
    for prof in PROFILES:
        with contextlib.suppress(NotPrepared):
            return LOADERS[name](device, data=data, prof=prof), "both" if name == "reversal" else prof
    raise _missing(name)


def describe(name: str, model, prof: str) -> str:
    """One line: which model the widget shows, and how to show the full-profile one when it is the small one."""
    model = model[0] if isinstance(model, tuple) else model
    whose = getattr(model, "shows", WHAT[name])
    if name == "reversal":
        return f"showing {whose} (the same run in both profiles)"
    if prof == "full":
        return f"showing {whose}, trained in the full profile"
    better = f"`python -m transformer_nb.lecture --full {name}` (about {COLD_MINUTES['full'][name]} min on 2 CPU cores)"
    if whose.startswith("your"):
        better = "notebook 12 run in the full profile (`make lab`)"
    return f"showing {whose}, lecture-sized (quick profile: a small model, weaker text); for the full one: {better}"


def cached(name: str, device=None):
    """What the lecture notebook calls: the best cached model ``name`` (see ``NAMES``), after printing which one
    it is; or None after printing why and the command that prepares it. Never trains."""
    try:
        model, prof = best(name, device)
    except (NotPrepared, FileNotFoundError) as err:  # no cache or no WikiText-2: the other widgets still work
        fetch = f"\nTo fetch it: `{FETCH_DATA}`, then `{MAKE}`." if isinstance(err, FileNotFoundError) else ""
        print(f"⚠ {err}{fetch}")
        return None
    print(describe(name, model, prof))
    return model


def models(device=None) -> dict:
    """Every cached model, the best of each, for ``widgets.catalog.build``: ``{"reversal": model, "lm": (model,
    vocab), ...}``; ``NotPrepared`` names the first one missing."""
    as_device("device", device)
    data = _wikitext()
    return {name: best(name, device, data=data)[0] for name in NAMES}


def prepare(device=None, names=NAMES, prof: str = LECTURE_PROFILE) -> dict:
    """Train and cache, in profile ``prof``, every model in ``names`` that is not cached in any profile
    (``make lecture``); ``{name: seconds}`` it took. With ``prof="full"`` a model whose full entry is missing is
    trained, whatever else is cached."""
    if set(names) - set(NAMES):
        raise ValueError(f"names must be some of {NAMES}, got {names!r}")
    data, took = None, {}
    for name in names:
        t0 = time.perf_counter()
        print(f"lecture: {name} ...", flush=True)
        data = data or (None if name == "reversal" else _wikitext())
        for p in PROFILES if prof == LECTURE_PROFILE else (prof,):
            with contextlib.suppress(NotPrepared):
                LOADERS[name](device, data=data, prof=p)
                state = "already cached (" + ("the same run in both profiles" if name == "reversal" else f"{p} profile")
                break
        else:
            with mock.patch.dict(os.environ, {"TNB_PROFILE": prof}):
                LOADERS[name](device, train=True, data=data, prof=prof)
            state = f"trained ({prof} profile"
        took[name] = time.perf_counter() - t0
        print(f"lecture: {name} {state}), ready ({took[name]:.0f} s)", flush=True)
    return took


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="say which model each widget would show; train nothing")
    parser.add_argument("--full", action="store_true", help="train the full-profile models (minutes each)")
    parser.add_argument("names", nargs="*", help=f"some of {', '.join(NAMES)} (default: all)")
    args = parser.parse_args(argv)
    names = tuple(args.names) or NAMES
    if set(names) - set(NAMES):
        parser.error(f"unknown model(s) {sorted(set(names) - set(NAMES))}: choose from {', '.join(NAMES)}")
    print(f"lecture: cache {cache.cache_dir()}, device {get_device()}")
    if not args.check:
        t0 = time.perf_counter()
        prepare(names=names, prof="full" if args.full else LECTURE_PROFILE)
        print(f"lecture: every model cached in {time.perf_counter() - t0:.0f} s; open notebooks/14_lecture.ipynb")
        return 0
    missing = [name for name in names if cached(name) is None]  # each prints which model, or why none
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
