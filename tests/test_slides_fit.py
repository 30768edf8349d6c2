"""tools/slides.py cuts a notebook into slides that fit: long prose is split at its paragraphs, a long
figure cell gives its figure a slide of its own, and the Colab badge (an image from the network) becomes
a link. The browser test (tests/browser/test_slides_in_browser.py) measures the result in Chromium."""

from __future__ import annotations

import base64
import struct
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import slides

md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell


def slides_of(cells) -> list[list]:
    """The kept cells of ``cells``, grouped by slide."""
    out = []
    for cell in slides.with_slides(nbformat.v4.new_notebook(cells=cells)).cells:
        if cell.metadata.slideshow["slide_type"] == "slide":
            out.append([])
        out[-1].append(cell)
    return out


def png(width: int, height: int) -> str:
    header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", width, height) + b"\x08\x06\x00\x00\x00"
    return base64.b64encode(header).decode()


def test_long_prose_is_cut_at_paragraphs_into_slides_that_fit_and_keeps_fenced_blocks_whole():
    para = "A sentence that goes on for a while, as prose does in a notebook that explains itself. " * 3
    fence = "```\nfirst line\n\nsecond line after a blank\n```"
    maths = "$$\nx = 1\n\ny = 2\n$$"
    source = "\n\n".join(["## 1 · A long section", *[para] * 12, fence, maths, *[para] * 12])
    deck = slides_of([md("# Title"), md(source)])
    assert len(deck) >= 3, f"{len(deck)} slides"
    assert deck[1][0].source.startswith("## 1 · A long section")
    assert all(sum(slides.height(c) for c in s) <= slides.FULL for s in deck)
    pieces = [c.source for s in deck[1:] for c in s]
    assert "\n\n".join(pieces) == source, "the text is changed, not only cut"
    assert any(fence in p for p in pieces) and any(maths in p for p in pieces), "a fenced block was cut"
    assert len({c.id for s in deck for c in s}) == sum(map(len, deck)), "two cells share an id"


def test_short_cells_share_a_slide_until_it_is_full():
    deck = slides_of([md("## A heading"), *[md(f"Paragraph {k}. " * 20) for k in range(30)]])
    assert len(deck) > 2 and all(len(s) > 1 for s in deck[:-1])
    assert all(sum(slides.height(c) for c in s) <= slides.FULL for s in deck)


def test_a_long_figure_cell_gives_its_figure_a_slide_of_its_own():
    figure = code("\n".join(["import matplotlib.pyplot as plt", *(f"plt.plot(x, y{k})" for k in range(20))]))
    figure.outputs = [nbformat.v4.new_output("display_data", data={"image/png": png(800, 500), "text/plain": "F"})]
    short = code("plot()")
    short.outputs = figure.outputs
    deck = slides_of([md("## Figures"), figure, short])
    code_part, figure_part = deck[0][-1], deck[1][0]
    assert code_part.source == figure.source and not code_part.outputs, (
        "code that opens with an import was hidden as setup"
    )
    assert figure_part.metadata["transient"] == {"remove_source": True} and figure_part.outputs == figure.outputs
    [kept] = deck[2]
    assert kept.source == "plot()" and kept.outputs == short.outputs, "a short figure cell keeps its code"
    assert "transient" not in kept.metadata


def test_figures_are_estimated_at_their_shown_height():
    shown = code("plot()")
    shown.outputs = [nbformat.v4.new_output("display_data", data={"image/png": png(2 * slides.TEXT_PX, 400)})]
    alone = slides.height(shown) - slides.height(code("plot()"))
    assert alone == 200, "a figure twice as wide as the output is shown at half its height"
    shown.outputs[0]["data"]["image/png"] = png(400, 5000)
    assert slides.height(shown) - slides.height(code("plot()")) == slides.FIGURE_PX


def test_the_colab_badge_becomes_a_link():
    url = "https://colab.research.google.com/github/o/r/blob/main/notebooks/01_x.ipynb"
    badge = f"[![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})"
    [[title]] = slides_of([md(f"# 01 · Title\n\n{badge}\n\nWhat it is.")])
    assert title.source == f"# 01 · Title\n\n[Open in Colab]({url})\n\nWhat it is."
