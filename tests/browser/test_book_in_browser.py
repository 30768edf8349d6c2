"""The rendered book (tools/book.py) in a real browser, with the network blocked: the contents page,
previous / next, the table of contents, the folded appendix, every widget live with no kernel (on its
own page and on the lecture page) and the maths typeset, all from the files next to the pages.

The pages that show a widget, the lecture page, the first and the last stored notebook and the first
one with a collapsed appendix are rendered once into a temporary folder (the widgets' frames come from
the cache in ``build/frames``, computed when missing), served on localhost and opened in headless
Chromium (as in test_widgets_in_browser.py) that may reach nothing else.
Screenshots: ``build/screenshots/book_*.png``.

require.js, MathJax and the widget manager are the pinned npm packages of ``book.BOOK_PACKAGES``,
fetched once into ``build/vendor`` (``make book-cdn``); where they are not there and cannot be
downloaded, the test skips and says so.
"""

from __future__ import annotations

import hashlib
import io
import json
import statistics
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "tools"))
from static_site import bundled, offline_page, serve  # noqa: E402
from test_widgets_in_browser import ROOT, SHOTS  # noqa: E402

from transformer_nb.widgets.catalog import WIDGETS, build  # noqa: E402

LIVE = [e for e in WIDGETS if e.needs is None]  # the model widgets (09, 10) are tools/live_models.py's
LECTURE = "14_lecture"
REDRAW_MS = 50


@pytest.fixture(scope="module")
def book_site(tmp_path_factory):
    import book

    stored = book.stored_notebooks()
    if not stored:
        pytest.skip("no stored notebooks to render")
    folded = next((p for p in stored if "jp-MarkdownHeadingCollapsed" in p.read_text(encoding="utf-8")), None)
    live = {p for p in stored if p.stem in {e.notebook for e in LIVE} or p.stem == LECTURE}
    chosen = sorted({stored[0], stored[-1], *live, *([folded] if folded else [])})
    out = tmp_path_factory.mktemp("book")
    rt = ROOT / "notebooks" / "runtimes.json"
    bundled(lambda: book.build(chosen, out, json.loads(rt.read_text()) if rt.exists() else {}))
    with serve(out) as url:
        yield {"url": url, "pages": [p.stem for p in chosen], "folded": folded}


@pytest.fixture(scope="module")
def book_page(book_site):
    with offline_page(book_site["url"]) as page:
        yield page


def _shot(page, name: str):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"book_{name}.png"))


def test_contents_and_navigation(book_site, book_page):
    page, url, pages = book_page, book_site["url"], book_site["pages"]
    page.goto(f"{url}/index.html", wait_until="load")
    rows = page.locator("tbody tr")
    assert rows.count() == len(pages)
    assert all(rows.nth(i).locator(".tnb-summary").inner_text().strip() for i in range(len(pages))), (
        "a summary is empty"
    )
    _shot(page, "index")
    rows.first.locator("a.tnb-title").click()
    page.wait_for_url(f"{url}/{pages[0]}.html")
    _shot(page, "page")
    page.locator(".tnb-pager.tnb-top a[rel=next]").click()  # next, then previous: back where we were
    page.wait_for_url(f"{url}/{pages[1]}.html")
    page.locator(".tnb-pager.tnb-top a[rel=prev]").click()
    page.wait_for_url(f"{url}/{pages[0]}.html")
    toc = page.locator("nav.tnb-side li.tnb-h2 a")
    assert toc.count() >= 2, "the table of contents lists fewer than two sections"
    target = toc.nth(1).get_attribute("href")
    toc.nth(1).click()
    page.wait_for_url(f"{url}/{pages[0]}.html{target}")
    heading = page.locator(f"[id='{target[1:]}']")
    assert heading.is_visible() and heading.bounding_box()["y"] < 900, "the section is not scrolled into view"
    page.locator("nav.tnb-side a.tnb-home").click()
    page.wait_for_url(f"{url}/index.html")


def test_the_appendix_opens_on_click(book_site, book_page):
    if book_site["folded"] is None:
        pytest.skip("no stored notebook has a collapsed appendix yet (phase 2 adds them)")
    page = book_page
    page.goto(f"{book_site['url']}/{book_site['folded'].stem}.html", wait_until="load")
    fold = page.locator("details.tnb-fold").first
    assert fold.get_attribute("open") is None
    inside = fold.locator(".jp-Cell").first
    assert not inside.is_visible()
    fold.locator("summary").click()
    assert fold.get_attribute("open") is not None and inside.is_visible()
    fold.scroll_into_view_if_needed()
    _shot(page, "appendix")


TYPESET = """() => new Promise(done => MathJax.Hub.Queue(() => done([
  document.querySelectorAll('script[type^="math/tex"]').length,
  document.querySelectorAll('.MathJax_CHTML').length,
  document.querySelectorAll('.MathJax_Error, .merror').length])))"""


def typeset(page) -> tuple[int, int, int]:
    """Once MathJax has typeset the page: (formulas it found, formulas drawn, errors)."""
    page.wait_for_function("() => window.MathJax && window.MathJax.Hub && window.MathJax.isReady", timeout=30_000)
    return tuple(page.evaluate(TYPESET))


