"""The rendered book (tools/book.py) in a real browser, with the network blocked: the contents page,
previous / next, the table of contents, the folded appendix, the widgets drawn from their embedded
state and the maths typeset, all from the files next to the pages.

Three pages are rendered into a temporary folder (the first stored notebook, the first one with a
collapsed appendix, the last one), served on localhost and opened in headless Chromium (as in
test_widgets_in_browser.py) that may reach nothing else. Screenshots: ``build/screenshots/book_*.png``.

require.js, MathJax and the widget manager are the pinned npm packages of ``book.BOOK_PACKAGES``,
fetched once into ``build/vendor`` (``make book-cdn``); where they are not there and cannot be
downloaded, the test skips and says so.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "tools"))
from static_site import bundled, offline_page, serve  # noqa: E402
from test_widgets_in_browser import ROOT, SHOTS  # noqa: E402


@pytest.fixture(scope="module")
def book_site(tmp_path_factory):
    import book

    stored = book.stored_notebooks()
    if not stored:
        pytest.skip("no stored notebooks to render")
    folded = next((p for p in stored if "jp-MarkdownHeadingCollapsed" in p.read_text(encoding="utf-8")), None)
    chosen = sorted({stored[0], stored[-1], *([folded] if folded else [])})
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
    """Every chosen page that has widgets draws their stored figures, every page with maths typesets
    it, and no file the pages ask for is missing, while nothing outside localhost can be reached."""
    page, widgets, maths = book_page, 0, 0
    for name in book_site["pages"]:
        page.goto(f"{book_site['url']}/{name}.html", wait_until="load")
        if page.locator("script[type='application/vnd.jupyter.widget-view+json']").count():
            try:
                page.locator("img.widget-image, .widget-output img, .jupyter-widgets-output-area img").first.wait_for(
                    timeout=30_000
                )
            except Exception:
                raise AssertionError(f"{name}: the widget's stored figure was not drawn offline") from None
            page.locator("img.widget-image, .widget-output img").first.scroll_into_view_if_needed()
            _shot(page, "widget")
            widgets += 1
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
