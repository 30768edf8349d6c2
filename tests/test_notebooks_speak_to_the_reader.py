"""No notebook speaks about the project instead of to the reader: no issue numbers, no phases, no "the
project's ..." or "this project", in any twin (notebooks/py/*.py) or stored notebook (sources and outputs).
A planted sentence of each kind is found."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TWINS = sorted((ROOT / "notebooks" / "py").glob("*.py"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

#: Project-internal language: what a reader of the book cannot know or use.
INTERNAL = re.compile(
    r"\bissues?\s*#?\d+|\bphases?\s*\d+|\bthe project'?s\b|\bthis project\b|\bof the project\b",
    re.IGNORECASE,
)


def internal_language(text: str) -> list:
    """Each line of ``text`` that speaks about the project, with what matched."""
    return [
        f"line {i}: {m.group(0)!r} in {line.strip()[:100]!r}"
        for i, line in enumerate(text.splitlines(), 1)
        if (m := INTERNAL.search(line))
    ]


def _notebook_text(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    parts = []
    for cell in nb["cells"]:
        parts.append("".join(cell.get("source", [])))
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", [])))
            for data in out.get("data", {}).values():
                parts.append("".join(data) if isinstance(data, list) else str(data))
    return "\n".join(parts)


@pytest.mark.parametrize("path", TWINS + NOTEBOOKS, ids=[p.name for p in TWINS + NOTEBOOKS])
def test_a_notebook_speaks_to_the_reader(path):
    found = internal_language(_notebook_text(path) if path.suffix == ".ipynb" else path.read_text(encoding="utf-8"))
    assert not found, f"{path.name} speaks about the project:\n" + "\n".join(found)


PLANTED = [
    "the project's issue 5",
    "see issue #24",
    "phase 2 of this project",
    "Phase 3 re-measures",
    "Issues 12 and 13",
]
ORDINARY = ["the phase of the sinusoid", "this issue of the journal", "projection W_O", "project with out_proj"]


@pytest.mark.parametrize("sentence", PLANTED + ORDINARY)
def test_internal_language_is_found_and_ordinary_words_are_not(sentence):
    assert bool(internal_language(f"# A fine line.\n# {sentence}.\n")) == (sentence in PLANTED)
