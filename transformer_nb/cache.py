"""A trained-model cache: re-running a notebook loads weights instead of training again.

Files live in ``TNB_CACHE_DIR`` (default ``~/.cache/transformer_nb``), one ``.pt`` per
name. They are loaded with ``torch.load(weights_only=True)``. A cache that is corrupt,
was saved for another configuration, or does not fit the model is reported in one
clear line and the model is retrained; it never crashes the notebook.
"""

import hashlib
import json
import os
import re
from pathlib import Path

import torch


def cache_dir() -> Path:
    """The cache folder (env ``TNB_CACHE_DIR``, else ``~/.cache/transformer_nb``)."""
    return Path(os.environ.get("TNB_CACHE_DIR") or Path.home() / ".cache" / "transformer_nb")


def cache_path(name: str) -> Path:
    return cache_dir() / f"{name}.pt"


def _canonical(config: dict) -> str:
    return json.dumps(config, sort_keys=True, default=str)


def cache_name(prefix: str, config: dict) -> str:
    """``<prefix>_<8 hex digits of config>``: one stable cache name per configuration.

    ``prefix`` names the family (e.g. ``"wikitext2_transformer"``, ``"reversal_base"``): letters,
    digits, ``_``, ``-`` and ``.``. ``config`` is a JSON-able dict; its key order does not matter.
    """
    if not isinstance(prefix, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", prefix) or prefix.startswith("."):
        raise ValueError(f"prefix must be a non-empty name of letters, digits, '_', '-' or '.', got {prefix!r}")
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict, got {type(config).__name__}")
    return f"{prefix}_{hashlib.sha256(_canonical(config).encode()).hexdigest()[:8]}"


def save(name: str, model: torch.nn.Module, config: dict, extra: dict | None = None) -> Path:
    """Save ``model``'s weights with ``config`` (a JSON-able dict) and ``extra`` (tensors, numbers, lists)."""
    path = cache_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"config": _canonical(config), "state_dict": model.state_dict(), "extra": extra or {}}, tmp)
    os.replace(tmp, path)  # never leave a half-written cache behind
    return path


def load(name: str, model: torch.nn.Module, config: dict):
    """Load cached weights into ``model``. Returns ``(ok, message, extra)``; never raises on a bad cache."""
    path = cache_path(name)
    if not path.exists():
        return False, f"no cache at {path}", {}
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # corrupt, truncated, or not a torch file
        return False, f"cache {path} is corrupt ({type(err).__name__}); retraining", {}
    if not isinstance(blob, dict) or not {"config", "state_dict"} <= set(blob):
        return False, f"cache {path} has an unexpected layout; retraining", {}
    if blob["config"] != _canonical(config):
        return False, f"cache {path} was trained with another configuration; retraining", {}
    try:
        model.load_state_dict(blob["state_dict"])
    except (RuntimeError, KeyError) as err:
        first = str(err).strip().splitlines()[0][:120]
        return False, f"cache {path} does not fit this model ({first}); retraining", {}
    return True, f"loaded trained weights from {path}", blob.get("extra", {})


def load_or_train(name: str, model: torch.nn.Module, config: dict, train_fn, retrain: bool = False):
    """Load ``model`` from the cache, or call ``train_fn(model) -> extra`` and save the result.

    ``extra`` (e.g. the loss history) is stored with the weights and returned, so a
    re-run can redraw its training curves. Returns ``(extra, trained_now)``.
    """
    if retrain or os.environ.get("TNB_RETRAIN") == "1":
        print("retraining (asked for)")
    else:
        ok, msg, extra = load(name, model, config)
        print(msg)
        if ok:
            return extra, False
    extra = train_fn(model) or {}
    save(name, model, config, extra)
    return extra, True
