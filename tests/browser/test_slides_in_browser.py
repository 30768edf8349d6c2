"""The slides of the stored notebooks (tools/slides.py) in a real browser, with the network blocked:
reveal.js starts from the bundled files, every slide of notebook 01 is stepped through (three photographed:
``build/screenshots/slides_NN.png``), what the slides must leave out is not there, and every slide of
every notebook fits its slide (or scrolls inside it, with the cue) and shows no broken image.
All the decks are built into one folder and opened in one browser.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "tools"))
from static_site import bundled, offline_page, serve  # noqa: E402
from test_widgets_in_browser import ROOT, SHOTS  # noqa: E402

NOTEBOOK = ROOT / "notebooks" / "01_scaled_attention.ipynb"
SCROLLING_AT_MOST = 0.15  # of all slides: more means the splitting has stopped working
SLIDES = """() => Reveal.getSlides().map(s => ({
  text: s.textContent,
  widget: !!s.querySelector(".tnb-live"),
  exercises: [...s.querySelectorAll('h1, h2, h3, h4')].filter(h => /^Exercise/.test(h.textContent.trim())).length,
}))"""
LIVE_MOVE = """() => { const el = document.querySelector('section.present .tnb-live [data-c="0"]');
  el.value = String((Number(el.value) + 1) % (Number(el.max) + 1)); el.dispatchEvent(new Event('input')); }"""
#: All slides laid out at once (in reveal.js's view distance), formulas typeset again as when shown (boxes as when
#: shown one by one, to MathJax's 1-4 px), then measured: box, content, scrolling, in the slide's own pixels.
FIT = """async () => { Reveal.configure({viewDistance: 1000}); const all = document.querySelector('.reveal .slides');
  await new Promise(done => MathJax.Hub.Queue(['Rerender', MathJax.Hub, all], done)); Reveal.layout();
  return Reveal.getSlides().map((s, k) => { const style = getComputedStyle(s);
  return {k, top: s.offsetTop, box: s.offsetHeight, client: s.clientHeight, content: s.scrollHeight,
          wide: s.scrollWidth > s.clientWidth + 1, scrolls: ['auto', 'scroll'].includes(style.overflowY),
          cue: style.backgroundImage.includes('gradient'), start: s.textContent.trim().slice(0, 50)};
})}"""
BROKEN_IMAGES = "() => [...document.images].filter(i => !i.naturalWidth).map(i => i.src.slice(0, 80))"
WIDGET = "script[type='application/vnd.jupyter.widget-view+json']"


def open_deck(page, url: str, target: Path) -> None:
    """``target`` in ``page``, once reveal.js has started and MathJax has typeset; ``window.Reveal`` set."""
    import slides

    page.goto(f"{url}/{target.name}", wait_until="load")
    page.locator(".reveal.ready").wait_for(state="attached", timeout=30_000)
    module = f"{Path(slides.book.STATIC) / slides.book.REVEAL.folder}/dist/reveal.js"
    page.evaluate(f"() => {{ window.Reveal = require('{module}'); }}")  # the template keeps it local
    page.evaluate("() => Reveal.configure({transition: 'none', backgroundTransition: 'none'})")  # no half-way
    page.wait_for_function("() => window.MathJax && MathJax.isReady", timeout=30_000)
    # the pages set MathJax.Hub.processSectionDelay = 0 (tools/book.py): by default MathJax pauses 50 ms before each
    # queued typeset, and the widget manager queues one per widget label (a deck with 14 widgets waited 12 s, idle)
    page.evaluate("() => new Promise(done => MathJax.Hub.Queue(done))")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Every stored notebook's slides in one folder, served, and one offline Chromium page."""
    import slides

    if not NOTEBOOK.exists():
        pytest.skip(f"{NOTEBOOK.name} is not stored")
    out = tmp_path_factory.mktemp("slides")
    targets = bundled(lambda: slides.render(slides.book.stored_notebooks(), out))
    with serve(out) as url, offline_page(url, viewport=(1280, 800)) as page:
        page.errors = []
        page.on("pageerror", lambda err: page.errors.append(str(err)))
        yield {"url": url, "page": page, "targets": targets}


@pytest.fixture
def deck(site):
    """The page showing notebook 01's slides (opened once, kept while no other deck is opened)."""
    page, target = site["page"], next(t for t in site["targets"] if t.name.startswith(NOTEBOOK.stem))
    if not page.url.split("#")[0].endswith(target.name):
        open_deck(page, site["url"], target)
    return page


