"""A trained-model cache: re-running a notebook loads weights instead of training again.

Files live in ``TNB_CACHE_DIR`` (default ``~/.cache/transformer_nb``), one ``<name>.pt`` per run
(``cache_name``: one name per configuration). A file is the sha256 of what follows (64 hex digits),
then a ``torch.save`` dict read with ``torch.load(weights_only=True)`` (a cache file cannot run code)::

    {"config": <canonical JSON>, "state_dict": ..., "extra": ..., "torch": "2.13.0",
     "code": {"transformer_nb.core.transformer": <digest>, ...}}

A load is refused, with one line that names the run and says why, and the model retrained, when the
file is damaged (any flipped bit changes the sha256), was saved for another configuration, by other
code (``code``: the package modules that define the model and the training code, digested as the
notebooks' freshness stamps are, by ``fingerprint``; a class or function typed elsewhere by its own
source) or by another torch release, or does not fit the model. A refused file never touches the
model. A write goes to a temporary file that replaces the cache in one step (``os.replace``), so
concurrent trainers of one name never corrupt each other; an unwritable folder or a full disk is a
warning and the trained model stays in memory. The model stays on the device it was given.

``load_or_train`` loads one run or trains and saves it; ``load_or_train_many`` does it for several, the
missing ones trained side by side in worker processes on the CPU. A run is what a domain module's
``run`` function returns (``reversal.run``, ``lm_recipe.run``): ``(name, fresh model, config, train_fn)``.
"""

import contextlib
import hashlib
import inspect
import io
import json
import multiprocessing
import os
import re
import sys
import tempfile
import textwrap
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch
from torch.utils._pytree import tree_map_only

from transformer_nb.core.utils import as_int
from transformer_nb.env import env_flag, env_path
from transformer_nb.fingerprint import source_digest

PACKAGE = "transformer_nb"
# Infrastructure, not model code: a change to these never invalidates a cache.
NOT_MODEL_CODE = ("cache", "checks", "utils", "source", "companion", "plotting", "widgets", "exercises", "bench")
TORCH = torch.__version__.split("+")[0]  # the release without the build tag: a CPU and a CUDA build agree


def cache_dir() -> Path:
    """The cache folder (env ``TNB_CACHE_DIR``, else ``~/.cache/transformer_nb``)."""
    return env_path("TNB_CACHE_DIR") or Path.home() / ".cache" / "transformer_nb"


def _plain(what: str, name) -> str:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or name.startswith("."):
        raise ValueError(f"{what} must be a non-empty name of letters, digits, '_', '-' or '.', got {name!r}")
    return name


def cache_path(name: str) -> Path:
    """``cache_dir() / f"{name}.pt"``; ``name`` must be a plain file name (see ``cache_name``)."""
    return cache_dir() / f"{_plain('name', name)}.pt"


def _canonical(config: dict) -> str:
    return json.dumps(config, sort_keys=True, default=str)


def cache_name(prefix: str, config: dict) -> str:
    """``<prefix>_<8 hex digits of config>``: one stable name per configuration (a JSON-able dict, any key order)."""
    _plain("prefix", prefix)
    _check(config=config)
    return f"{prefix}_{hashlib.sha256(_canonical(config).encode()).hexdigest()[:8]}"


def _check(model=None, config=None, *train_fn) -> None:
    if model is not None and not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if config is not None and not isinstance(config, dict):
        raise TypeError(f"config must be a dict (JSON-able), got {type(config).__name__}")
    if train_fn and not callable(train_fn[0]):
        raise TypeError(f"train_fn must be callable (model -> extra dict), got {type(train_fn[0]).__name__}")


# --------------------------------------------------------------------------- code digests


def _model_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == PACKAGE and len(parts) > 1 and parts[1] not in NOT_MODEL_CODE


def _home(obj) -> str:
    """The name of ``obj``'s module (of a module: its own)."""
    return str(obj.__name__ if inspect.ismodule(obj) else getattr(obj, "__module__", None) or "?")


