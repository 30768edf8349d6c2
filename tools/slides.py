#!/usr/bin/env python3
"""A stored notebook as reveal.js slides that work offline: build/slides/NAME.slides.html.

    python tools/slides.py 01_scaled_attention          # -> build/slides/01_scaled_attention.slides.html
    python tools/slides.py notebooks/05_rope.ipynb --out DIR

The notebook itself is not changed: a copy gets the slide metadata (``plan``), then nbconvert's reveal
template renders it with the book's bundled require.js, MathJax and widget manager plus reveal.js, all
from the npm registry, pinned (in book.py) and integrity-checked (``book.fetch``), in ``_static/`` (no
jQuery: the template's use of it, scrolling tall vertical slides, is replaced by this file's CSS).

What the copy shows: the setup cell and import-only cells are hidden; each heading starts a slide,
and so does each figure or widget (with what follows it on the next slide). Every slide fits its
WIDTH x HEIGHT box: a cell whose estimated height (``height``) would take the slide past ``FULL``
starts the next slide, and a long markdown cell is first cut into runs of paragraphs that fit; a figure
is scaled to at most ``FIGURE_PX`` tall, and gets a slide of its own, without its code, when the two do
not fit together; what is still taller than the slide (one long code cell, a
long table) scrolls inside it, with a shadow at the edge that has more. Solutions (cells tagged
``solution``) and the collapsed appendix (a heading with ``jp-MarkdownHeadingCollapsed``, up to the
next heading of its level) are left out; the Colab badge (an image from the network) becomes a link.
Each widget is live with no kernel, as in the book (``tools/live.py``).
"""

from __future__ import annotations

import argparse
import ast
import base64
import copy
import math
import re
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import book  # noqa: E402

WIDTH, HEIGHT = 1280, 720  # the slide, in CSS pixels (reveal.js scales it to the window)
FULL = 620  # estimated pixels on a slide before the next cell starts a new one (estimates run short)
FIGURE_PX = 600  # the most a figure may take of the slide's height (it is scaled down to it)
WIDGET_PX = 560  # what a widget is taken to need (its size is known only once drawn)
TEXT_PX = WIDTH - 150  # the width of a cell's output area (the slide less the prompt)
FIGURES = ("image/png", "image/svg+xml", "image/jpeg", "application/vnd.jupyter.widget-view+json")
# Measured in Chromium at this size: a line of prose (20 px type) is 30 px tall and holds about 115
# characters; a line of code or printed output (19 px) is 25 px and holds about 100; a cell adds ~20.
PROSE, PROSE_CHARS, CODE, CODE_CHARS, CELL = 30, 115, 25, 100, 20
BADGE = re.compile(r"\[!\[([^\]]*)\]\([^)]*colab-badge\.svg\)\]\(([^)]*)\)")

CSS = f"""
.reveal .slides > section:not(.stack), .reveal .slides > section > section {{  /* each slide, not a stack of them */
  max-height: {HEIGHT}px; overflow-y: auto; overflow-x: hidden; box-sizing: border-box;
  /* a shadow at the top or bottom edge while there is more to scroll to there */
  background: linear-gradient(#fff 50%, #fff0) top / 100% 48px local no-repeat,
    linear-gradient(#fff0, #fff 50%) bottom / 100% 48px local no-repeat,
    radial-gradient(farthest-side at 50% 0, #0007, #0000) top / 100% 20px scroll no-repeat,
    radial-gradient(farthest-side at 50% 100%, #0007, #0000) bottom / 100% 20px scroll no-repeat;
}}
.reveal section img {{ max-height: {FIGURE_PX}px; max-width: 100%; width: auto; height: auto; object-fit: contain; }}
.reveal .widget-image, .reveal .jupyter-widgets img, .reveal .tnb-live img {{ max-height: {WIDGET_PX - 120}px; }}
.reveal pre {{ white-space: pre-wrap; overflow-wrap: anywhere; }}
"""
TEMPLATE = (
    "{%- extends 'reveal/index.html.j2' -%}\n"
    + book.OFFLINE_BLOCKS
    + "{%- block html_head_js_jquery -%}{%- endblock html_head_js_jquery -%}\n"
    + '{%- block html_head_css -%}<style type="text/css">'
    + CSS
    + "</style>{%- endblock html_head_css -%}\n"
)


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


def _lines(text: str, chars: int) -> int:
    """Screen lines ``text`` takes when lines wrap at ``chars`` characters."""
    return sum(max(1, math.ceil(len(line) / chars)) for line in text.splitlines())


def _figure_height(png: str) -> int:
    """The height a base64 PNG is shown at: its own, scaled to the output's width, at most FIGURE_PX."""
    try:
        width, high = struct.unpack(">II", base64.b64decode(png[:44])[16:24])  # from the IHDR chunk
    except (ValueError, struct.error):  # not a PNG header: the most a figure may take
        return FIGURE_PX
    return min(FIGURE_PX, round(high * min(1, TEXT_PX / max(width, 1))))


def height(cell) -> int:
    """An estimate of the pixels ``cell`` takes on a slide (its source, and a code cell's outputs)."""
    if cell.cell_type == "markdown":
        text = "\n".join(ln for ln in cell.source.splitlines() if ln.strip())
        return CELL + PROSE * _lines(text, PROSE_CHARS) + 10 * cell.source.count("\n\n")
    px = 0 if cell.metadata.get("transient", {}).get("remove_source") else CELL + CODE * _lines(cell.source, CODE_CHARS)
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if "image/png" in data:
            px += _figure_height(data["image/png"])
        elif set(FIGURES) & set(data):
            px += WIDGET_PX
        else:
            px += CODE * _lines(out.get("text", "") or data.get("text/plain", ""), CODE_CHARS)
    return px


