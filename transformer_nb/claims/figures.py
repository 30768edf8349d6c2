"""Figures that the notebooks produce (perplexities, timings, accuracies), read from their stored outputs.

A ledger entry never types such a figure in: it writes ``{10:ex89_ppl_lstm}`` and :func:`fill` puts in what
notebook 10 last printed, so a re-executed notebook updates the ledger. Where there is no ``notebooks/`` folder
(a wheel, Colab), or the notebook does not print the figure, the text says where the figure lives instead.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "notebooks"

# key -> (where a reader finds it, the label the notebook prints the figure under, the pattern that follows the
# label: its first group is the figure). The label must start a printed line (after indentation), and exactly one
# place in the notebook's output may match label and pattern: a figure is read by its own label, never from the
# first line that looks like it (the 30-epoch run, not the ladder's row of the same recipe).
FIGURES: dict[str, tuple[str, str, str]] = {
    "02:unmasked_rule_kept": ("notebook 02 §4", "without mask:", r"[^\n]*\n\s*rule kept:[^(\n]*\(([\d.]+)% of"),
    "09:text_exact": ("notebook 09 §9", "the text's recipe after 30 epochs", r" \(\d+ steps\): exact match ([\d.]+)%"),
    "09:text_demo": (
        "notebook 09 §9",
        "the text's recipe after 30 epochs",
        r" decodes its demo \[3, 5, 7, 9, 4\] to (\[[\d, ]+\])",
    ),
    "09:improved_steps": (
        "notebook 09 §9",
        "+ Xavier on embeddings only, ReLU (= improved)",
        r"\s+reached 99\.9% at step (\d+)",
    ),
    "10:ex89_ppl_transformer": ("notebook 10 §3", "Transformer", r"\s+training perplexity\s+([\d.]+),"),
    "10:ex89_ppl_lstm": ("notebook 10 §3", "LSTM", r"\s+training perplexity\s+([\d.]+),"),
    "10:ex89_s_transformer": (
        "notebook 10 §3",
        "Transformer",
        r"\s+training perplexity\s+[\d.]+,\s+([\d.]+) s per epoch",
    ),
    "10:ex89_s_lstm": ("notebook 10 §3", "LSTM", r"\s+training perplexity\s+[\d.]+,\s+([\d.]+) s per epoch"),
    "10:valid_transformer": ("notebook 10 §5", "Transformer", r"\s+([\d.]+)\s+[\d.]+[ \t]*$"),
    "10:valid_lstm": ("notebook 10 §5", "LSTM", r"\s+([\d.]+)\s+[\d.]+[ \t]*$"),
}
PLACEHOLDER = re.compile(r"\{(\d\d:\w+)\}")


class Unavailable(LookupError):
    """The figure cannot be read here: this installation stores no such notebook (a wheel, Colab)."""


class NotPrinted(AssertionError):
    """The stored notebook does not print the figure: the notebook or the ledger's pattern changed."""


def _notebook(nb: str, root: Path) -> Path | None:
    found = sorted(root.glob(f"{nb}_*.ipynb"))
    return found[0] if found else None


@lru_cache(maxsize=32)
def _outputs(path: Path, mtime: float) -> str:
    """Everything the notebook's code cells printed (stream text and plain-text results), in cell order."""
    out = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for o in cell.get("outputs", []):
            body = o.get("text") or o.get("data", {}).get("text/plain", "")
            out.append("".join(body) if isinstance(body, list) else body)
    return "\n".join(out)


def read(key: str, root: Path | None = None) -> str:
    """The figure ``key`` exactly as its notebook printed it (``"744.2"``); raises :class:`Unavailable` or
    :class:`NotPrinted`."""
    if key not in FIGURES:
        raise KeyError(f"no figure {key!r}; known: {', '.join(FIGURES)}")
    where, label, pattern = FIGURES[key]
    path = _notebook(key[:2], Path(root or NOTEBOOKS_DIR))
    if path is None:
        raise Unavailable(f"{key}: no stored notebook {key[:2]} here; the figure is in {where}")
    found = re.findall(rf"(?m)^[ \t]*{re.escape(label)}{pattern}", _outputs(path, path.stat().st_mtime))
    if not found:
        raise NotPrinted(f"{key}: {path.name} does not print it ({where}); re-run the notebook or fix the pattern")
    if len(found) > 1:
        raise NotPrinted(f"{key}: {path.name} prints {len(found)} lines labelled {label!r} ({where}): label it apart")
    return found[0]


def value(key: str, root: Path | None = None) -> float:
    """The figure as a number."""
    return float(read(key, root))


def fill(text: str, root: Path | None = None, here: str | None = None) -> str:
    """``text`` with every ``{NN:key}`` replaced by the stored figure, or by where to find it. In notebook ``here``
    its own figures are pointed to, not quoted: the reader sees them above, and the stored copy may be a run older."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str with {{NN:key}} placeholders, got {type(text).__name__}")

    def one(m: re.Match) -> str:
        key = m.group(1)
        if key[:2] == here:
            return f"(the figure in {FIGURES[key][0]}, above)"
        try:
            return read(key, root)
        except (Unavailable, NotPrinted):
            return f"(the figure in {FIGURES[key][0]})"

    return PLACEHOLDER.sub(one, text)
