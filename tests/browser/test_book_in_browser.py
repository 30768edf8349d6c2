"""The rendered book (tools/book.py) in a real browser, with the network blocked: every widget live with
no kernel (on its own page and on the lecture page) and the maths typeset, from the files next to the pages.
(Links, tables of contents and folds are the markup tests/test_book_index_and_navigation.py checks.)

The pages that show a widget, the lecture page and the first and last stored notebooks are rendered once into
a temporary folder (the widgets' frames from the cache in ``build/frames``, computed when missing), served on
localhost and opened in headless Chromium that may reach nothing else.

require.js and MathJax are the pinned npm packages of ``book.BOOK_PACKAGES``, the frames lossless WebP,
fetched once into ``build/vendor`` (``make book-cdn``); where they are not there and cannot be
downloaded, the test skips and says so.
"""

from __future__ import annotations

import functools
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
from static_site import WARM, bundled, offline_page, serve  # noqa: E402
from test_widgets_in_browser import ROOT  # noqa: E402

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
    live = {p for p in stored if p.stem in {e.notebook for e in LIVE} or p.stem == LECTURE}
    chosen = sorted({stored[0], stored[-1], *live})
    out = tmp_path_factory.mktemp("book")
    rt = ROOT / "notebooks" / "runtimes.json"
    bundled(lambda: book.build(chosen, out, json.loads(rt.read_text()) if rt.exists() else {}))
    with serve(out) as url:
        yield {"url": url, "pages": [p.stem for p in chosen], "ends": [stored[0].stem, stored[-1].stem]}


@pytest.fixture(scope="module")
def book_page(book_site):
    with offline_page(book_site["url"]) as page:
        yield page


TYPESET = """() => new Promise(done => MathJax.Hub.Queue(() => done([
  document.querySelectorAll('script[type^="math/tex"]').length,
  document.querySelectorAll('.MathJax_CHTML').length,
  document.querySelectorAll('.MathJax_Error, .merror').length])))"""


def typeset(page) -> tuple[int, int, int]:
    """Once MathJax has typeset the page: (formulas it found, formulas drawn, errors)."""
    page.wait_for_function("() => window.MathJax && window.MathJax.Hub && window.MathJax.isReady", timeout=30_000)
    return tuple(page.evaluate(TYPESET))


MOVE = """async (name) => {
  const root = document.querySelector(`.tnb-live[data-widget="${name}"]`), img = root.querySelector('img');
  const el = root.querySelector('[data-c="0"]'), n = el.options ? el.options.length : Number(el.max) + 1;
  await Promise.all(root.tnbFrames.filter(Boolean).map((im) => im.decode()));
  const times = [], shown = new Set();
  for (let r = 0; r < 10; r++) {
    const t0 = performance.now();
    el.value = String((Number(el.value) + 1) % n);
    el.dispatchEvent(new Event('input'));
    await img.decode();
    await new Promise(requestAnimationFrame);
    times.push(performance.now() - t0);
    shown.add(img.src);
  }
  return {times, n, shown: shown.size};
}"""
SHOWN = """async ([name, i]) => {
  const root = document.querySelector(`.tnb-live[data-widget="${name}"]`), img = root.querySelector('img');
  const el = root.querySelector('[data-c="0"]'), canvas = document.createElement('canvas');
  el.value = String(i);
  el.dispatchEvent(new Event('input'));
  await img.decode();
  [canvas.width, canvas.height] = [img.naturalWidth, img.naturalHeight];
  canvas.getContext('2d').drawImage(img, 0, 0);
  const rgba = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  const sha = Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', rgba)));
  return {values: root.tnbValues(), size: [img.naturalWidth, img.naturalHeight],
          sha: sha.map((b) => b.toString(16).padStart(2, '0')).join('')};
}"""


@functools.cache  # the lecture page shows the same settings again
def python_side(name: str, values: str) -> tuple[list, str]:
    """The widget as JupyterLab draws it for ``values`` (JSON): its PNG's size and the SHA-256 of its RGBA pixels."""
    import matplotlib

    matplotlib.use("Agg")
    from PIL import Image

    w = build(next(e for e in LIVE if e.name == name))
    for control, v in json.loads(values).items():
        w.controls[control].value = v  # a redraw when it changes
    if not w.updates:
        w.refresh()
    im = Image.open(io.BytesIO(w.png())).convert("RGBA")
    return [list(im.size), hashlib.sha256(im.tobytes()).hexdigest()]


def test_every_widget_is_live_offline(book_site, book_page):
    """On each widget's page and on the lecture page (once its models have loaded), moving the widget's first
    control redraws it within REDRAW_MS (median of 10 moves), and for three values of that control the image shown
    is, pixel for pixel, the Python widget's PNG for the control values the page shows. A frozen widget fails."""
    page, medians = book_page, {}
    names = [e.notebook for e in LIVE] + ([LECTURE] if LECTURE in book_site["pages"] else [])
    for notebook in dict.fromkeys(names):
        page.goto(f"{book_site['url']}/{notebook}.html", wait_until="load")
        page.wait_for_function(WARM, timeout=120_000)  # the lecture page's models loaded: a reader's page at rest
        for e in [e for e in LIVE if notebook in (e.notebook, LECTURE)]:
            assert page.locator(f".tnb-live[data-widget='{e.name}']").count() == 1, f"{notebook}: no live {e.name}"
            moved = page.evaluate(MOVE, e.name)
            medians[f"{notebook} {e.name}"] = ms = statistics.median(moved["times"])
            assert ms <= REDRAW_MS, f"{notebook} {e.name}: redraw median {ms:.0f} ms > {REDRAW_MS} ms"
            assert moved["shown"] > 1, f"{notebook} {e.name}: moving the first control left the image as it was"
            n, seen = moved["n"], set()
            for i in sorted({0, n // 2, n - 1}):
                shown = page.evaluate(SHOWN, [e.name, i])
                assert [shown["size"], shown["sha"]] == python_side(e.name, json.dumps(shown["values"])), (
                    f"{notebook} {e.name}: the page's image for {shown['values']} is not the Python widget's"
                )
                seen.add(shown["sha"])
            assert len(seen) > 1, f"{notebook} {e.name}: the same image for every value of the first control"
    print("redraw medians (ms):", json.dumps({k: round(v, 1) for k, v in medians.items()}, indent=1))


def test_widgets_and_maths_render_offline(book_site, book_page):
    """The first and the last page typeset their maths, and no file the pages asked for (these and, before,
    every widget's) is missing, while nothing outside localhost can be reached."""
    page, maths = book_page, 0
    for name in reversed(book_site["ends"]):  # the last first: the page the widgets' test leaves open
        if not page.url.endswith(f"/{name}.html"):
            page.goto(f"{book_site['url']}/{name}.html", wait_until="load")
        parsed, shown, errors = typeset(page)
        assert parsed == shown, f"{name}: {parsed} formulas found, {shown} rendered"
        assert not errors, f"{name}: MathJax reports {errors} errors"
        maths += shown
    assert not page.missing, f"the pages ask for files the book does not have: {page.missing}"
    assert maths, "none of the rendered pages has maths"
    assert not [u for u in page.blocked if "_static" in u], "a bundled file was requested from outside"
