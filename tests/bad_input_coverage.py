"""pytest plugin: count the public functions and classes of ``transformer_nb`` whose bad input is covered by tests.

    .venv/bin/python -m pytest -p bad_input_coverage tests -q            # the whole unit suite
    TNB_BAD_INPUT_JSON=build/bad_input.json .venv/bin/python -m pytest -p bad_input_coverage tests/test_properties_*.py

The public API is read from the code: every function and class (exceptions aside) that a public module of the
package (no part of its dotted name with a leading underscore) defines without a leading underscore
(``__all__`` where a module has one), and that takes at least one argument (a function of no arguments has
no bad input). Before the tests are
collected, each is wrapped (a class: its ``__init__``, ``__call__`` and public methods, ``forward``
included). A callable counts as **covered** when, during a test that passed, a call made from outside the
package (the test's own call, not one package function calling another) ended in a ``ValueError`` or
``TypeError``: the test fed it bad input and the refusal reached the test. The summary prints the count per
module and lists what is not covered; ``TNB_BAD_INPUT_JSON`` also writes it as JSON.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import pkgutil
import threading

PACKAGE = "transformer_nb"
_state = threading.local()
_pending: set[str] = set()  # refused during the running test
_covered: set[str] = set()  # refused during a test that passed
_public: dict[str, list[str]] = {}  # module -> public names


def modules():
    pkg = importlib.import_module(PACKAGE)
    yield pkg
    for info in pkgutil.walk_packages(pkg.__path__, PACKAGE + "."):
        if any(part.startswith("_") for part in info.name.split(".")):  # __main__ and private modules
            continue
        try:
            yield importlib.import_module(info.name)
        except Exception:  # an optional dependency missing: not part of this count
            continue


def public_callables(mod) -> list[str]:
    """The functions and classes (exceptions aside) ``mod`` defines and exports: ``__all__`` where it has one."""
    names = getattr(mod, "__all__", None)
    if names is None or mod.__name__ == PACKAGE:
        names = [n for n in vars(mod) if not n.startswith("_")]
    out = []
    for n in names:
        obj = getattr(mod, n, None)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)) or getattr(obj, "__module__", None) != mod.__name__:
            continue
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            continue
        out.append(n)
    return sorted(out)


def _public_names(mod) -> list[str]:
    """``public_callables`` less those that take no argument: nothing to feed them, no bad input possible."""
    return [n for n in public_callables(mod) if takes_arguments(getattr(mod, n))]


def takes_arguments(obj) -> bool:
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return True
    return any(p not in ("self", "cls") for p in params)


def _wrap(fn, key: str):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        depth = getattr(_state, "depth", 0)
        _state.depth = depth + 1
        try:
            return fn(*args, **kwargs)
        except (ValueError, TypeError):
            if depth == 0:  # the call came from outside the package: a test's own call
                _pending.add(key)
            raise
        finally:
            _state.depth = depth

    wrapper.__bad_input_wrapped__ = True
    return wrapper


def _wrap_class(cls, key: str) -> None:
    for name, attr in list(vars(cls).items()):
        if name.startswith("_") and name not in ("__init__", "__call__"):
            continue
        if isinstance(attr, (staticmethod, classmethod)):
            setattr(cls, name, type(attr)(_wrap(attr.__func__, key)))
        elif inspect.isfunction(attr) and not getattr(attr, "__bad_input_wrapped__", False):
            setattr(cls, name, _wrap(attr, key))


def install() -> None:
    """Wrap the public API in place, and every module-level reference to it."""
    mods = list(modules())
    wrappers = {}  # id(original function) -> (original, wrapper)
    for mod in mods:
        names = _public_names(mod)
        _public[mod.__name__] = names
        for n in names:
            obj, key = getattr(mod, n), f"{mod.__name__}.{n}"
            if inspect.isclass(obj):
                _wrap_class(obj, key)
            elif not getattr(obj, "__bad_input_wrapped__", False):
                wrappers[id(obj)] = (obj, _wrap(obj, key))
    for mod in mods:  # also `from transformer_nb.core.masks import causal_mask` in other modules
        for n, v in list(vars(mod).items()):
            if id(v) in wrappers and wrappers[id(v)][0] is v:
                setattr(mod, n, wrappers[id(v)][1])


def pytest_configure(config):
    install()


def pytest_runtest_logreport(report):
    if report.when == "call":
        if report.passed:
            _covered.update(_pending)
        _pending.clear()


def summary() -> dict:
    rows = {}
    for mod, names in sorted(_public.items()):
        if names:
            keys = [f"{mod}.{n}" for n in names]
            rows[mod] = {"public": len(keys), "covered": sorted(k for k in keys if k in _covered)}
    total = sum(r["public"] for r in rows.values())
    covered = sum(len(r["covered"]) for r in rows.values())
    return {"public": total, "covered": covered, "modules": rows}


def pytest_terminal_summary(terminalreporter):
    s, tr = summary(), terminalreporter
    tr.write_sep("=", "bad-input coverage (tests/bad_input_coverage.py)")
    for mod, r in s["modules"].items():
        missing = sorted(set(_public[mod]) - {k.rsplit(".", 1)[1] for k in r["covered"]})
        tr.write_line(
            f"{len(r['covered']):4d} / {r['public']:<4d} {mod}" + (f"   not: {', '.join(missing)}" if missing else "")
        )
    tr.write_line(
        f"{s['covered']:4d} / {s['public']:<4d} public functions and classes refuse bad input in passing tests"
    )
    if os.environ.get("TNB_BAD_INPUT_JSON"):
        with open(os.environ["TNB_BAD_INPUT_JSON"], "w") as f:
            json.dump(s, f, indent=1)
