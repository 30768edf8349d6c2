"""The "Open in Colab" badge and the standard setup cell of every notebook, built from one setting.

The settings are the repository URL in ``pyproject.toml``'s ``[project.urls]``
(``Repository = "https://github.com/OWNER/REPO"``) and the release, ``[project] version``.
Everything else is built from them:

- the badge line, in each notebook's first markdown cell, right under the ``# NN · Title`` line; it
  opens ``https://colab.research.google.com/github/OWNER/REPO/blob/main/notebooks/NAME.ipynb``;
- the setup cell, the first code cell: in Colab (detected by the module ``google.colab``, which
  exists only there) it pip-installs the companion release the notebook was made for,
  ``git+https://github.com/OWNER/REPO@vVERSION`` (the tag of ``version``: tag each release
  ``vVERSION`` and run ``--apply`` after a version bump), or ``TNB_INSTALL_FROM`` (e.g. a wheel
  built by ``make wheel``), pinning torch to the
  installed version so that pip never replaces Colab's torch, and fetches WikiText-2 through the
  loader's download path (sha256-checked, with a progress bar). Elsewhere it only does what every
  notebook does: ``%matplotlib inline`` and ``env = setup(...)`` (a notebook's own ``setup``
  arguments are kept).

Usage::

    python tools/colab.py --check              # exit 1, listing each notebook (twin and .ipynb) that differs
    python tools/colab.py --apply [NAME ...]   # write badge and setup cell into the twins notebooks/py/NAME.py
    python tools/colab.py --show               # the setting, the install source and every badge

``--apply`` edits only the twins; the ``.ipynb`` follow with ``make refresh NB=NAME``. ``--notebooks
DIR`` works on another folder (a copy: the tests and ``tools/colab_test.py`` use it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
SETUP_CALL = re.compile(r"^env = setup\(([^()]*)\)\s*(#.*)?$")
NOTEBOOK = re.compile(r"^\d\d_\w+$")

SETUP_TEMPLATE = """\
# Setup. In Colab only: install the companion (Colab's torch is kept) and WikiText-2.
import os
import subprocess
import sys
from importlib.util import find_spec

if find_spec("google") and find_spec("google.colab"):  # only Colab has google.colab
    import torch

    source = os.environ.get("TNB_INSTALL_FROM", "{source}")
    pin = f"torch=={{torch.__version__}}"  # so that pip keeps Colab's torch
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", source, pin], check=True)
    from transformer_nb.wikitext import find_data_dir

    find_data_dir()  # downloads WikiText-2 once (13 MB), checking its sha256

%matplotlib inline
from transformer_nb import setup

env = setup({args})  # seeds everything, picks the device, prints both"""


# --------------------------------------------------------------------------- the one setting
def repo_url(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """``[project.urls] Repository`` of ``pyproject``: ``https://github.com/OWNER/REPO``."""
    urls = tomllib.loads(Path(pyproject).read_text(encoding="utf-8")).get("project", {}).get("urls", {})
    url = str(urls.get("Repository", "")).strip().removesuffix("/").removesuffix(".git")
    if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url):
        raise ValueError(
            f"{pyproject}: [project.urls] Repository must be https://github.com/OWNER/REPO "
            f"(Colab opens notebooks from GitHub), got {url!r}"
        )
    return url


