"""The slides of a stored notebook (tools/slides.py) in a real browser, with the network blocked:
reveal.js starts from the bundled files, every slide is stepped through and photographed
(``build/screenshots/slides_NN.png``), and what the slides must leave out is not there.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "tools"))
from static_site import bundled, offline_page, serve  # noqa: E402
from test_widgets_in_browser import ROOT, SHOTS  # noqa: E402

NOTEBOOK = ROOT / "notebooks" / "01_scaled_attention.ipynb"
SLIDES = """() => Reveal.getSlides().map(s => ({
  text: s.textContent,
  widget: !!s.querySelector('script[type="application/vnd.jupyter.widget-view+json"]'),
  exercises: [...s.querySelectorAll('h1, h2, h3, h4')].filter(h => /^Exercise/.test(h.textContent.trim())).length,
}))"""


@pytest.fixture(scope="module")
def deck(tmp_path_factory):
    import slides

    if not NOTEBOOK.exists():
        pytest.skip(f"{NOTEBOOK.name} is not stored")
    out = tmp_path_factory.mktemp("slides")
    target = bundled(lambda: slides.render(NOTEBOOK, out))
    with serve(out) as url, offline_page(url, viewport=(1280, 800)) as page:
        page.goto(f"{url}/{target.name}", wait_until="load")
        page.locator(".reveal.ready").wait_for(state="attached", timeout=30_000)
        module = f"{Path(slides.book.STATIC) / slides.book.REVEAL.folder}/dist/reveal.js"
        page.evaluate(f"() => {{ window.Reveal = require('{module}'); }}")  # the template keeps it local
        yield page


def test_each_slide_is_stepped_through_and_photographed(deck):
    page = deck
    SHOTS.mkdir(parents=True, exist_ok=True)
    for old in SHOTS.glob("slides_*.png"):
        old.unlink()
    page.evaluate("() => Reveal.configure({transition: 'none', backgroundTransition: 'none'})")  # no half-way shots
    total = page.evaluate("() => Reveal.getTotalSlides()")
    assert total >= 15, f"only {total} slides"
    seen = []
    for k in range(total):
        seen.append(page.evaluate("() => Reveal.getIndices().h"))
        page.screenshot(path=str(SHOTS / f"slides_{k + 1:02d}.png"))
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(50)
    assert seen == list(range(total)), f"the arrow key visited {seen}"
    assert not page.missing and not [u for u in page.blocked if "_static" in u], (page.missing, page.blocked)


def test_setup_solutions_and_appendix_are_left_out(deck):
    texts = [s["text"] for s in deck.evaluate(SLIDES)]
    whole = "\n".join(texts)
    for hidden in ("google.colab", "setup(", "import torch", "Solution", "Appendix"):
        assert hidden not in whole, f"{hidden!r} is on a slide"


def test_each_exercise_has_its_own_slide_and_the_widget_draws(deck):
    slides = deck.evaluate(SLIDES)
    exercises = [s["exercises"] for s in slides if s["exercises"]]
    assert len(exercises) >= 3 and set(exercises) == {1}, f"exercise headings per slide: {exercises}"
    with_widget = [k for k, s in enumerate(slides) if s["widget"]]
    assert with_widget, "no slide holds the widget"
    deck.evaluate(f"() => Reveal.slide({with_widget[0]})")
    deck.locator("section.present img.widget-image").first.wait_for(timeout=30_000)
    formulas = deck.evaluate("() => document.querySelectorAll('.MathJax_CHTML').length")
    assert formulas > 0, "MathJax drew no formula"
