"""A trained-model cache: re-running a notebook loads weights instead of training again.

Files live in ``TNB_CACHE_DIR`` (default ``~/.cache/transformer_nb``), one ``<name>.pt`` per
configuration (``cache_name``). A file is a ``torch.save`` dict, loaded with
``torch.load(weights_only=True)`` (a cache file cannot run code)::

    {"format": 2, "config": <canonical JSON>, "state_dict": ..., "extra": ...,
     "sha256": <digest of config, weights and extra>, "torch": "2.13.0",
     "code": {"transformer_nb.core.transformer": <digest>, ...}}

A load is refused, with one line that says why, and the model retrained when the file is
corrupt or damaged (a flipped bit changes the sha256), was saved for another configuration,
by other code (``code``: the modules that define the model's classes and the training code
that ``load_or_train`` ran, docstrings and comments aside) or by another torch release, or does
not fit the model. A refused file never touches the model. Writes go to a unique temporary file
that replaces the cache atomically, so concurrent trainers of one name never corrupt each
other; an unwritable folder or a full disk is a warning, never a lost model, and Ctrl-C stays a
``KeyboardInterrupt``. Temporary files of interrupted writes are removed at the next save or
load in their folder. The model stays on the device it was given, whatever happens.

``load_or_train`` loads one run or trains and saves it (``train_and_save``); ``load_or_train_many``
does it for several, the missing ones trained side by side in worker processes on the CPU.
"""

import contextlib
import hashlib
import importlib
import inspect
import json
import multiprocessing
import os
import re
import sys
import sysconfig
import textwrap
import time
import uuid
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

from transformer_nb.core.utils import as_int
from transformer_nb.env import as_path, env_flag, env_path
from transformer_nb.fingerprint import source_digest

FORMAT = 2
PACKAGE = "transformer_nb"
# Infrastructure, not model code: a change to these never invalidates a cache.
NOT_MODEL_CODE = ("cache", "checks", "utils", "source", "companion", "plotting", "widgets", "exercises", "bench")
STALE_SECONDS = 3600  # a temporary file older than this, or whose writer has exited, is removed
EXTRA_TYPES = (dict, list, tuple, str, int, float, bool, type(None), torch.Tensor)


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
    """``<prefix>_<8 hex digits of config>``: one stable cache name per configuration.

    ``prefix`` names the family (e.g. ``"wikitext2_transformer"``, ``"reversal_base"``): letters,
    digits, ``_``, ``-`` and ``.``. ``config`` is a JSON-able dict; its key order does not matter.
    """
    _plain("prefix", prefix)
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict, got {type(config).__name__}")
    return f"{prefix}_{hashlib.sha256(_canonical(config).encode()).hexdigest()[:8]}"


# --------------------------------------------------------------------------- digests