def release(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The tag of ``[project] version`` of ``pyproject``: ``vVERSION``, what the setup cell installs."""
    version = str(tomllib.loads(Path(pyproject).read_text(encoding="utf-8")).get("project", {}).get("version", ""))
    if not re.fullmatch(r"\d+(\.\d+)*([-.+]?\w+)*", version):
        raise ValueError(f"{pyproject}: [project] version must be a release such as 1.2.0, got {version!r}")
    return f"v{version}"


def colab_url(name: str, url: str) -> str:
    """Where the badge of notebook ``name`` points: the notebook on GitHub's main branch, opened in Colab."""
    return f"https://colab.research.google.com/github/{url.removeprefix('https://github.com/')}/blob/main/notebooks/{name}.ipynb"


def badge(name: str, url: str) -> str:
    """The markdown badge line of notebook ``name``."""
    return f"[![Open in Colab]({BADGE_IMAGE})]({colab_url(name, url)})"


def setup_cell(url: str, args: str = "", tag: str | None = None) -> str:
    """The setup cell's source (as in the ``.ipynb``); ``args`` are the notebook's own ``setup(...)`` arguments,
    ``tag`` the release it installs (default: ``release()``)."""
    return SETUP_TEMPLATE.format(source=f"git+{url}@{tag or release()}", args=args)


def _twin_lines(code: str) -> list[str]:
    """A code cell's lines as jupytext's percent format writes them: magics commented out."""
    return [f"# {line}" if line.startswith("%") else line for line in code.splitlines()]


def _setup_args(lines: list[str]) -> str | None:
    """The arguments of the cell's ``env = setup(...)`` line, or None if it has none."""
    return next((m.group(1) for line in lines if (m := SETUP_CALL.match(line))), None)


def _is_setup_cell(lines: list[str]) -> bool:
    """A cell that only sets up (an earlier generated cell, or the pre-Colab three lines): replaced, not kept."""
    if any("TNB_INSTALL_FROM" in line for line in lines):
        return True
    plain = {"%matplotlib inline", "# %matplotlib inline", "from transformer_nb import setup"}
    code = [s for line in lines if (s := line.strip()) and (s in plain or not s.startswith("#"))]
    return any(SETUP_CALL.match(s) for s in code) and all(s in plain or SETUP_CALL.match(s) for s in code)


# --------------------------------------------------------------------------- twins (percent format)
def _split_twin(text: str) -> tuple[list[str], list[list[str]]]:
    """``(preamble, cells)``: each cell is its lines, the ``# %%`` header first."""
    pre: list[str] = []
    cells: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("# %%"):
            cells.append([line])
        else:
            (cells[-1] if cells else pre).append(line)
    return pre, cells


def _kind(header: str) -> str:
    m = re.match(r"# %% \[(\w+)\]", header)
    return {"md": "markdown"}.get(m.group(1), m.group(1)) if m else "code"


def _first(cells: list, kind: str, kind_of) -> int | None:
    return next((i for i, c in enumerate(cells) if kind_of(c) == kind), None)


def _with_badge(lines: list[str], line: str, prefix: str) -> list[str]:
    """Markdown lines with the badge line replaced, or inserted under the title (one blank line around)."""
    lines = list(lines)
    for i, old in enumerate(lines):
        if BADGE_IMAGE in old:
            lines[i] = prefix + line
            return lines
    title = next((i for i, old in enumerate(lines) if old.startswith(prefix + "# ")), None)
    blank = prefix.rstrip()
    at = 0 if title is None else title + 1
    after = [blank] if at < len(lines) and lines[at].strip() not in ("", "#") else []
    return lines[:at] + ([blank] if title is not None else []) + [prefix + line] + after + lines[at:]


def apply_twin(text: str, name: str, url: str, tag: str | None = None) -> tuple[str, list[str]]:
    """The twin's text with the badge and setup cell as generated, and notes for the notebook's owner."""
    pre, cells = _split_twin(text)
    notes: list[str] = []
    md = _first(cells, "markdown", lambda c: _kind(c[0]))
    if md is None:
        raise ValueError(f"{name}: no markdown cell to put the badge in")
    cells[md] = [cells[md][0], *_with_badge(cells[md][1:], badge(name, url), "# ")]
    i = _first(cells, "code", lambda c: _kind(c[0]))
    body = cells[i][1:] if i is not None else []
    replace = i is not None and _is_setup_cell(body)
    args = _setup_args(body) if replace else None
    new = ["# %%", *_twin_lines(setup_cell(url, args or "", tag)), ""]
    if replace:
        cells[i] = new
    else:
        at = len(cells) if i is None else i
        cells.insert(at, new)
        if i is not None and any("setup(" in line for line in body):
            notes.append(f"{name}: the next code cell also calls setup(); remove that call (and %matplotlib inline)")
    out = "\n".join(pre + [line for c in cells for line in c])
    return out + "\n", notes


def check_twin(text: str, name: str, url: str, tag: str | None = None) -> list[str]:
    """What differs from the generated badge and setup cell (empty: all as generated)."""
    _, cells = _split_twin(text)
    problems = []
    md = _first(cells, "markdown", lambda c: _kind(c[0]))
    if md is None or "# " + badge(name, url) not in cells[md]:
        problems.append("the first markdown cell lacks the generated Colab badge line")
    i = _first(cells, "code", lambda c: _kind(c[0]))
    body = cells[i][1:] if i is not None else []
    while body and not body[-1].strip():
        body = body[:-1]
    if i is None or cells[i][0] != "# %%" or body != _twin_lines(setup_cell(url, _setup_args(body) or "", tag)):
        problems.append("the first code cell is not the generated setup cell")
    return problems


# --------------------------------------------------------------------------- stored notebooks (.ipynb)
def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def check_ipynb(nb: dict, name: str, url: str, tag: str | None = None) -> list[str]:
    """Like ``check_twin``, for a stored notebook (a dict read from the ``.ipynb``)."""
    cells = nb.get("cells", [])
    problems = []
    md = _first(cells, "markdown", lambda c: c["cell_type"])
    if md is None or badge(name, url) not in _source(cells[md]).splitlines():
        problems.append("the first markdown cell lacks the generated Colab badge line")
    i = _first(cells, "code", lambda c: c["cell_type"])
    src = _source(cells[i]).rstrip("\n") if i is not None else ""
    if i is None or src != setup_cell(url, _setup_args(src.splitlines()) or "", tag):
        problems.append("the first code cell is not the generated setup cell")
    return problems


def apply_ipynb(nb: dict, name: str, url: str, tag: str | None = None) -> dict:
    """The same edit as ``apply_twin`` on a stored notebook's dict (for copies: the twins are the sources)."""
    cells = nb["cells"]
    md = _first(cells, "markdown", lambda c: c["cell_type"])
    lines = _with_badge(_source(cells[md]).splitlines(), badge(name, url), "")
    cells[md]["source"] = "\n".join(lines)
    i = _first(cells, "code", lambda c: c["cell_type"])
    old = _source(cells[i]).splitlines() if i is not None else []
    replace = i is not None and _is_setup_cell(old)
    src = setup_cell(url, (_setup_args(old) if replace else None) or "", tag)
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}
    if nb.get("nbformat", 4) >= 4 and nb.get("nbformat_minor", 0) >= 5:
        cell["id"] = "colab-setup"
    if replace:
        cells[i] = cell
    else:
        cells.insert(len(cells) if i is None else i, cell)
    return nb