def _module_digest(name: str) -> str:
    """The digest of package module ``name`` (imported if need be), or ``"no source"`` (gone or renamed)."""
    try:
        return source_digest(inspect.getsource(sys.modules.get(name) or __import__(name, fromlist=["_"])))
    except Exception:
        return "no source"


def _source_digest(obj) -> str:
    """A function's source digest; a class's that of its methods (a class typed into a notebook cell has no file)."""
    fns = [obj] if inspect.isfunction(obj) else [getattr(v, "__func__", v) for _, v in sorted(vars(obj).items())]
    parts = []
    for f in filter(inspect.isfunction, fns):
        try:
            parts.append(textwrap.dedent(inspect.getsource(f)))
        except (OSError, TypeError):
            parts.append(f.__qualname__)
    return source_digest("\n".join(parts))


def _uses(fn) -> list:
    """The modules, and the functions outside the libraries, that function ``fn`` uses (closure and globals)."""
    found = [fn.__globals__.get(n) for n in fn.__code__.co_names]
    for cell in fn.__closure__ or ():
        with contextlib.suppress(ValueError):  # an empty cell
            found.append(cell.cell_contents)
    libs = (sys.prefix, sys.base_prefix)  # the standard library and installed packages
    ours = [f for f in found if inspect.isfunction(f) and not f.__code__.co_filename.startswith(libs)]
    return [*filter(inspect.ismodule, found), *ours]


def code_digests(model: torch.nn.Module, train_fn=None) -> dict:
    """``{module or object: digest}`` of the code that defines ``model`` and of ``train_fn``, its training code.

    A package module (not infrastructure: ``NOT_MODEL_CODE``) that defines one of its classes, or any package
    module that defines ``train_fn`` or what it calls, is digested whole, with the package modules it uses; a class
    or function defined elsewhere (a test, a notebook cell) by its own source. torch is covered by its release.
    """
    _check(model)
    out, todo = {}, [type(m) for m in model.modules()] + ([train_fn] if train_fn is not None else [])
    while todo:
        obj = todo.pop()
        mod = _home(obj)
        whole = _model_module(mod) or (mod.split(".")[0] == PACKAGE and inspect.isfunction(obj))
        key = mod if whole else f"{mod}.{getattr(obj, '__qualname__', '')}"
        if key in out or mod.split(".")[0] == "torch" or not (whole or inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if whole:  # a package module: whole, with the package modules it uses
            out[key] = _module_digest(mod)
            todo += [v for v in vars(sys.modules[mod]).values() if _model_module(_home(v))]
        else:
            out[key] = _source_digest(obj)
            todo += _uses(obj) if inspect.isfunction(obj) else []
    return dict(sorted(out.items()))


# --------------------------------------------------------------------------- saving and loading


def save(name: str, model: torch.nn.Module, config: dict, extra: dict | None = None, train_fn=None) -> Path | None:
    """Save ``model``'s weights with ``config`` and ``extra`` (tensors, numbers, strings, lists, dicts); ``train_fn``,
    the code that trained it, joins the code digest. Returns the path, or None with a warning when it cannot be
    written (an unwritable folder, a full disk, an ``extra`` that ``weights_only`` cannot read): the model is
    untouched and no temporary file is left. Ctrl-C stays a ``KeyboardInterrupt``."""
    path = cache_path(name)
    _check(model, config, *[train_fn] if train_fn is not None else [])
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    blob = {"config": _canonical(config), "state_dict": state, "extra": extra or {}}
    blob.update(torch=TORCH, code=code_digests(model, train_fn))
    tmp = None
    try:
        torch.save(blob, buf := io.BytesIO())
        torch.load(io.BytesIO(buf.getvalue()), weights_only=True)  # what a load reads, or a warning
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False) as f:
            tmp = Path(f.name)
            f.write(hashlib.sha256(buf.getvalue()).hexdigest().encode() + buf.getvalue())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # atomic: readers see the old file or the new one, never half of one
    except Exception as err:  # an unwritable folder, a full disk, an extra that weights_only cannot read
        why = f"{type(err).__name__}: {str(getattr(err, 'strerror', None) or err).splitlines()[0]}"
        msg = f"could not cache {name} ({why}); the trained model is kept in memory only. Set TNB_CACHE_DIR to a "
        warnings.warn(msg + "writable folder to keep it.", RuntimeWarning, stacklevel=2)
        return None
    finally:
        with contextlib.suppress(OSError, TypeError):  # TypeError: no temporary file was made
            Path(tmp).unlink(missing_ok=True)
    return path


