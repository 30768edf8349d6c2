"""``make doctor`` (``python -m transformer_nb.doctor``): this set-up against what the companion needs.

Each line is a check the package itself makes, called here: the versions against the bounds of ``pyproject.toml``
(read back from the installed package's metadata: the package's own, then each extra's), the environment variables
through the functions that read them (``TNB_PROFILE``, ``TNB_DEVICE``, ``TNB_OFFLINE``, ``TNB_RETRAIN``,
``TNB_DATA_DIR``, ``TNB_CACHE_DIR``), the device, WikiText-2 as the loader finds and verifies it (where it looked,
when it is not found) and the model cache; ``python -m transformer_nb.lecture --check`` says which lecture models
are cached. A problem comes with its fix and makes the exit code 1; a missing extra (``--``) is a note. Paste the
output into a bug report. Nothing in the package imports it.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import platform
import re
import sys
import tempfile

__all__: list[str] = []  # a command, `python -m transformer_nb.doctor`, not an API a notebook calls
DIST = "transformer-nb"
SWITCHES = ("TNB_OFFLINE", "TNB_RETRAIN")  # read with env.env_flag, as the loader and the cache read them
FETCH = f'{sys.executable} -c "from transformer_nb.wikitext_files import find_data_dir; find_data_dir()"'


def release(version: str) -> tuple:
    """``"2.13.0+cpu"`` -> ``(2, 13, 0)``: the leading release numbers of a version string."""
    m = re.match(r"\d+(\.\d+)*", version.strip())
    return tuple(int(x) for x in m.group(0).split(".")) if m else ()


def installed(package: str) -> str | None:
    """The installed version of ``package``, or None."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def versions(extra: str | None = None) -> tuple[list, list]:
    """``(found, wrong)`` for the requirements of ``extra`` (None: the package's own) in the installed metadata:
    each as ``name version``, and those missing or older than their ``>=`` bound as ``"name>=bound"`` (quoted)."""
    from packaging.requirements import Requirement

    found, wrong = [], []
    for req in map(Requirement, metadata.requires(DIST) or []):
        if ("extra" in str(req.marker or "")) != (extra is not None):
            continue  # another group's
        if req.marker is not None and not req.marker.evaluate({"extra": extra or ""}):
            continue  # not for this Python (e.g. tomli before 3.11)
        bound = next((s.version for s in req.specifier if s.operator == ">="), None)
        if bound is None:
            continue  # the package itself, pulling in its other extras
        found.append(f"{req.name} {installed(req.name) or 'missing'}")
        wrong += [f'"{req.name}>={bound}"'] if release(installed(req.name) or "") < release(bound) else []
    return found, wrong


def checks() -> dict:
    """``{name: (check, fix)}``: each check returns its line, or raises the package's own error (it needs torch)."""
    import torch

    from transformer_nb.cache import cache_dir
    from transformer_nb.env import env_flag, get_device, profile
    from transformer_nb.wikitext_files import find_data_dir, verify

    def device():
        (torch.ones(2, device=get_device()) * 2).sum().item()  # a GPU whose driver does not fit the build fails here
        return f"device {get_device()} works; {torch.get_num_threads()} CPU threads"

    def data():
        verify(folder := find_data_dir(download=False))
        return f"WikiText-2 at {folder}: sha256 verified"

    def cache():
        cache_dir().mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=cache_dir()):
            return f"model cache {cache_dir()}: writable"

    return {
        "TNB_PROFILE": (lambda: f"profile {profile()}", "unset TNB_PROFILE, or set it to full or quick"),
        "TNB_DEVICE": (device, "unset TNB_DEVICE, or set it to cpu, or install a torch build that fits your GPU"),
        "switches": (lambda: ", ".join(f"{v} {'on' if env_flag(v) else 'off'}" for v in SWITCHES), "set it to 1 or 0"),
        "data": (data, f"delete a damaged file it names; then {FETCH} (13 MB), or set TNB_DATA_DIR"),
        "cache": (cache, "export TNB_CACHE_DIR=$HOME/.cache/transformer_nb (or any folder you can write)"),
    }


def diagnose(out=print) -> list:
    """Print the report through ``out``; return the problems, each ``(what, fix)``."""
    problems = []

    def report(ok: bool | None, what: str, fix: str = "") -> bool:
        """``ok``: True (fine), False (a problem: exit code 1), None (a note: not needed here)."""
        out(f"{ {True: 'ok ', False: 'ERR', None: '-- '}[ok] }  {what}" + ("" if ok else f"\n     fix: {fix}"))
        problems.extend([(what, fix)] if ok is False else [])
        return bool(ok)

    out(f"transformer-nb {installed(DIST)} at {__file__}; Python {sys.executable}; {platform.platform()}")
    if installed(DIST) is None:
        return report(False, "the package is not installed", "make install") or problems
    py, need = platform.python_version(), metadata.metadata(DIST)["Requires-Python"]
    report(release(py) >= release(need.removeprefix(">=")), f"Python {py} (needs {need})", f"install Python {need}")
    for extra in (None, *metadata.metadata(DIST).get_all("Provides-Extra", [])):
        found, wrong = versions(extra)
        what = f"[{extra}] " * bool(extra) + ", ".join(found) + f"; needs {' '.join(wrong)}" * bool(wrong)
        report(not wrong or (None if extra else False), what, f"{sys.executable} -m pip install {' '.join(wrong)}")
    try:
        todo = checks() if installed("torch") else {}
    except Exception as err:  # torch or the package does not import
        todo = report(False, f"import: {type(err).__name__}: {err}", "make distclean install") or {}
    for name, (check, fix) in todo.items():
        try:
            report(True, check())
        except Exception as err:  # the package's own error, said as it is
            report(False, f"{name}: {type(err).__name__}: {err}", fix)
    out(f"doctor: {len(problems)} problem(s)" if problems else "doctor: everything the companion needs is here")
    return problems


if __name__ == "__main__":
    argparse.ArgumentParser("python -m transformer_nb.doctor", description=__doc__.split("\n\n")[0]).parse_args()
    sys.exit(1 if diagnose() else 0)
