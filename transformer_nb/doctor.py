"""``make doctor`` (``python -m transformer_nb.doctor``): what this set-up has, against what the companion needs.

It prints the versions of Python, torch, numpy, matplotlib, tqdm, ipywidgets, JupyterLab and nbval against the
minimums the package declares (``pyproject.toml``, read back from the installed package's metadata: stated there
once); the device and whether a GPU is usable; where WikiText-2 and the trained-model cache live, whether the data
is present and verified (the loader's sha256 checks) and whether the cache is writable; which lecture models are
cached; and which notebooks can run as they are. Each problem comes with the command that fixes it, and the exit
code is 1 when something needed is missing. Paste its output into a bug report.

Companion code: nothing in the package's core imports it.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import platform
import re
import sys
import tempfile
from pathlib import Path

DIST = "transformer-nb"
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"  # a checkout's; absent from an installed wheel
#: What each package is needed for, and whether its absence is a problem (True) or a note (False).
PACKAGES = {
    "torch": ("every notebook", True),
    "numpy": ("every notebook", True),
    "matplotlib": ("every notebook", True),
    "tqdm": ("every notebook", True),
    "ipywidgets": ("the widgets (00-10, 14)", True),
    "jupyterlab": ("`make lab` (not needed in Colab)", "colab"),
    "nbval": ("`make test` only", False),
}
PIP = f"{sys.executable} -m pip install"


def requirements() -> dict:
    """``{"python": minimum, package: minimum, ...}``: the ``>=`` bounds the package declares, from the installed
    package's metadata, else from the checkout's ``pyproject.toml``."""
    try:
        meta = metadata.metadata(DIST)
        lines, python = metadata.requires(DIST) or [], meta.get("Requires-Python", "")
    except metadata.PackageNotFoundError:
        import tomllib  # Python >= 3.11; an uninstalled checkout on 3.10 must be installed first

        project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
        lines = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
        python = project["requires-python"]
    out = {"python": python.removeprefix(">=").strip()}
    for line in lines:
        m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*>=\s*([0-9][0-9.]*)", line)
        if m:
            out[m.group(1).lower()] = m.group(2)
    return out


def release(version: str) -> tuple:
    """``"2.13.0+cpu"`` -> ``(2, 13, 0)``: the leading release numbers of a version string."""
    if not isinstance(version, str):
        raise TypeError(f"version must be a str such as '2.13.0+cpu', got {type(version).__name__}")
    m = re.match(r"\d+(\.\d+)*", version.strip())
    return tuple(int(x) for x in m.group(0).split(".")) if m else ()


def installed(package: str) -> str | None:
    """The installed version of ``package``, or None."""
    if not isinstance(package, str):
        raise TypeError(f"package must be a distribution name such as 'torch', got {type(package).__name__}")
    if not package.strip():
        raise ValueError("package must be a distribution name such as 'torch', got an empty string")
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def in_colab() -> bool:
    from importlib.util import find_spec

    return find_spec("google") is not None and find_spec("google.colab") is not None


def _versions(report) -> set:
    """Check every version; returns the packages that are missing or too old."""
    need, bad = requirements(), set()
    py = platform.python_version()
    ok = release(py) >= release(need["python"])
    report(ok, f"Python {py} (needs >= {need['python']})", f"install Python >= {need['python']}")
    for package, (what, needed) in PACKAGES.items():
        have, minimum = installed(package), need.get(package, "0")
        needed = (not in_colab()) if needed == "colab" else needed
        fix = f'{PIP} "{package}>={minimum}"'
        if have is None:
            bad.add(package)
            report(False if needed else None, f"{package}: not installed (needs >= {minimum}, for {what})", fix)
        elif release(have) < release(minimum):
            bad.add(package)
            why = f"{package} {have} is older than the companion needs (>= {minimum}, for {what})"
            report(False if needed else None, why, fix)
        else:
            report(True, f"{package} {have} (needs >= {minimum})")
    return bad


def _device(report) -> None:
    import torch

    from transformer_nb.core.utils import available_devices
    from transformer_nb.env import get_device

    try:
        device = get_device()
    except ValueError as err:  # TNB_DEVICE names a device that is not here
        report(False, f"device: {err}", "unset TNB_DEVICE, or set it to one of the devices listed")
        return
    gpu = "no GPU visible (the notebooks run on the CPU)"
    for name in available_devices():
        if name in ("cuda", "mps"):
            try:
                (torch.ones(2, device=name) * 2).sum().item()
                gpu = f"GPU usable: {name}" + (f" ({torch.cuda.get_device_name(0)})" if name == "cuda" else "")
            except Exception as err:  # a driver that does not match the build, a busy device
                gpu = f"a {name} device is visible but does not work ({type(err).__name__}: {err})"
                report(False, gpu, "set TNB_DEVICE=cpu, or install a torch build that fits your driver (README)")
                return
            break
    report(True, f"device {device}, {torch.get_num_threads()} CPU threads; {gpu}")


def _data(report) -> bool:
    from transformer_nb.lecture import FETCH_DATA
    from transformer_nb.wikitext_files import find_data_dir, verify

    fetch = sys.executable + FETCH_DATA.removeprefix("python")
    fix = f"{fetch} (13 MB, once), or set TNB_DATA_DIR to a folder holding wikitext-2/"
    try:
        folder = find_data_dir(download=False)
        verify(folder)
    except FileNotFoundError:
        report(False, f"WikiText-2: not found (TNB_DATA_DIR={os.environ.get('TNB_DATA_DIR', '(not set)')})", fix)
        return False
    except ValueError as err:
        report(False, f"WikiText-2: {err}", f"delete the damaged file, then {fix}")
        return False
    report(True, f"WikiText-2 at {folder}: present, sha256 verified")
    return True


def _cache(report) -> bool:
    from transformer_nb.cache import cache_dir

    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
    except OSError as err:
        report(
            False,
            f"model cache {folder} is not writable ({type(err).__name__}): trained models are not kept, the lecture "
            "finds none",
            "export TNB_CACHE_DIR=$HOME/.cache/transformer_nb (or any folder you can write), then run again",
        )
        return False
    report(True, f"model cache {folder}: writable")
    return True


def _lecture(report, data_ok: bool) -> bool:
    """Which lecture models are cached (no training): True when every one is."""
    if not data_ok:
        report(None, "lecture models: not looked for (no WikiText-2)", "get WikiText-2 (above), then `make lecture`")
        return False
    from transformer_nb import lecture

    found = []
    for name in lecture.NAMES:
        try:
            found.append(f"{name} {lecture.best(name, 'cpu')[1]}")
        except lecture.NotPrepared:
            found.append(f"{name} missing")
    ready = not any(f.endswith("missing") for f in found)
    report(True if ready else None, f"lecture models: {', '.join(found)}", f"`{lecture.MAKE}` trains what is missing")
    return ready


def diagnose(out=print) -> list:
    """Print the report through ``out``; return the problems, each ``(what, fix)``."""
    if not callable(out):
        raise TypeError(f"out must be a function that prints a line (such as print), got {type(out).__name__}")
    problems = []

    def report(ok: bool | None, what: str, fix: str = "") -> None:
        """``ok``: True (fine), False (a problem: exit code 1), None (a note: not needed here)."""
        out(f"{ {True: 'ok ', False: 'ERR', None: '-- '}[ok] }  {what}")
        if ok is not True:
            out(f"     fix: {fix}")
        if ok is False:
            problems.append((what, fix))

    out(f"transformer-nb {installed(DIST) or '(not installed)'} at {Path(__file__).parent}")
    out(f"{platform.platform()}; Python at {sys.executable}")
    bad = _versions(report)
    if "torch" in bad:
        out("     (the rest needs torch)")
        return problems
    from transformer_nb.env import profile

    try:
        report(True, f"profile {profile()} (TNB_PROFILE)")
    except ValueError as err:
        report(False, str(err), "unset TNB_PROFILE, or set it to full or quick")
    _device(report)
    data_ok, cache_ok = _data(report), _cache(report)
    lecture_ok = _lecture(report, data_ok) if cache_ok else False
    widgets = "ipywidgets" not in bad
    runs = {
        "00-09, 13": "yes" if widgets else "yes, without their widgets",
        "10-12": "yes" if data_ok else "only online (they download WikiText-2 first)",
        "14": "yes"
        if widgets and lecture_ok
        else "partly: "
        + ", ".join(
            w for w, missing in (("no widgets", not widgets), ("some models not cached", not lecture_ok)) if missing
        ),
    }
    out("notebooks that run as they are: " + "; ".join(f"{k}: {v}" for k, v in runs.items()))
    out(f"doctor: {len(problems)} problem(s)" if problems else "doctor: everything the companion needs is here")
    return problems


def main(argv=None) -> int:
    """The command line: no options (``--help`` prints the module's description); exit code 1 on a problem."""
    import argparse

    argparse.ArgumentParser(prog="python -m transformer_nb.doctor", description=__doc__.split("\n\n")[0]).parse_args(
        argv
    )
    return 1 if diagnose() else 0


if __name__ == "__main__":
    sys.exit(main())