def _feed(h, obj, where: str = "extra") -> None:
    """Hash ``obj`` (nested dicts/lists/tuples of tensors and plain values) exactly, tensors byte by byte."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    elif isinstance(obj, dict):
        h.update(f"D{len(obj)}".encode())
        for k in sorted(obj, key=repr):
            h.update(repr(k).encode())
            _feed(h, obj[k], f"{where}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__[0]}{len(obj)}".encode())
        for i, v in enumerate(obj):
            _feed(h, v, f"{where}[{i}]")
    elif isinstance(obj, EXTRA_TYPES):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
    else:
        raise TypeError(
            f"{where} is a {type(obj).__name__}; a cache stores only tensors, numbers, strings, None "
            f"and dicts/lists/tuples of them (torch.load(weights_only=True) refuses other objects)"
        )


def _check_args(model=None, config=None) -> None:
    if model is not None and not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if config is not None and not isinstance(config, dict):
        raise TypeError(f"config must be a dict (JSON-able), got {type(config).__name__}")


def payload_sha256(config: str, state_dict: dict, extra: dict) -> str:
    """sha256 of the canonical config, every weight (dtype, shape and bytes) and ``extra``."""
    if not isinstance(config, str) or not isinstance(state_dict, dict):
        raise TypeError(
            f"config must be a str and state_dict a dict, got {type(config).__name__}, {type(state_dict).__name__}"
        )
    h = hashlib.sha256(config.encode())
    _feed(h, dict(state_dict), "state_dict")
    _feed(h, extra)
    return h.hexdigest()


def _is_model_code(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == PACKAGE and len(parts) > 1 and parts[1] not in NOT_MODEL_CODE


def _module_digest(name: str) -> str:
    """Digest of the package module ``name`` (imported if need be), or ``"no source"``."""
    try:
        return source_digest(inspect.getsource(sys.modules.get(name) or importlib.import_module(name)))
    except Exception:  # gone, renamed or no source file: never equal to a real digest
        return "no source"


def _referenced(fn) -> list:
    """The functions and modules that ``fn`` uses: those in its closure and the globals it names."""
    cells = []
    for cell in getattr(fn, "__closure__", None) or ():
        with contextlib.suppress(ValueError):  # an empty cell
            cells.append(cell.cell_contents)
    names = [getattr(fn, "__globals__", {}).get(n) for n in getattr(getattr(fn, "__code__", None), "co_names", ())]
    return [v for v in (*cells, *names) if inspect.ismodule(v) or (inspect.isfunction(v) and not _library(v))]


def _library(fn) -> bool:
    """``fn`` comes from the standard library or an installed package other than this one."""
    libs = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")})
    return (fn.__module__ or "").split(".")[0] != PACKAGE and fn.__code__.co_filename.startswith(libs)


def code_digests(model: torch.nn.Module, train_fn=None) -> dict:
    """``{module or class or function: digest}`` of the code that defines ``model`` and of ``train_fn``.

    The package modules that define its classes (and the package modules they reference) are
    hashed whole; a class defined elsewhere (a test, a notebook cell) by its own source; torch's
    own classes are covered by the torch version. ``train_fn``, the training code, and the functions
    it calls: a package function by its module whole (with what it references), a function typed
    elsewhere by its source (and what it calls).
    """
    _check_args(model)
    out, todo = {}, [type(m) for m in model.modules()]
    if train_fn is not None:
        todo += [train_fn, *_referenced(train_fn)]
    while todo:
        obj = todo.pop()
        name = obj.__name__ if inspect.ismodule(obj) else getattr(obj, "__module__", None) or "?"
        mod, top = sys.modules.get(name), name.split(".")[0]
        if top == "torch" or name in out:
            continue
        if (_is_model_code(name) or (inspect.isfunction(obj) and top == PACKAGE)) and mod is not None:
            out[name] = _module_digest(name)
            for v in vars(mod).values():
                ref = v.__name__ if inspect.ismodule(v) else getattr(v, "__module__", None)
                if isinstance(ref, str) and _is_model_code(ref) and ref not in out:
                    todo.append(sys.modules.get(ref) or v)
        elif isinstance(obj, type) or inspect.isfunction(obj):
            key = f"{name}.{obj.__qualname__}"
            if key not in out:
                out[key] = _class_digest(obj)
                todo += _referenced(obj) if inspect.isfunction(obj) else []
    return dict(sorted(out.items()))


def _class_digest(cls) -> str:
    """A class's or function's source digest; for a class typed into a notebook cell (no source file), its methods'."""
    try:
        return source_digest(inspect.getsource(cls))
    except (OSError, TypeError):
        methods = [getattr(v, "__func__", v) for _, v in sorted(vars(cls).items())]
        parts = []
        for f in filter(inspect.isfunction, methods):
            try:
                parts.append(textwrap.dedent(inspect.getsource(f)))
            except (OSError, TypeError):
                parts.append(f.__qualname__)
        return source_digest("\n".join(parts)) if parts else "no source"


def torch_release() -> str:
    """``torch.__version__`` without the build tag: a CPU and a CUDA build of one release agree."""
    return torch.__version__.split("+")[0]


# --------------------------------------------------------------------------- writing


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: another user's live process
        pass
    return True


