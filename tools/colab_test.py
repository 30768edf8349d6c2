"""``make colab-test``: notebooks 00, 01, 05 and 07 (quick profile) under nbval, in a Colab-like environment.

1. A fresh Colab-like venv (``tools/colab_venv.sh``): torch, numpy, matplotlib, tqdm, ipywidgets 7.7.1 and a
   stub ``google.colab``, but not the companion.
2. Copies of the stored notebooks in an empty folder, as in Colab's ``/content``: no checkout around them.
   A notebook that lacks the generated badge and setup cell (``tools/colab.py --check``) gets them on its
   copy, and the output says so; ``--strict`` refuses instead.
3. ``TNB_INSTALL_FROM`` = the wheel that ``make wheel`` built: the first notebook's setup cell installs the
   companion from it, with pip, into the venv.
4. WikiText-2 comes through the loader's download path (sha256, progress bar): from a local HTTP mirror
   (``TNB_DATA_URL``) of the copy in ``TNB_DATA_DIR``, else from the internet. ``HOME`` and the caches are
   fresh folders.
5. Afterwards: the companion must have been installed from that wheel, and the data downloaded once and
   verified.

Usage: ``python3 tools/colab_test.py [--strict] [--reuse-venv] [NN ...]`` (needs only the standard library;
``make colab-test`` builds the wheel first).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import colab  # noqa: E402  (tools/colab.py: the badge and setup cell)

DEFAULT = ("00", "01", "05", "07")
SPLITS = ("train.txt", "valid.txt", "test.txt")
NBVAL = ("--nbval-lax", "--nbval-current-env", "--nbval-sanitize-with=nbval_sanitize.cfg")


def log(msg: str) -> None:
    print(f"colab-test: {msg}", flush=True)


def env_path(name: str) -> Path | None:
    """``transformer_nb.env.env_path``, which this script cannot import: it runs under the system Python, which
    has neither the package nor torch (the Colab-like venv it builds installs them). Stripped, ``~`` expanded."""
    value = os.environ.get(name, "").strip()
    return Path(value).expanduser() if value else None


def local_data() -> Path | None:
    """The shared WikiText-2 folder (``TNB_DATA_DIR``, or ``../shared/data``), or None."""
    roots = [env_path("TNB_DATA_DIR"), ROOT.parent / "shared" / "data"]
    for root in filter(None, roots):
        for folder in (Path(root), Path(root) / "wikitext-2"):
            if all((folder / s).is_file() for s in SPLITS):
                return folder
    return None


class Mirror:
    """A local HTTP server for the three files; ``hits`` counts the requests."""

    def __init__(self, folder: Path):
        hits = self.hits = []

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                hits.append(self.path)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=folder))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def missing_from_wheel(wheel: Path) -> list[str]:
    """Files of the package folder (not caches) that the wheel lacks: data files need package-data."""
    with zipfile.ZipFile(wheel) as z:
        inside = set(z.namelist())
    files = (p for p in (ROOT / "transformer_nb").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return sorted(str(rel) for p in files if (rel := p.relative_to(ROOT)).as_posix() not in inside)


def copy_notebooks(prefixes, content: Path, strict: bool) -> list[Path]:
    """Copy ``notebooks/NN_*.ipynb`` into ``content``, applying the Colab cells to copies that lack them."""
    url = colab.repo_url()
    out = []
    for prefix in prefixes:
        found = sorted((ROOT / "notebooks").glob(f"{prefix}_*.ipynb"))
        if len(found) != 1:
            raise SystemExit(f"colab-test: no single notebook notebooks/{prefix}_*.ipynb (found {found})")
        src = found[0]
        nb = json.loads(src.read_text(encoding="utf-8"))
        problems = colab.check_ipynb(nb, src.stem, url)
        if problems and strict:
            raise SystemExit(f"colab-test: {src.name}: " + "; ".join(problems) + " (run tools/colab.py --apply)")
        if problems:
            log(f"NOTE {src.name} lacks the generated cells: applied to the copy only ({'; '.join(problems)})")
            nb = colab.apply_ipynb(nb, src.stem, url)
        dst = content / src.name
        dst.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        out.append(dst)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prefixes", nargs="*", default=DEFAULT, help="notebook numbers (default: 00 01 05 07)")
    ap.add_argument("--wheel", type=Path, help="default: the newest dist/transformer_nb-*.whl")
    ap.add_argument("--work", type=Path, default=ROOT / "build" / "colab-test", help="scratch folder (emptied)")
    ap.add_argument("--strict", action="store_true", help="fail if a notebook lacks the generated cells")
    ap.add_argument("--reuse-venv", action="store_true", help="keep WORK/venv (uninstalling the companion)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    wheels = sorted((ROOT / "dist").glob("transformer_nb-*.whl"), key=lambda p: p.stat().st_mtime)
    wheel = (args.wheel or (wheels[-1] if wheels else Path("dist/<none>"))).resolve()
    if not wheel.is_file():
        raise SystemExit(f"colab-test: no wheel at {wheel}: run `make wheel` first")
    missing = missing_from_wheel(wheel)
    if missing:
        raise SystemExit(f"colab-test: {wheel.name} lacks package files (package-data in pyproject.toml?): {missing}")
    work, venv = args.work.resolve(), args.work.resolve() / "venv"
    py = venv / "bin" / "python"
    for sub in ("content", "home", "model-cache"):
        shutil.rmtree(work / sub, ignore_errors=True)
        (work / sub).mkdir(parents=True)
    if args.reuse_venv and py.exists():
        subprocess.run([py, "-m", "pip", "uninstall", "-q", "-y", "transformer-nb"], check=True)
    else:
        subprocess.run(["bash", ROOT / "tools" / "colab_venv.sh", venv], check=True)
    t_venv = time.perf_counter()
    notebooks = copy_notebooks(args.prefixes, work / "content", args.strict)
    shutil.copy(ROOT / "tests" / "nbval_sanitize.cfg", work / "content")
    (work / "content" / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")

    data, mirror = local_data(), None
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TNB_", "PYTHON", "VIRTUAL_ENV", "MPL"))}
    env.update(
        HOME=str(work / "home"),
        XDG_CACHE_HOME=str(work / "home" / ".cache"),
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        TNB_PROFILE="quick",
        TNB_CACHE_DIR=str(work / "model-cache"),
        TNB_INSTALL_FROM=str(wheel),
    )
    if data is not None:
        mirror = Mirror(data)
        env["TNB_DATA_URL"] = mirror.url
        log(f"WikiText-2 from a local mirror of {data} at {mirror.url}")
    else:
        log("no local WikiText-2 copy (TNB_DATA_DIR): the setup cell downloads it from the internet")
    log(f"the setup cell installs {wheel.name} (TNB_INSTALL_FROM); notebooks: {', '.join(p.name for p in notebooks)}")
    try:
        cmd = [py, "-m", "pytest", *NBVAL, "-q", "--durations=0", *[p.name for p in notebooks]]
        status = subprocess.run(cmd, cwd=work / "content", env=env).returncode
    finally:
        if mirror is not None:
            mirror.close()
    t_nb = time.perf_counter()

    problems = [] if status == 0 else [f"nbval failed (exit {status})"]
    probe = (
        "import json, sys\nfrom importlib.metadata import distribution\nfrom transformer_nb import wikitext as wt\n"
        "d = distribution('transformer-nb')\nprint(json.dumps({'url': json.loads(d.read_text('direct_url.json'))"
        "['url'], 'data': str(wt.user_cache_dir() / 'wikitext-2')}))\nwt.verify(wt.user_cache_dir() / 'wikitext-2')"
    )
    got = subprocess.run([py, "-I", "-c", probe], env=env, capture_output=True, text=True)
    if got.returncode != 0:
        problems.append(f"after the run, the installed companion or its data is missing: {got.stderr.strip()[-400:]}")
    else:
        facts = json.loads(got.stdout)
        if facts["url"] != wheel.as_uri():
            problems.append(f"the companion was installed from {facts['url']}, not from {wheel.as_uri()}")
        log(f"installed from {facts['url']}; WikiText-2 verified in {facts['data']}")
    if mirror is not None:
        fetched = sorted(h.lstrip("/") for h in mirror.hits)
        log(f"mirror requests: {fetched}")
        if fetched != sorted(SPLITS):
            problems.append(f"expected each file downloaded exactly once, got requests {fetched}")
    log(f"venv {t_venv - t0:.0f} s, notebooks {t_nb - t_venv:.0f} s, total {time.perf_counter() - t0:.0f} s")
    for p in problems:
        log(f"FAILED: {p}")
    log("passed" if not problems else "failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
