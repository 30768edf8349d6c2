#!/usr/bin/env python3
"""A stored notebook as reveal.js slides that work offline: build/slides/NAME.slides.html.

    python tools/slides.py 01_scaled_attention          # -> build/slides/01_scaled_attention.slides.html
    python tools/slides.py notebooks/05_rope.ipynb --out DIR

The notebook itself is not changed: a copy gets the slide metadata (``plan``), then nbconvert's reveal
template renders it with the book's bundled require.js, MathJax and widget manager plus reveal.js and
jQuery, all from the npm registry, pinned (in book.py) and integrity-checked (``book.fetch``), in ``_static/``.

What the copy shows: the setup cell and import-only cells are hidden; each heading starts a slide,
and so does each figure or widget (with what follows it on the next slide); a slide that has grown
past ``MAX_CHARS`` of source starts a new one at its next markdown cell. Solutions (cells tagged
``solution``) and the collapsed appendix (a heading with ``jp-MarkdownHeadingCollapsed``, up to the
next heading of its level) are left out.
"""

from __future__ import annotations

import argparse
import ast
import copy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import book  # noqa: E402

MAX_CHARS = 1400  # source characters on one slide before the next markdown cell starts a new one
FIGURES = ("image/png", "image/svg+xml", "image/jpeg", "application/vnd.jupyter.widget-view+json")


TEMPLATE = "{%- extends 'reveal/index.html.j2' -%}\n" + book.OFFLINE_BLOCKS


def _is_setup(cell) -> bool:
    """The notebook's setup cell (Colab install, ``setup(...)``), or a cell that opens with an import
    and shows nothing (the imports and the settings after them)."""
    src = cell.source
    if "google.colab" in src or "setup(" in src:
        return True
    lines = [ln for ln in src.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return False
    starts_with_import = bool(tree.body) and isinstance(tree.body[0], (ast.Import, ast.ImportFrom))
    return starts_with_import and not cell.get("outputs")


def _has_figure(cell) -> bool:
    return any(set(FIGURES) & set(o.get("data", {})) for o in cell.get("outputs", []))


def plan(nb) -> list[str]:
    """The ``slide_type`` of each cell of ``nb``: ``slide``, ``-`` (continue) or ``skip``."""
    cells, kinds = nb.cells, []
    folded = {j for start, end in book.collapsed_sections(cells) for j in range(start, end)}
    size, after_figure = 0, False
    for i, cell in enumerate(cells):
        src = cell.source
        if (
            i in folded
            or not src.strip()
            or "solution" in cell.metadata.get("tags", [])
            or (cell.cell_type == "code" and _is_setup(cell))
        ):
            kinds.append("skip")
            continue
        heading = book.heading_level(cell) > 0
        figure = cell.cell_type == "code" and _has_figure(cell)
        full = size > MAX_CHARS and cell.cell_type == "markdown"
        new = not kinds or heading or figure or after_figure or full or all(k == "skip" for k in kinds)
        kinds.append("slide" if new else "-")
        size = len(src) if new else size + len(src)
        after_figure = figure
    return kinds


def with_slides(nb):
    """A copy of ``nb`` with the slide metadata of ``plan``; skipped cells are dropped (so that no
    hidden answer travels inside the page)."""
    out = copy.deepcopy(nb)
    kept = []
    for cell, kind in zip(out.cells, plan(out)):
        if kind != "skip":
            cell.metadata["slideshow"] = {"slide_type": kind}
            kept.append(cell)
    out.cells = kept
    return out


def render(path: Path, out_dir: Path) -> Path:
    """``out_dir/NAME.slides.html`` of the stored notebook ``path``, with its JavaScript in ``out_dir/_static``."""
    import nbformat

    out_dir.mkdir(parents=True, exist_ok=True)
    urls = book.vendor(out_dir, (*book.BOOK_PACKAGES, *book.SLIDE_PACKAGES), book.VENDOR_CACHE)
    exporter = book.exporter(
        "slides",
        TEMPLATE,
        **book.offline_urls(urls),
        reveal_url_prefix=urls[book.REVEAL.name],
        jquery_url=f"{urls[book.JQUERY.name]}/dist/jquery.min.js",
        reveal_scroll=True,
        reveal_theme="white",
    )
    nb = with_slides(nbformat.read(path, as_version=4))
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
    target = out_dir / f"{path.stem}.slides.html"
    target.write_text(body, encoding="utf-8")
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", help="a stored notebook: NAME, notebooks/NAME.ipynb or a path")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "slides")
    args = parser.parse_args(argv)
    path = Path(args.notebook)
    if not path.is_file():
        path = ROOT / "notebooks" / f"{path.stem}.ipynb"
    if not path.is_file():
        known = ", ".join(p.stem for p in book.stored_notebooks())
        print(f"slides: no stored notebook {args.notebook!r}; one of: {known}", file=sys.stderr)
        return 2
    target = render(path, args.out.resolve())
    print(f"slides: open {target}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, book.IntegrityError) as err:
        sys.exit(f"slides: {err}")