def test_each_slide_is_stepped_through_and_photographed(deck):
    page = deck
    SHOTS.mkdir(parents=True, exist_ok=True)
    for old in SHOTS.glob("slides_*.png"):
        old.unlink()
    page.evaluate("() => Reveal.slide(0)")
    total = page.evaluate("() => Reveal.getTotalSlides()")
    assert total >= 15, f"only {total} slides"
    seen = []
    for k in range(total):
        seen.append(page.evaluate("() => Reveal.getIndices().h"))
        if k in (0, total // 2, total - 1):  # a few photographs: each costs a full repaint
            page.screenshot(path=str(SHOTS / f"slides_{k + 1:02d}.png"))
        page.keyboard.press("ArrowRight")
    assert seen == list(range(total)), f"the arrow key visited {seen}"
    assert not page.missing and not page.blocked, (page.missing, page.blocked)


def test_setup_solutions_and_appendix_are_left_out(deck):
    texts = [s["text"] for s in deck.evaluate(SLIDES)]
    whole = "\n".join(texts)
    for hidden in ("google.colab", "setup(", "import torch", "Solution", "Appendix"):
        assert hidden not in whole, f"{hidden!r} is on a slide"


def test_each_exercise_has_its_own_slide_and_the_widget_is_live(deck):
    slides = deck.evaluate(SLIDES)
    exercises = [s["exercises"] for s in slides if s["exercises"]]
    assert len(exercises) >= 3 and set(exercises) == {1}, f"exercise headings per slide: {exercises}"
    with_widget = [k for k, s in enumerate(slides) if s["widget"]]
    assert with_widget, "no slide holds the widget"
    deck.evaluate(f"() => Reveal.slide({with_widget[0]})")
    img = deck.locator("section.present .tnb-live img").first
    img.wait_for(timeout=30_000)
    before = img.get_attribute("src")
    deck.evaluate(LIVE_MOVE)
    assert img.get_attribute("src") != before, "moving the widget's first control left its figure as it was"
    formulas = deck.evaluate("() => document.querySelectorAll('.MathJax_CHTML').length")
    assert formulas > 0, "MathJax drew no formula"


def test_every_slide_of_every_notebook_fits_its_slide_and_every_image_loads(site):
    """Nothing is cut off: each slide's box lies within the slide, and content taller than the box
    scrolls inside it, with the shadow that says so; nothing is wider than the slide; each image
    loads with the network blocked. Few slides need the scroll (long cells, long tables)."""
    import slides

    page, t0, faults, scrolling, total, report = site["page"], time.monotonic(), [], 0, 0, []
    for target in site["targets"]:
        open_deck(page, site["url"], target)
        if page.locator(WIDGET).count():  # the widget manager draws them after the page has loaded
            page.locator(".jupyter-widgets").first.wait_for(state="attached", timeout=30_000)
        page.wait_for_function("() => [...document.images].every(i => i.complete)", timeout=30_000)
        rows, name = page.evaluate(FIT), target.name.split(".")[0]
        for r in rows:
            where = f"{name} slide {r['k'] + 1} ({r['start']!r})"
            if r["top"] < 0 or r["top"] + r["box"] > slides.HEIGHT + 1:
                faults.append(f"{where}: its box spans {r['top']}..{r['top'] + r['box']} px of {slides.HEIGHT}")
            if r["content"] > r["client"] + 1 and not (r["scrolls"] and r["cue"]):
                faults.append(f"{where}: {r['content']} px of content in {r['client']} px, cut off")
            if r["wide"]:
                faults.append(f"{where}: wider than the slide, cut off")
        faults += [f"{name}: the image {src} does not load offline" for src in page.evaluate(BROKEN_IMAGES)]
        tall = [r for r in rows if r["content"] > r["client"] + 1]
        scrolling, total = scrolling + len(tall), total + len(rows)
        report.append(f"{name}: {len(rows)} slides, {len(tall)} scroll, tallest {max(r['content'] for r in rows)} px")
    print(f"\n{len(site['targets'])} decks measured in {time.monotonic() - t0:.0f} s:", *report, sep="\n  ")
    assert not faults, "\n".join(faults)
    assert not page.blocked and not page.missing and not page.errors, (page.blocked, page.missing, page.errors)
    assert scrolling <= SCROLLING_AT_MOST * total, f"{scrolling} of {total} slides scroll:\n" + "\n".join(report)