# --------------------------------------------------------------------------- command line
def _names(folder: Path, only: list[str]) -> list[str]:
    names = sorted({p.stem for p in folder.glob("*.ipynb")} | {p.stem for p in (folder / "py").glob("*.py")})
    names = [n for n in names if NOTEBOOK.match(n)]
    unknown = sorted(set(only) - set(names))
    if unknown:
        raise SystemExit(f"no such notebook in {folder}: {', '.join(unknown)}")
    return [n for n in names if not only or n in only]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="verify every notebook; exit 1 if any differs")
    mode.add_argument("--apply", action="store_true", help="write badge and setup cell into the twins")
    mode.add_argument("--show", action="store_true", help="print the setting, the install source and the badges")
    ap.add_argument("names", nargs="*", help="notebooks (default: all)")
    ap.add_argument("--notebooks", type=Path, default=ROOT / "notebooks", help="the notebooks folder")
    ap.add_argument("--pyproject", type=Path, default=ROOT / "pyproject.toml", help="where the setting is")
    args = ap.parse_args(argv)
    url, tag = repo_url(args.pyproject), release(args.pyproject)
    names = _names(args.notebooks, args.names)
    if args.show:
        print(f"repository (pyproject.toml [project.urls] Repository): {url}\ninstall source in Colab: git+{url}@{tag}")
        for name in names:
            print(f"{name}: {badge(name, url)}")
        return 0
    bad = 0
    for name in names:
        twin, stored = args.notebooks / "py" / f"{name}.py", args.notebooks / f"{name}.ipynb"
        if args.apply:
            if not twin.exists():
                print(f"{name}: no twin {twin}; skipped")
                continue
            text, notes = apply_twin(twin.read_text(encoding="utf-8"), name, url, tag)
            changed = text != twin.read_text(encoding="utf-8")
            if changed:
                twin.write_text(text, encoding="utf-8")
            print(f"{name}: {'updated' if changed else 'already as generated'}", *notes, sep="\n  ")
            continue
        for path, problems in (
            (twin, check_twin(twin.read_text(encoding="utf-8"), name, url, tag) if twin.exists() else []),
            (
                stored,
                check_ipynb(json.loads(stored.read_text(encoding="utf-8")), name, url, tag) if stored.exists() else [],
            ),
        ):
            bad += bool(problems)
            for p in problems:
                print(f"{path.relative_to(args.notebooks.parent)}: {p}")
    if args.check:
        print(
            f"{len(names)} notebooks checked: " + (f"{bad} files differ (run tools/colab.py --apply)" if bad else "ok")
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