def _refusal(blob: dict, model: torch.nn.Module, train_fn) -> str | None:
    """Why an intact ``blob`` of this configuration must not go into ``model`` (None: it may)."""
    now, stored = code_digests(model, train_fn), blob["code"]  # the model's code, and the training code recorded
    must = code_digests(model).keys() | {k for k in stored if k in now or k.startswith(PACKAGE + ".")}
    now.update({k: _module_digest(k) for k in must - now.keys()})
    changed = sorted(k for k in must if now[k] != stored.get(k))
    if changed:
        return f"was trained with other code ({', '.join(changed)} changed)"
    own, sd = model.state_dict(), blob["state_dict"]
    misfit = sorted(own.keys() ^ sd.keys()) or [k for k, v in own.items() if sd[k].shape != v.shape]
    return f"does not fit this model ({', '.join(misfit[:3])} differ)" if misfit else None


def read(name: str, config: dict) -> tuple[dict | None, str]:
    """``(the stored dict, "")`` of run ``name`` if its file is intact and was saved for ``config`` by this torch
    release, else ``(None, why not)``; the code that made it is not checked (``load`` checks it)."""
    try:
        raw = cache_path(name).read_bytes()
    except OSError as err:
        return None, "is not cached" if isinstance(err, FileNotFoundError) else f"cannot be read ({err.strerror})"
    if hashlib.sha256(raw[64:]).hexdigest().encode() != raw[:64]:
        return None, "is damaged (its contents do not match their sha256) or has an old format"
    blob = torch.load(io.BytesIO(raw[64:]), map_location="cpu", weights_only=True)  # we wrote it: it loads
    if blob["config"] != _canonical(config):
        return None, "was saved for another configuration"
    if blob["torch"] != TORCH:
        return None, f"was saved by torch {blob['torch']}, this is torch {TORCH}"
    return blob, ""


def load(name: str, model: torch.nn.Module, config: dict, train_fn=None):
    """Load cached weights into ``model``. Returns ``(ok, message, extra)``; never raises on a bad file.

    ``train_fn``: the training code the file must have been made by (else the package training code it records is
    checked). A refused file leaves ``model`` untouched. ``extra``'s tensors come back on the CPU.
    """
    _check(model, config, *[train_fn] if train_fn is not None else [])
    blob, why = read(name, config)
    why = why or _refusal(blob, model, train_fn)
    if why:
        return False, f"{name} {why}{'' if why == 'is not cached' else '; retraining'}", {}
    model.load_state_dict(blob["state_dict"])  # copies into the model's own tensors: its device stays
    return True, f"loaded the trained {name} from the cache", blob["extra"]


def train_and_save(name: str, model: torch.nn.Module, config: dict, train_fn) -> dict:
    """``train_fn(model) -> extra`` (e.g. the loss history), then ``save``: returns ``extra``, its tensors on the CPU.

    The model ends on the device it came on; if the cache cannot be written, a warning says so and the trained
    model and ``extra`` are kept."""
    cache_path(name)
    _check(model, config, train_fn)
    device = next(iter(model.state_dict().values()), torch.empty(0)).device
    extra = train_fn(model) or {}
    if not isinstance(extra, dict):
        raise TypeError(f"train_fn must return a dict (or None), got {type(extra).__name__}")
    model.to(device)  # train_fn may have moved it: give it back where it came from
    extra = tree_map_only(torch.Tensor, lambda t: t.detach().cpu(), extra)
    save(name, model, config, extra, train_fn)
    return extra


