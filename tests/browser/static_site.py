"""Helpers of the book and slides browser tests: a folder served over HTTP on localhost, and a headless
Chromium page that reaches nothing else (every other request is aborted and recorded)."""

from __future__ import annotations

import contextlib
import functools
import http.server
import socketserver
import threading
from pathlib import Path

import pytest
from test_widgets_in_browser import CHROMIUM_ARGS, playwright_and_chromium

# Once true, the page's models have loaded and warmed their wasm (tools/live.mjs): the page is ready for a reader.
WARM = "() => [...document.querySelectorAll('.tnb-live[data-model]')].every((w) => w.dataset.warm !== undefined)"


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(folder: Path):
    """``http://127.0.0.1:PORT`` serving ``folder`` until the block ends."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()  # shutdown() waits a poll
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def offline_page(base_url: str, viewport=(1400, 900)):
    """A Chromium page on which only ``base_url`` answers. ``page.blocked`` lists the failed other URLs,
    ``page.missing`` the local ones that answered 404."""
    sync_playwright, chromium = playwright_and_chromium()
    pw = sync_playwright().start()
    # every other request goes to a proxy where nothing listens (port 9), and fails: not intercepting each request
    # (in Python) keeps a page's loading as fast as a reader's
    proxy = {"server": "http://127.0.0.1:9", "bypass": "127.0.0.1"}
    browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS, proxy=proxy)
    try:
        page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]}, device_scale_factor=1)
        page.blocked, page.missing = [], []
        page.on("requestfailed", lambda r: not r.url.startswith(base_url) and page.blocked.append(r.url))
        page.on("response", lambda r: r.status == 404 and page.missing.append(r.url))
        yield page
    finally:
        browser.close()
        pw.stop()


def bundled(build):
    """Run ``build()`` (which fetches the pinned JavaScript packages into build/vendor when missing);
    skip, saying how to fetch them, when they cannot be downloaded."""
    import book

    try:
        return build()
    except book.IntegrityError:
        raise
    except OSError as err:
        pytest.skip(f"the pages' JavaScript packages are not in build/vendor and could not be fetched: {err}")
