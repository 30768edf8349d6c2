"""The rendered book (tools/book.py) in a real browser: the contents page, previous / next, the table of
contents, the folded appendix, and the widgets drawn from their embedded state.

Three pages are rendered into a temporary folder (the first stored notebook, the first one with a
collapsed appendix, the last one), served over HTTP and opened in headless Chromium (as in
test_widgets_in_browser.py). Screenshots: ``build/screenshots/book_*.png``.

The pages load require.js, MathJax and the widget manager from CDNs. Where only the npm registry is
reachable, ``make book-cdn`` fetches the same packages into ``build/cdn`` and ``TNB_BOOK_CDN_DIR=build/cdn``
serves them (``.ci/run`` does both); otherwise the widget check is skipped when the widget manager cannot be
fetched.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import socketserver
import sys
import threading
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "tools"))
from test_widgets_in_browser import CHROMIUM_ARGS, ROOT, SHOTS, _chromium  # noqa: E402

CDN = {  # URL prefix -> package folder under TNB_BOOK_CDN_DIR
    "https://unpkg.com/@jupyter-widgets/html-manager@": "jupyter-widgets-html-manager",
    "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.1.10/": "requirejs",
    "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/": "mathjax",
}


def _local_cdn(route):
    """Serve a CDN request from TNB_BOOK_CDN_DIR, or let it through to the network."""
    base, url = Path(os.environ["TNB_BOOK_CDN_DIR"]), route.request.url.split("?")[0]
    for prefix, folder in CDN.items():
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            rest = rest.split("/", 1)[1] if folder == "jupyter-widgets-html-manager" else rest  # drop @version
            rest = "require.js" if rest.endswith("require.min.js") else rest
            path = base / folder / "package" / rest
            if path.is_file():
                return route.fulfill(
                    path=str(path), content_type="application/javascript" if rest.endswith(".js") else None
                )
    return route.continue_()


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


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
    book.build(chosen, out, json.loads(rt.read_text()) if rt.exists() else {})
    handler = functools.partial(Quiet, directory=str(out))
    server = socketserver.TCPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"url": f"http://127.0.0.1:{server.server_address[1]}", "pages": [p.stem for p in chosen], "folded": folded}
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def book_page(book_site):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright is not installed: `.venv/bin/pip install -e '.[browser]'`")
    chromium = _chromium()
    if chromium is None:
        pytest.skip("Chromium not found: `sudo apt-get install chromium` (or set TNB_CHROMIUM)")
    pw = sync_playwright().start()
    browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
    page = browser.new_page(viewport={"width": 1400, "height": 900}, device_scale_factor=1)
    if os.environ.get("TNB_BOOK_CDN_DIR"):
        page.route(lambda url: not url.startswith(book_site["url"]), _local_cdn)
    yield page
    browser.close()
    pw.stop()


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


def test_widgets_render_from_their_embedded_state(book_site, book_page):
    page = book_page
    failed = []
    page.on("requestfailed", lambda r: failed.append(r.url))
    for name in book_site["pages"]:
        page.goto(f"{book_site['url']}/{name}.html", wait_until="load")
        if not page.locator("script[type='application/vnd.jupyter.widget-view+json']").count():
            continue
        try:
            page.locator("img.widget-image, .widget-output img, .jupyter-widgets-output-area img").first.wait_for(
                timeout=30_000
            )
        except Exception:
            if any("html-manager" in u or "require" in u for u in failed):
                pytest.skip("the widget manager could not be fetched (offline?): set TNB_BOOK_CDN_DIR")
            raise AssertionError(f"{name}: the widget's stored figure was not drawn") from None
        page.locator("img.widget-image, .widget-output img").first.scroll_into_view_if_needed()
        _shot(page, "widget")
        return
    pytest.skip("none of the rendered pages shows a widget")
