"""The download path of the WikiText-2 loader, against a local HTTP server (``TNB_DATA_URL``).

A good download is checked and cached with a progress bar; a corrupt, partial or broken-off
download is a ``ValueError`` that names the file and keeps nothing; a missing file on the
server is reported with where the loader looked.
"""

import http.server
import threading

import pytest
from wikitext_data import DATA, needs_data

from transformer_nb import wikitext as wt
from transformer_nb import wikitext_files


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves ``routes`` (path -> (body, Content-Length or None)); each fixture makes a subclass with its own."""

    routes: dict
    hits: list

    def do_GET(self):
        self.hits.append(self.path)
        if self.path not in self.routes:
            self.send_error(404)
            return
        body, length = self.routes[self.path]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)  # a Content-Length larger than the body: the server hangs up early

    def log_message(self, *args):
        pass


@pytest.fixture
def mirror(monkeypatch, tmp_path):
    """A local mirror at ``TNB_DATA_URL``; no TNB_DATA_DIR; an empty user cache."""
    handler = type("Handler", (_Handler,), {"routes": {}, "hits": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)  # shutdown() waits a poll
    thread.start()
    monkeypatch.delenv("TNB_DATA_DIR", raising=False)
    monkeypatch.setattr(wikitext_files, "beside_checkout", lambda: None)  # no data beside the checkout
    monkeypatch.delenv("TNB_OFFLINE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TNB_DATA_URL", f"http://127.0.0.1:{server.server_address[1]}/wt2")  # no trailing /
    yield handler
    server.shutdown()
    server.server_close()
    thread.join()


def _serve_real(handler, *splits):
    for split in splits:
        handler.routes[f"/wt2/{split}.txt"] = ((DATA / f"{split}.txt").read_bytes(), None)


def _cache_files():
    cache = wt.user_cache_dir() / "wikitext-2"
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


@needs_data
def test_download_is_checked_cached_and_shows_progress(mirror, capsys):
    _serve_real(mirror, *wt.SPLITS)
    folder = wt.find_data_dir()
    assert folder == wt.user_cache_dir() / "wikitext-2"
    assert _cache_files() == ["test.txt", "train.txt", "valid.txt"]  # no temporary left
    wt.verify(folder)
    assert "wikitext-2/train.txt" in capsys.readouterr().err  # the tqdm bar (plain text outside Jupyter)
    assert len(mirror.hits) == 3
    data = wt.load_wikitext2()  # found in the user cache now: no second download
    assert len(mirror.hits) == 3 and data.folder == folder and data.valid.numel() == 217_646


@needs_data
def test_a_failed_file_keeps_the_good_ones_and_the_next_run_fetches_only_what_is_missing(mirror):
    _serve_real(mirror, "train", "test")
    mirror.routes["/wt2/valid.txt"] = (b"\0" * wikitext_files.N_BYTES["valid"], None)
    with pytest.raises(ValueError, match=r"valid\.txt is corrupt"):
        wt.find_data_dir(progress=False)
    assert _cache_files() == ["train.txt"]  # verified before it was kept
    _serve_real(mirror, "valid")
    mirror.hits.clear()
    wt.find_data_dir(progress=False)
    assert mirror.hits == ["/wt2/valid.txt", "/wt2/test.txt"]


N_TRAIN, SAT = wikitext_files.N_BYTES["train"], b"the cat sat\n" * 100


@pytest.mark.parametrize(
    "body, length, err, match",
    [
        (b"\0" * N_TRAIN, None, ValueError, r"train\.txt is corrupt: 10,797,148 bytes with sha256 "),
        (SAT, None, ValueError, r"train\.txt is partial: 1,200 bytes with sha256 .*expected 10,797,148 bytes"),
        (SAT, N_TRAIN, ValueError, r"train\.txt (is partial|broke off after 1,200 of)"),  # the server hangs up early
        (None, None, FileNotFoundError, r"download from http://127\.0\.0\.1:\d+/wt2/ failed \(HTTPError"),
    ],
    ids=["corrupt", "short", "cut-off", "missing on the mirror"],
)
def test_a_bad_download_is_an_error_and_nothing_is_kept(mirror, body, length, err, match):
    if body is not None:
        mirror.routes["/wt2/train.txt"] = (body, length)
    with pytest.raises(err, match=match):
        wt.find_data_dir(progress=False)
    assert _cache_files() == []
    with pytest.raises(FileNotFoundError, match="download"):  # and nothing looks complete afterwards
        wt.find_data_dir(progress=False, download=False)