def _cached(name: str, model: torch.nn.Module, config: dict, train_fn, retrain: bool) -> dict | None:
    """The ``extra`` of a cached run, its weights loaded into ``model``; None (and why, printed) if it must train."""
    if retrain or env_flag("TNB_RETRAIN"):
        print(f"training {name} (retraining asked for)")
        return None
    ok, msg, extra = load(name, model, config, train_fn)
    print(msg)
    return extra if ok else None


def load_or_train(name: str, model: torch.nn.Module, config: dict, train_fn, retrain: bool = False):
    """Load ``model`` from the cache, or train and save it (``train_and_save``). Returns ``(extra, trained_now)``,
    the model in eval mode. A damaged or mismatched file is reported in one line and the model retrained.
    ``retrain=True`` or ``TNB_RETRAIN=1`` (or ``true``, ``yes``, ``on``) forces training."""
    extra = _cached(name, model, config, train_fn, retrain)
    out = (extra, False) if extra is not None else (train_and_save(name, model, config, train_fn), True)
    model.eval()
    return out


def load_or_train_many(make, runs: dict, workers: int = 1, retrain: bool = False, live=None) -> dict:
    """``{key: (model, extra, trained_now)}``: ``load_or_train(*make(**runs[key], live=live), retrain)`` for every
    key, the runs that the cache lacks (all of them with ``retrain``) trained ``workers`` at a time.

    ``make(**kwargs, live) -> (name, fresh model, config, train_fn)`` builds one run (e.g. ``reversal.run``); it
    is a module-level function and ``runs``' values are picklable (a worker process imports and calls it).
    ``live``: how a run trained here shows its progress (a worker passes None: nothing shown). When more than
    one run is missing, ``workers > 1`` and their models are on the CPU, each trains and is saved in its own
    process on one CPU thread (``in_workers``: two small models side by side take little more than the time
    of one) and its weights come back here. Otherwise they train here one after the other, in the order of
    ``runs``, each from a fresh ``make`` (which seeds it). An error in a worker is raised here, naming the run;
    runs that finished stay cached. Models in eval mode.
    """
    as_int("workers", workers, 1)
    if not isinstance(runs, dict):
        raise TypeError(f"runs must be a dict {{key: make's keyword arguments}}, got {type(runs).__name__}")
    made = {k: make(**kw, live=live) for k, kw in runs.items()}
    out = {k: (extra, False) for k, run in made.items() if (extra := _cached(*run, retrain)) is not None}
    todo = [k for k in made if k not in out]
    if workers > 1 and len(todo) > 1 and all(t.device.type == "cpu" for k in todo for t in made[k][1].parameters()):
        for k, (state, extra) in zip(todo, in_workers(_train_in_worker, [(make, runs[k]) for k in todo], workers)):
            made[k][1].load_state_dict(state)
            out[k] = extra, True
    for k in todo:
        if k not in out:
            made[k] = make(**runs[k], live=live)  # fresh: seeded now, as a run trained alone is
            out[k] = train_and_save(*made[k]), True
    return {k: (made[k][1].eval(), *out[k]) for k in made}


def in_workers(fn, jobs, workers: int = 2) -> list:
    """``[fn(*args) for args in jobs]``, ``workers`` calls at a time, each in its own process on one CPU thread.

    ``fn`` must be a module-level function and the arguments picklable. The processes are started with
    ``spawn`` (a fork would copy torch's running threads), so a script that calls this needs Python's
    ``if __name__ == "__main__":`` guard (a notebook does not); an exception in a call is raised here.
    """
    workers, jobs = as_int("workers", workers, 1), list(jobs)
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max(1, min(workers, len(jobs))), spawn, torch.set_num_threads, (1,)) as pool:
        return [f.result() for f in [pool.submit(fn, *args) for args in jobs]]


def _train_in_worker(make, kwargs: dict) -> tuple:
    """A worker process's job: ``make(**kwargs, live=None)``'s run trained and saved; ``(state_dict, extra)``."""
    name, model, config, train_fn = make(**kwargs, live=None)
    try:
        extra = train_and_save(name, model, config, train_fn)
    except Exception as err:
        err.add_note(f"(raised while training {name} in a worker process)")
        raise
    return model.state_dict(), extra
