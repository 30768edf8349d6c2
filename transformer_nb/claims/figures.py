"""Figures that the notebooks produce (perplexities, timings, accuracies), read from their stored outputs.

A ledger entry never types such a figure in: it writes ``{10:ex89_ppl_lstm}`` and the ledger puts in what
notebook 10 last printed, so a re-executed notebook updates the ledger. Where there is no ``notebooks/`` folder
(a wheel, Colab), or the notebook does not print the figure, the text says where the figure lives instead.
:data:`FIGURES` (``data/figures.toml``): key -> (where a reader finds it, the label the figure is printed under,
the pattern that follows the label). Only the standard library: the notebook tests load this file on its own.
"""

import json
import re
from functools import lru_cache
from pathlib import Path

try:
    import tomllib
except ImportError:  # pragma: no cover (Python 3.10)
    import tomli as tomllib

NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "notebooks"
FIGURES: dict[str, list[str]] = tomllib.loads((Path(__file__).parent / "data" / "figures.toml").read_text("utf-8"))
PLACEHOLDER = re.compile(r"\{(\d\d:\w+)\}")


class Unavailable(LookupError):
    """The figure cannot be read here: this installation stores no such notebook (a wheel, Colab)."""


class NotPrinted(AssertionError):
    """The stored notebook does not print the figure: the notebook or the ledger's pattern changed."""


@lru_cache(maxsize=32)
def _outputs(path: Path, mtime: float) -> str:
    """Everything the notebook's code cells printed (stream text and plain-text results), in cell order."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    bodies = (o.get("text") or o.get("data", {}).get("text/plain", "") for c in cells for o in c.get("outputs", []))
    return "\n".join("".join(b) if isinstance(b, list) else b for b in bodies)


def read(key: str, root: Path | None = None) -> str:
    """The figure ``key`` exactly as its notebook printed it (``"744.2"``); raises :class:`Unavailable` or
    :class:`NotPrinted`."""
    if key not in FIGURES:
        raise KeyError(f"no figure {key!r}; known: {', '.join(FIGURES)}")
    where, label, pattern = FIGURES[key]
    path = next(iter(sorted(Path(root or NOTEBOOKS_DIR).glob(f"{key[:2]}_*.ipynb"))), None)
    if path is None:
        raise Unavailable(f"{key}: no stored notebook {key[:2]} here; the figure is in {where}")
    found = re.findall(rf"(?m)^[ \t]*{re.escape(label)}{pattern}", _outputs(path, path.stat().st_mtime))
    if not found:
        raise NotPrinted(f"{key}: {path.name} does not print it ({where}); re-run the notebook or fix the pattern")
    if len(found) > 1:
        raise NotPrinted(f"{key}: {path.name} prints {len(found)} lines labelled {label!r} ({where}): label it apart")
    return found[0]
