"""The companion itself (notebook 00): which notebooks exist, what they serve, how long they take.

Everything here is *read* from the notebooks and their twins, so the map in notebook 00 can
never drift from the notebooks: titles from the first heading, the texts served from the
"**Serves:**" paragraph, chapter exercises from headings that name "Exercise 8.N", check cells from tags,
figures and widgets from stored outputs, runtimes from ``notebooks/runtimes.json``
(written by ``tools/refresh.py`` for the full profile and ``make runtimes`` for the quick one).

An installed copy of the package (Colab, a wheel) has no ``notebooks/`` folder beside it, so the same map is
also shipped inside the package as ``notebook_index.json``: ``tools/refresh.py`` and ``make runtimes`` rewrite it
(``python -m transformer_nb.companion --write-index``), and a test fails when it no longer matches the notebooks.
"""

import json
import re
from pathlib import Path

from transformer_nb.core.utils import as_real
from transformer_nb.env import as_path, env_path

__all__ = ["TEXTS", "exercise_map", "format_runtime", "info", "notebook_index"]  # what notebooks/tools call
TEXTS = {
    "000": "Ch. 8 The Transformer Architecture (textbook draft, §8.1–8.6, Ex. 8.1–8.10)",
    "001": "Ch. 19 The Transformer Architecture (PyTorch from scratch)",
    "002": "Transformers and Attention (article)",
    "003": "The Transformer (lecture notes)",
    "004": "The Transformer Architecture: A Deep Dive (blog post)",
}
CHECK_TAG = "nbval-check-output"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


INDEX_FILE = Path(__file__).with_name("notebook_index.json")  # the map, shipped with the package


def notebooks_dir() -> Path | None:
    """``notebooks/`` of the checkout (env ``TNB_NOTEBOOKS`` overrides), or None in an installed copy."""
    here = Path(__file__).resolve().parents[1] / "notebooks"
    return env_path("TNB_NOTEBOOKS") or (here if here.is_dir() else None)


def serves(nb: dict) -> str:
    """The "**Serves:**" paragraph of a notebook's opening, as one line."""
    for cell in nb["cells"][:6]:
        text = "".join(cell["source"])
        m = re.search(r"\*\*Serves:\*\*(.*?)(?:\n\s*\n|\n\*\*|\Z)", text, flags=re.S)
        if cell["cell_type"] == "markdown" and m:
            return " ".join(m.group(1).split())
    return ""


def info(path: Path, runtimes: dict | None = None) -> dict:
    """Facts about one stored notebook ``path`` (an ``.ipynb``)."""
    path = as_path("path", path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    md = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    title = next((line[2:].strip() for line in md.splitlines() if line.startswith("# ")), path.stem)
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    outputs = [o for c in code for o in c.get("outputs", [])]
    served = serves(nb)
    times = (runtimes or {}).get(path.stem, {})
    return {
        "name": path.stem,
        "title": title,
        "serves": served,
        "texts": sorted(set(re.findall(r"\b(00[0-4])\b", served))),
        "exercises": sorted(
            {ex for line in md.splitlines() if line.startswith("#") for ex in re.findall(r"Exercise (8\.\d+)", line)},
            key=lambda s: int(s.split(".")[1]),
        ),
        "check_cells": sum(CHECK_TAG in c.get("metadata", {}).get("tags", []) for c in code),
        "figures": sum("image/png" in o.get("data", {}) for o in outputs),
        "widgets": sum(WIDGET_VIEW in o.get("data", {}) for o in outputs),
        "code_cells": len(code),
        "has_twin": (path.parent / "py" / f"{path.stem}.py").exists(),
        "quick_s": times.get("quick_s"),
        "full_s": times.get("full_s"),
    }


def notebook_index(folder: Path | None = None) -> list:
    """``info()`` of every notebook in book order: stored ones, and twins not yet stored (``stored=False``).

    ``folder``: a ``notebooks/`` folder; default: the checkout's, else (an installed copy, e.g. in Colab) the
    map shipped in the package, ``notebook_index.json``.
    """
    folder = as_path("folder", folder) if folder is not None else notebooks_dir()
    if folder is None:
        return json.loads(INDEX_FILE.read_text(encoding="utf-8"))
    rt = folder / "runtimes.json"
    runtimes = json.loads(rt.read_text()) if rt.exists() else {}
    stems = sorted(
        {p.stem for p in folder.glob("[0-9][0-9]_*.ipynb")} | {p.stem for p in (folder / "py").glob("[0-9][0-9]_*.py")}
    )
    out = []
    for stem in stems:
        path = folder / f"{stem}.ipynb"
        if path.exists():
            out.append({**info(path, runtimes), "stored": True})
        else:
            counts = dict.fromkeys(("check_cells", "figures", "widgets", "code_cells"), 0)
            empty = {"serves": "", "texts": [], "exercises": [], **counts, "has_twin": True, "quick_s": None}
            out.append({"name": stem, "title": stem, **empty, "full_s": None, "stored": False})
    return out


def exercise_map(index: list) -> dict:
    """``{"8.1": ["01_scaled_attention"], ...}``: where each chapter exercise is worked."""
    if not isinstance(index, list) or not all(isinstance(nb, dict) for nb in index):
        raise TypeError(f"index must be the list notebook_index() returns, got {type(index).__name__}")
    out = {}
    for nb in index:
        for ex in nb["exercises"]:
            out.setdefault(ex, []).append(nb["name"])
    return dict(sorted(out.items(), key=lambda kv: int(kv[0].split(".")[1])))


# --------------------------------------------------------------------------- runtimes in the headers


def format_runtime(seconds: float) -> str:
    """Round a runtime for a header: ``~35 s`` (nearest 5 s below 1 min), ``~90 s`` (nearest 10 s
    below 2 min), ``~2.5 min`` (nearest half minute below 10 min), ``~17 min`` (nearest minute)."""
    seconds = as_real("seconds", seconds)
    if seconds < 0:
        raise ValueError(f"seconds must be >= 0, got {seconds}")
    if seconds < 57.5:
        return f"~{max(5, 5 * round(seconds / 5))} s"
    if seconds < 115:
        return f"~{10 * round(seconds / 10)} s"
    if seconds < 585:
        return f"~{round(seconds / 30) / 2:g} min"
    return f"~{round(seconds / 60)} min"


def write_index(folder: Path | None = None, path: Path = INDEX_FILE) -> Path:
    """Write ``notebook_index(folder)`` (default: the checkout's notebooks) to ``path`` as JSON; return ``path``."""
    folder = folder or notebooks_dir()
    if folder is None or not Path(folder).is_dir():
        raise ValueError(f"no notebooks/ folder to index at {folder}: run this in a checkout (or set TNB_NOTEBOOKS)")
    Path(path).write_text(json.dumps(notebook_index(folder), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return Path(path)


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--write-index"]:
        sys.exit("usage: python -m transformer_nb.companion --write-index")
    print(f"wrote {write_index()}")