def test_widgets_and_maths_render_offline(book_site, book_page):
    """Every chosen page's stored widgets (progress bars) are drawn, every page with maths typesets it, and
    no file the pages ask for is missing, while nothing outside localhost can be reached."""
    page, widgets, maths = book_page, 0, 0
    for name in book_site["pages"]:
        page.goto(f"{book_site['url']}/{name}.html", wait_until="load")
        widgets += page.locator(".tnb-live").count()
        if page.locator("script[type='application/vnd.jupyter.widget-view+json']").count():  # progress bars
            try:
                page.locator(".jupyter-widgets").first.wait_for(timeout=30_000)
            except Exception:
                raise AssertionError(f"{name}: a stored widget was not drawn offline") from None
        parsed, shown, errors = typeset(page)
        assert parsed == shown, f"{name}: {parsed} formulas found, {shown} rendered"
        assert not errors, f"{name}: MathJax reports {errors} errors"
        if shown and not maths:
            page.locator(".MathJax_CHTML").first.scroll_into_view_if_needed()
            _shot(page, "maths")
        maths += shown
    assert not page.missing, f"the pages ask for files the book does not have: {page.missing}"
    assert widgets, "none of the rendered pages shows a widget"
    assert maths, "none of the rendered pages has maths"
    assert not [u for u in page.blocked if "_static" in u], "a bundled file was requested from outside"


MOVE = """async (name) => {
  const root = document.querySelector(`.tnb-live[data-widget="${name}"]`);
  await Promise.all(root.tnbFrames.filter(Boolean).map((im) => im.decode()));
  const el = root.querySelector('[data-c="0"]'), img = root.querySelector('.tnb-live-img');
  const n = el.type === 'checkbox' ? 2 : el.tagName === 'SELECT' ? el.options.length : Number(el.max) + 1;
  const set = (i) => {
    if (el.type === 'checkbox') el.checked = i === 1; else el.value = String(i);
    el.dispatchEvent(new Event('input', {bubbles: true}));
  };
  const times = [], shown = new Set();
  let i = el.type === 'checkbox' ? Number(el.checked) : Number(el.value);
  for (let r = 0; r < 10; r++) {
    i = (i + 1) % n;
    const t0 = performance.now();
    set(i);
    if (img.style.display !== 'none') await img.decode();
    await new Promise(requestAnimationFrame);
    times.push(performance.now() - t0);
    shown.add(img.src);
  }
  return {times, n, shown: shown.size};
}"""

SHOWN = """async ([name, i]) => {
  const root = document.querySelector(`.tnb-live[data-widget="${name}"]`);
  const el = root.querySelector('[data-c="0"]'), img = root.querySelector('.tnb-live-img');
  if (el.type === 'checkbox') el.checked = i === 1; else el.value = String(i);
  el.dispatchEvent(new Event('input', {bubbles: true}));
  await img.decode();
  const canvas = document.createElement('canvas');
  [canvas.width, canvas.height] = [img.naturalWidth, img.naturalHeight];
  const ctx = canvas.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const rgba = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', rgba));
  return {values: root.tnbValues(), size: [canvas.width, canvas.height],
          sha: Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')};
}"""


def python_side(entry, values: dict) -> tuple[list, str]:
    """The widget as JupyterLab draws it for ``values``: its PNG's size and the SHA-256 of its RGBA pixels."""
    key = (entry.name, json.dumps(values, sort_keys=True))
    if key not in DRAWN:  # the lecture page shows the same settings again
        DRAWN[key] = _draw(entry, values)
    return DRAWN[key]


DRAWN = {}


def _draw(entry, values: dict) -> tuple[list, str]:
    import matplotlib

    matplotlib.use("Agg")
    from PIL import Image

    w = build(entry)
    w.refresh()
    for name, v in values.items():
        w.controls[name].value = v
    assert w.error is None, f"{entry.name} {values}: {w.error}"
    im = Image.open(io.BytesIO(w.png())).convert("RGBA")
    return list(im.size), hashlib.sha256(im.tobytes()).hexdigest()


def test_every_widget_is_live_offline(book_site, book_page):
    """On each widget's page and on the lecture page, moving the widget's first control redraws it within
    REDRAW_MS (median of 10 moves), and for three values of that control the image shown is, pixel for
    pixel, the Python widget's PNG for the control values the page shows. A frozen widget fails."""
    page, medians = book_page, {}
    names = [e.notebook for e in LIVE] + ([LECTURE] if LECTURE in book_site["pages"] else [])
    for notebook in dict.fromkeys(names):
        page.goto(f"{book_site['url']}/{notebook}.html", wait_until="load")
        for e in [e for e in LIVE if notebook in (e.notebook, LECTURE)]:
            assert page.locator(f".tnb-live[data-widget='{e.name}']").count() == 1, f"{notebook}: no live {e.name}"
            moved = page.evaluate(MOVE, e.name)
            medians[f"{notebook} {e.name}"] = ms = statistics.median(moved["times"])
            assert ms <= REDRAW_MS, f"{notebook} {e.name}: redraw median {ms:.0f} ms > {REDRAW_MS} ms"
            assert moved["shown"] > 1, f"{notebook} {e.name}: moving the first control left the image as it was"
            n, seen = moved["n"], set()
            for i in sorted({0, n // 2, n - 1}):
                shown = page.evaluate(SHOWN, [e.name, i])
                assert [shown["size"], shown["sha"]] == list(python_side(e, shown["values"])), (
                    f"{notebook} {e.name}: the page's image for {shown['values']} is not the Python widget's"
                )
                seen.add(shown["sha"])
            assert len(seen) > 1, f"{notebook} {e.name}: the same image for every value of the first control"
    assert not page.missing, f"the pages ask for files the book does not have: {page.missing}"
    print("redraw medians (ms):", json.dumps({k: round(v, 1) for k, v in medians.items()}, indent=1))