def clean_stale(folder: Path | None = None, max_age: float = STALE_SECONDS) -> list:
    """Remove temporary files left by interrupted writes: their writer has exited, or they are
    older than ``max_age`` seconds (``<name>.tmp`` files of the old format always). Returns them."""
    if folder is not None:
        as_path("folder", folder)
    folder, removed = Path(folder or cache_dir()), []
    if not folder.is_dir():
        return removed
    for tmp in folder.glob("*.tmp"):
        m = re.search(r"\.(\d+)-[0-9a-f]+\.tmp$", tmp.name)
        pid = int(m.group(1)) if m else None
        try:
            stale = pid is None or not _alive(pid) or time.time() - tmp.stat().st_mtime > max_age
            if stale and pid != os.getpid():
                tmp.unlink()
                removed.append(tmp)
        except OSError:  # gone already, or not ours to remove
            pass
    return removed


def _device_of(model: torch.nn.Module):
    devices = {t.device for t in (*model.parameters(), *model.buffers())}
    return devices.pop() if len(devices) == 1 else None


def save(name: str, model: torch.nn.Module, config: dict, extra: dict | None = None, train_fn=None) -> Path | None:
    """Save ``model``'s weights with ``config`` (a JSON-able dict) and ``extra`` (tensors, numbers, lists);
    ``train_fn``, the code that trained it, joins the code digest.

    Written to a unique temporary file, then renamed over ``<name>.pt`` in one step. Returns the
    path, or ``None`` with a warning when the folder cannot be written or the disk is full (the
    model is untouched, no temporary file is left). Ctrl-C removes the temporary file and stays a
    ``KeyboardInterrupt``.
    """
    path = cache_path(name)
    _check_args(model, config)
    if _device_of(model) == torch.device("meta"):
        raise ValueError("model is on the meta device: it has no weights to cache")
    extra = extra or {}
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    blob = {"format": FORMAT, "config": _canonical(config), "state_dict": state, "extra": extra}
    blob.update(
        sha256=payload_sha256(blob["config"], state, extra), torch=torch_release(), code=code_digests(model, train_fn)
    )
    tmp = path.parent / f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        clean_stale(path.parent)
        with open(tmp, "wb") as f:
            torch.save(blob, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # atomic: readers see the old file or the new one, never half of one
    except BaseException as err:
        with contextlib.suppress(OSError):  # the folder itself may not be there
            tmp.unlink(missing_ok=True)
        # torch.save reports a failed write (a full disk, Ctrl-C in a write) as a RuntimeError over the real one
        if isinstance(err, RuntimeError) and isinstance(err.__context__, (OSError, KeyboardInterrupt)):
            err = err.__context__
        if not isinstance(err, (OSError, RuntimeError)):
            raise err from None
        warnings.warn(
            f"could not write the cache {path} ({type(err).__name__}: {getattr(err, 'strerror', None) or err}); "
            f"the trained model is kept in memory only. Set TNB_CACHE_DIR to a writable folder to keep it.",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return path


# --------------------------------------------------------------------------- loading


def _refusal(blob, config: str, model: torch.nn.Module, train_fn=None) -> str | None:
    """Why a loaded ``blob`` must not go into ``model`` (None: it may)."""
    if not isinstance(blob, dict) or not {"config", "state_dict"} <= set(blob):
        return "has an unexpected layout"
    if blob.get("format") != FORMAT or "sha256" not in blob:
        return "has no checksum (written by an older transformer_nb)"
    try:
        digest = payload_sha256(blob["config"], blob["state_dict"], blob.get("extra", {}))
    except (TypeError, AttributeError, RuntimeError):
        digest = None
    if digest != blob["sha256"]:
        return "is damaged (its contents do not match their sha256)"
    if blob["config"] != config:
        return "was trained with another configuration"
    if blob.get("torch") != torch_release():
        return f"was saved by torch {blob.get('torch')}, this is torch {torch_release()}"
    code, stored = code_digests(model, train_fn), blob.get("code")
    if not isinstance(stored, dict):
        return "has no digest of its model code"
    # the model's code, and every recorded module of the package or function of train_fn that trained it
    must = code_digests(model).keys() | {k for k in stored if k in code or re.fullmatch(rf"{PACKAGE}(\.\w+)+", str(k))}
    code.update({k: _module_digest(k) for k in must - code.keys()})
    changed = sorted(k for k in must if code[k] != stored.get(k))
    if changed:
        return f"was trained with other code ({', '.join(changed)} changed)"
    own, sd = model.state_dict(), blob["state_dict"]
    if own.keys() != sd.keys():
        diff = sorted(own.keys() ^ sd.keys())
        return f"does not fit this model (parameters {', '.join(diff[:3])}{' ...' if len(diff) > 3 else ''} differ)"
    for k, v in own.items():
        if not isinstance(sd[k], torch.Tensor) or sd[k].shape != v.shape:
            got = tuple(sd[k].shape) if isinstance(sd[k], torch.Tensor) else type(sd[k]).__name__
            return f"does not fit this model ({k}: cached {got}, model {tuple(v.shape)})"
    return None


def load(name: str, model: torch.nn.Module, config: dict, train_fn=None):
    """Load cached weights into ``model``. Returns ``(ok, message, extra)``; never raises on a bad cache.

    ``train_fn``: the training code the file must have been made by (else the package's training
    code it records is checked). A refused file leaves ``model`` untouched. ``extra``'s tensors
    come back on the CPU. Stale temporary files in the folder are removed.
    """
    path = cache_path(name)
    _check_args(model, config)
    clean_stale(path.parent)
    try:
        if not path.is_file():
            return False, f"no cache at {path}", {}
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except OSError as err:  # a folder we may not read
        return False, f"cache {path} cannot be read ({type(err).__name__}: {err.strerror}); retraining", {}
    except Exception as err:  # corrupt, truncated, or not a torch file
        return False, f"cache {path} is corrupt ({type(err).__name__}); retraining", {}
    why = _refusal(blob, _canonical(config), model, train_fn)
    if why:
        return False, f"cache {path} {why}; retraining", {}
    model.load_state_dict(blob["state_dict"])  # copies into the model's own tensors: its device stays
    return True, f"loaded trained weights from {path}", blob.get("extra", {})


def _to_cpu(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    if isinstance(obj, dict):
        return {k: _to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_cpu(v) for v in obj)
    return obj


def _check_train_fn(train_fn) -> None:
    if not callable(train_fn):
        raise TypeError(f"train_fn must be callable (model -> extra dict), got {type(train_fn).__name__}")


def _cached(name: str, model: torch.nn.Module, config: dict, train_fn, retrain: bool) -> dict | None:
    """The ``extra`` of a cached run, its weights loaded into ``model``; None (and why, printed) if it must train."""
    if retrain or env_flag("TNB_RETRAIN"):
        print("retraining (asked for)")
        return None
    ok, msg, extra = load(name, model, config, train_fn)
    print(msg)
    return extra if ok else None


def load_or_train(name: str, model: torch.nn.Module, config: dict, train_fn, retrain: bool = False):
    """Load ``model`` from the cache, or train and save it (``train_and_save``). Returns ``(extra, trained_now)``.

    A corrupt, damaged or mismatched file is reported in one line and the model retrained.
    ``retrain=True`` or ``TNB_RETRAIN=1`` (or ``true``, ``yes``, ``on``) forces training.
    """
    _check_train_fn(train_fn)
    extra = _cached(name, model, config, train_fn, retrain)
    return (extra, False) if extra is not None else (train_and_save(name, model, config, train_fn), True)


def train_and_save(name: str, model: torch.nn.Module, config: dict, train_fn) -> dict:
    """Call ``train_fn(model) -> extra`` and save the trained model under ``name`` with ``config`` and ``extra``.

    ``extra`` (e.g. the loss history) is stored with the weights and returned (its tensors on
    the CPU), so a re-run can redraw its training curves. ``train_fn``'s code is part of the
    cache's code digest. The model ends on the device it came on. If the cache cannot be written,
    a warning says so and the trained model and ``extra`` are still returned.
    """
    path = cache_path(name)
    _check_args(model, config)
    _check_train_fn(train_fn)
    device = _device_of(model)
    extra = train_fn(model) or {}
    if not isinstance(extra, dict):
        raise TypeError(f"train_fn must return a dict (or None), got {type(extra).__name__}")
    if device is not None and _device_of(model) != device:
        model.to(device)  # train_fn moved it: give it back where it came from
    extra = _to_cpu(extra)
    try:
        payload_sha256("", {}, extra)
    except TypeError as err:
        warnings.warn(f"{err}; {path} was not written", RuntimeWarning, stacklevel=2)
        return extra
    save(name, model, config, extra, train_fn)
    return extra


def load_or_train_many(make, args: dict, workers: int, retrain: bool = False, live=None) -> dict:
    """``{key: (model, extra, trained_now)}``: ``load_or_train(*make(*args[key], live), retrain)`` for every key,
    the runs that the cache lacks (all of them with ``retrain``) trained ``workers`` at a time.

    ``make(*args, live) -> (name, fresh model, config, train_fn)`` builds one run; it is a
    module-level function and ``args`` are picklable (a worker process imports and calls them).
    ``live``: how a run trained here shows its progress (passed to ``make``; a worker passes None:
    nothing shown). When more than one run is missing, ``workers > 1`` and their models are on the
    CPU, each trains and is saved in its own process on one CPU thread (``in_workers``) and
    its weights come back here: small models gain little from a second thread, so two runs side by
    side take little more than the time of one. Otherwise they train here one after the other, in
    the order of ``args`` (put the longest first), each from a fresh ``make`` (which seeds it). An
    error in a worker is raised here, naming the run; runs that finished stay cached. Models in eval mode.
    """
    as_int("workers", workers, 1)
    if not isinstance(args, dict):
        raise TypeError(f"args must be a dict {{key: make's arguments}}, got {type(args).__name__}")
    runs = {k: make(*a, live) for k, a in args.items()}
    out = {k: (extra, False) for k, run in runs.items() if (extra := _cached(*run, retrain)) is not None}
    todo = [k for k in runs if k not in out]
    if workers > 1 and len(todo) > 1 and all(_device_of(runs[k][1]) == torch.device("cpu") for k in todo):
        for k, (state, extra) in zip(todo, in_workers(_train_in_worker, [(make, args[k]) for k in todo], workers)):
            runs[k][1].load_state_dict(state)
            out[k] = extra, True
    for k in todo:
        if k not in out:
            runs[k] = make(*args[k], live)  # fresh: seeded now, as a run trained alone is
            out[k] = train_and_save(*runs[k]), True
    return {k: (runs[k][1].eval(), *out[k]) for k in runs}


def run_args(run: dict, defaults: dict) -> dict:
    """``{**defaults, **run}``: a run's keyword arguments, every one named in ``defaults`` (else a TypeError)."""
    if not set(run) <= set(defaults):
        raise TypeError(
            f"unexpected keyword arguments {sorted(set(run) - set(defaults))}; a run takes {list(defaults)}"
        )
    return {**defaults, **run}


def in_workers(fn: Callable, jobs: Iterable[tuple], workers: int = 2) -> list:
    """``[fn(*args) for args in jobs]``, ``workers`` calls at a time, each in its own process on one CPU thread.

    For independent small trainings on the CPU, where a second thread helps a model little (the
    reversal model: about a third) and a second process nearly doubles the work done. ``fn`` must be
    a module-level function (the workers import it) and the arguments picklable. The processes
    are started with ``spawn`` (a fork would copy torch's running threads), so a script that calls
    this needs Python's ``if __name__ == "__main__":`` guard (a notebook does not); an exception in a
    call is raised here.
    """
    workers, jobs = as_int("workers", workers, 1), list(jobs)
    if not jobs:
        return []
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(min(workers, len(jobs)), spawn, initializer=torch.set_num_threads, initargs=(1,)) as pool:
        return [f.result() for f in [pool.submit(fn, *args) for args in jobs]]


def _train_in_worker(make, args: tuple) -> tuple:
    """A worker process's job: ``make(*args, None)``'s run trained and saved; returns ``(state_dict, extra)``."""
    name, model, config, train_fn = make(*args, None)
    try:
        extra = train_and_save(name, model, config, train_fn)
    except Exception as err:
        err.add_note(f"(raised while training {name} in a worker process)")
        raise
    return model.state_dict(), extra