def _paragraphs(source: str) -> list[str]:
    """``source`` cut at its blank lines, never inside a fenced code block or ``$$`` display maths."""
    parts, current, fenced = [], [], False
    for line in source.splitlines():
        if line.strip() or fenced:
            current.append(line)
            fenced ^= line.lstrip().startswith("```") or line.count("$$") % 2 == 1
        elif current:
            parts.append("\n".join(current))
            current = []
    return parts + (["\n".join(current)] if current else [])


def split_long_markdown(cell) -> list:
    """``cell``, or copies of it that hold runs of its paragraphs, each estimated to fit a slide."""
    if cell.cell_type != "markdown" or height(cell) <= FULL:
        return [cell]
    pieces: list[list[str]] = [[]]
    for para in _paragraphs(cell.source):
        candidate = "\n\n".join([*pieces[-1], para])
        if pieces[-1] and height(type(cell)(cell, source=candidate)) > FULL:
            pieces.append([])
        pieces[-1].append(para)
    cells = [type(cell)(copy.deepcopy(cell), source="\n\n".join(paras)) for paras in pieces]
    for k, piece in enumerate(cells[1:], 1):
        piece["id"] = f"{cell.get('id', 'cell')}-{k}"
    return cells


def split_figure(cell) -> list:
    """``cell``, or, when its code and figure together would not fit a slide, its code (no outputs)
    and its outputs (no code) as two cells, so that the figure gets a slide of its own."""
    if cell.cell_type != "code" or not _has_figure(cell) or height(cell) <= HEIGHT - 50:
        return [cell]
    code, shown = copy.deepcopy(cell), copy.deepcopy(cell)
    code.outputs = []
    shown.metadata["transient"] = {"remove_source": True}
    shown["id"] = f"{cell.get('id', 'cell')}-out"
    return [code, shown]


def _skipped(cells) -> set[int]:
    """The indices of the cells the slides leave out."""
    folded = {j for start, end in book.collapsed_sections(cells) for j in range(start, end)}
    return {
        i
        for i, cell in enumerate(cells)
        if i in folded
        or not cell.source.strip()
        or "solution" in cell.metadata.get("tags", [])
        or (cell.cell_type == "code" and _is_setup(cell))
    }


def _layout(cells) -> list[str]:
    """``slide`` or ``-`` (continue) for each of the shown ``cells``."""
    kinds, size, after_figure = [], 0, False
    for cell in cells:
        figure = cell.cell_type == "code" and _has_figure(cell)
        new = not kinds or book.heading_level(cell) > 0 or figure or after_figure or size + height(cell) > FULL
        kinds.append("slide" if new else "-")
        size = height(cell) + (0 if new else size)
        after_figure = figure
    return kinds


def plan(nb) -> list[str]:
    """The ``slide_type`` of each cell of ``nb``: ``slide``, ``-`` (continue) or ``skip``."""
    skipped = _skipped(nb.cells)
    shown = iter(_layout([c for i, c in enumerate(nb.cells) if i not in skipped]))
    return ["skip" if i in skipped else next(shown) for i in range(len(nb.cells))]


def with_slides(nb):
    """A copy of ``nb`` without the cells the slides leave out (so that no hidden answer travels inside
    the page), its long cells cut to fit (``split_figure``, ``split_long_markdown``), its Colab badge a
    plain link, and the slide metadata of ``plan``."""
    out = copy.deepcopy(nb)
    skipped = _skipped(out.cells)
    shown = [c for i, c in enumerate(out.cells) if i not in skipped]
    out.cells = [piece for cell in shown for part in split_figure(cell) for piece in split_long_markdown(part)]
    for cell, kind in zip(out.cells, _layout(out.cells)):
        if cell.cell_type == "markdown":
            cell.source = BADGE.sub(r"[\1](\2)", cell.source)
        cell.metadata["slideshow"] = {"slide_type": kind}
    return out


def render(paths: list[Path], out_dir: Path) -> list[Path]:
    """``out_dir/NAME.slides.html`` of each stored notebook of ``paths``, with their JavaScript in ``out_dir/_static``
    (copied, and the template compiled, once for all)."""
    import nbformat

    out_dir.mkdir(parents=True, exist_ok=True)
    urls = book.vendor(out_dir, (*book.BOOK_PACKAGES, *book.SLIDE_PACKAGES), book.VENDOR_CACHE)
    exporter = book.exporter(
        "slides",
        TEMPLATE,
        **book.offline_urls(urls),
        reveal_url_prefix=urls[book.REVEAL.name],
        reveal_theme="white",
        reveal_width=str(WIDTH),
        reveal_height=str(HEIGHT),
    )
    targets = []
    for path in paths:
        nb = with_slides(nbformat.read(path, as_version=4))
        book.live.make_live(nb, path.stem, out_dir, ort=book.ort_files)
        body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
        targets.append(out_dir / f"{path.stem}.slides.html")
        targets[-1].write_text(body, encoding="utf-8")
    return targets


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
    [target] = render([path], args.out.resolve())
    print(f"slides: open {target}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, book.IntegrityError) as err:
        sys.exit(f"slides: {err}")
