#!/usr/bin/env python3
"""The companion as a book a reader can navigate: build/book/index.html and one page per notebook.

    python tools/book.py                  # render the stored notebooks (their full-profile outputs)
    python tools/book.py --execute        # run every notebook again first (tools/refresh.py --all --out)
    python tools/book.py --out DIR        # somewhere else than build/book

The pages work offline: require.js and MathJax (and the slides' widget manager) come from the npm registry (pinned
versions, each tarball checked against npm's ``dist.integrity`` sha512 before use), are cached in
``build/vendor`` (a second build downloads nothing) and are copied into ``_static/`` next to the pages.
``python tools/book.py --fetch-only`` fills the cache (``make book-cdn``); ``NPM_REGISTRY`` names a mirror.

The index lists every notebook in book order with its one-line summary, the texts, sections and
exercises it serves, and its runtime (read with ``transformer_nb.companion`` from the notebooks and
``notebooks/runtimes.json``). Every page has previous / next links, a table of contents of its
sections and the list of all pages. Pages are nbconvert's JupyterLab HTML; each widget is live with no
kernel (``tools/live.py``: its frames precomputed over a small grid of control values); a widget the book does
not run (a progress bar) is drawn from its stored state as plain HTML (``static_widgets``). The audit
appendix (a heading cell with ``jp-MarkdownHeadingCollapsed``, up to the next heading of its level)
and each solution cell (tagged ``solution``) render collapsed, as ``<details>``.
"""

from __future__ import annotations

import argparse
import base64
import fnmatch
import hashlib
import html
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import nbformat  # noqa: E402

from transformer_nb import companion  # noqa: E402

sys.path.insert(0, str(ROOT / "tools"))
import live  # noqa: E402

BOOK_TITLE = "transformer-nb"
TOC_MARK = "<!--tnb-toc-->"
HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
TOC_HEADING = re.compile(r'<h([23])[^>]*\bid="([^"]+)"[^>]*>(.*?)</h\1>', flags=re.S)

CSS = """
:root { --tnb-side: 17rem; --tnb-accent: #1a5fb4; }
body.jp-Notebook { margin: 0; }
nav.tnb-side { position: fixed; top: 0; left: 0; bottom: 0; width: var(--tnb-side); overflow-y: auto;
  padding: 1rem 0.9rem; box-sizing: border-box; background: #f6f7f9; border-right: 1px solid #dde1e6;
  font: 14px/1.4 system-ui, sans-serif; z-index: 10; }
nav.tnb-side a { color: #222; text-decoration: none; }
nav.tnb-side a:hover { color: var(--tnb-accent); text-decoration: underline; }
nav.tnb-side .tnb-home { font-weight: 700; font-size: 16px; display: block; margin-bottom: 0.8rem; }
nav.tnb-side h4 { margin: 1rem 0 0.3rem; font-size: 12px; text-transform: uppercase; color: #666; }
nav.tnb-side ol, nav.tnb-side ul { margin: 0; padding-left: 1.1rem; }
nav.tnb-side li { margin: 0.15rem 0; }
nav.tnb-side li.tnb-h3 { margin-left: 0.9rem; font-size: 13px; list-style: circle; }
nav.tnb-side li.tnb-here > a { font-weight: 700; color: var(--tnb-accent); }
main { margin-left: var(--tnb-side); }
.tnb-pager { display: flex; justify-content: space-between; gap: 1rem; padding: 0.6rem 1.5rem;
  font: 14px/1.4 system-ui, sans-serif; border-bottom: 1px solid #dde1e6; background: #fff; }
.tnb-pager.tnb-bottom { border-top: 1px solid #dde1e6; border-bottom: 0; margin-top: 2rem; }
.tnb-pager a { color: var(--tnb-accent); text-decoration: none; }
.tnb-pager .tnb-next { text-align: right; }
details.tnb-fold { margin: 1rem 0; border: 1px solid #dde1e6; border-radius: 6px; padding: 0 0.5rem; }
details.tnb-fold > summary { cursor: pointer; padding: 0.5rem; font: 600 17px/1.4 system-ui, sans-serif; }
details.tnb-solution { margin: 0.4rem 0 0.4rem 4rem; border-left: 3px solid #c9a227; padding-left: 0.5rem; }
details.tnb-solution > summary { cursor: pointer; font: 14px/1.4 system-ui, sans-serif; color: #7a5d00; }
nav.tnb-side ul.tnb-pages { list-style: none; padding-left: 0; }
@media (max-width: 900px) { nav.tnb-side { display: none; } main { margin-left: 0; } }
"""

#: Blocks of nbconvert's templates that the book and the slides replace: no mermaid import from a CDN (no
#: notebook draws one), MathJax typesetting with no pause between sections (50 ms each by default), and code
#: input as Pygments renders it (already escaped) without nbconvert's ``clean_html`` (bleach) over it, which took
#: a third of the build.
OFFLINE_BLOCKS = """{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_js_mathjax -%}
{{ super() }}
<script type="text/x-mathjax-config">MathJax.Hub.processSectionDelay = 0;</script>
{%- endblock html_head_js_mathjax -%}
{% block input %}
<div class="jp-CodeMirrorEditor jp-Editor jp-InputArea-editor" data-type="inline">
     <div class="cm-editor cm-s-jupyter">
{{ cell.source | highlight_code(metadata=cell.metadata) }}
     </div>
</div>
{%- endblock input %}
"""

TEMPLATE = (
    """{%- extends 'lab/index.html.j2' -%}
{% block extra_css %}<style type="text/css">"""
    + CSS
    + """</style>{% endblock extra_css %}
{%- block body_header -%}
{{ super() }}
{{ resources.book.side }}
{{ resources.book.pager_top }}
{%- endblock body_header -%}
{% block body_footer %}
{{ resources.book.pager_bottom }}
{{ super() }}
{% endblock body_footer %}
"""
    + OFFLINE_BLOCKS
    + """{%- block any_cell scoped -%}
{%- if cell.metadata.get('tnb_open') -%}
<details class="{{ cell.metadata.tnb_open.kind }}"><summary>{{ cell.metadata.tnb_open.summary }}</summary>
{%- endif -%}
{{ super() }}
{%- for _ in range(cell.metadata.get('tnb_close', 0)) -%}</details>{%- endfor -%}
{%- endblock any_cell -%}
"""
)

INDEX_CSS = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1.5rem; color: #222; }
h1 { margin-bottom: 0.2rem; } p.tnb-lead { color: #555; margin-top: 0; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 0.55rem 0.6rem; border-bottom: 1px solid #dde1e6; }
th { font-size: 13px; text-transform: uppercase; color: #666; }
td.tnb-num { font-weight: 700; color: #888; } td.tnb-time { white-space: nowrap; font-size: 13px; }
a { color: #1a5fb4; } .tnb-title { font-weight: 600; font-size: 16px; }
.tnb-summary { margin: 0.2rem 0; } .tnb-serves { font-size: 13px; color: #555; }
.tnb-ex { display: inline-block; background: #eef3fb; border-radius: 4px; padding: 0 0.35rem; margin: 0 0.2rem 0.2rem 0;
  font-size: 12px; }
"""


# --------------------------------------------------------------------------- bundled JavaScript (offline pages)

NPM_REGISTRY = os.environ.get("NPM_REGISTRY", "https://registry.npmjs.org").rstrip("/")
VENDOR_CACHE = ROOT / "build" / "vendor"
STATIC = "_static"  # next to the pages


class IntegrityError(RuntimeError):
    """A downloaded tarball is not the one pinned."""


@dataclass(frozen=True)
class Package:
    """An npm package the pages load: its pinned ``version``, npm's ``dist.integrity`` of that tarball
    (``sha512-`` + base64) and the ``files`` (globs under the tarball's ``package/``; ``!glob``: not these) the
    pages need."""

    name: str
    version: str
    integrity: str
    files: tuple[str, ...]

    @property
    def folder(self) -> str:
        """``_static/<folder>``: the name without its scope."""
        return self.name.rsplit("/", 1)[-1]

    @property
    def url(self) -> str:
        return f"{NPM_REGISTRY}/{self.name}/-/{self.folder}-{self.version}.tgz"


HTML_MANAGER = Package(
    "@jupyter-widgets/html-manager",
    "1.0.15",
    "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
    ("dist/embed-amd.js", "dist/*.woff2"),  # the fonts in the one format every browser the book serves reads
)
REQUIREJS = Package(
    "requirejs",
    "2.3.7",
    "sha512-DouTG8T1WanGok6Qjg2SXuCMzszOo0eHeH9hDZ5Y4x8Je+9JB38HdTLT4/VA8OaUhBa0JPVHJ0pyBkM1z+pDsw==",
    ("require.js",),
)
MATHJAX = Package(  # version 2: nbconvert's pages configure MathJax 2
    "mathjax",
    "2.7.9",
    "sha512-NOGEDTIM9+MrsqnjPEjVGNx4q0GQxqm61yQwSK+/5S59i26wId5IC5gNu9/bu8+CCVl5p9G2IHcAl/wJa+5+BQ==",
    (
        "MathJax.js",
        "config/TeX-AMS_CHTML-full.js",
        "config/Safe.js",
        "extensions/*.js",
        "!extensions/a11y/mathmaps/mathmaps_ie.js",  # 1.4 MB the accessibility explorer reads only in Internet Explorer
        "extensions/TeX/*",
        "jax/input/TeX/*",
        "jax/output/CommonHTML/*",
        "jax/element/*",
        "fonts/HTML-CSS/TeX/woff/*",
    ),
)
BOOK_PACKAGES = (REQUIREJS, MATHJAX)
# tools/slides.py's: reveal.js
REVEAL = Package(
    "reveal.js",
    "5.2.1",
    "sha512-r7//6mIM5p34hFiDMvYfXgyjXqGRta+/psd9YtytsgRlrpRzFv4RbH76TXd2qD+7ZPZEbpBDhdRhJaFgfQ7zNQ==",
    (
        "dist/reveal.js",
        "dist/reveal.css",
        "dist/theme/white.css",
        "dist/theme/fonts/source-sans-pro/*",
        "plugin/notes/notes.js",
    ),
)
SLIDE_PACKAGES = (REVEAL, HTML_MANAGER)
# tools/live_models.py's: ONNX Runtime's wasm build (one thread, no WebGPU); it runs notebooks 09's, 10's, 12's models
ORT_WEB = Package(
    "onnxruntime-web",
    "1.24.3",
    "sha512-41dDq7fxtTm0XzGE7N0d6m8FcOY8EWtUA65GkOixJPB/G7DGzBmiDAnVVXHznRw9bgUZpb+4/1lQK/PNxGpbrQ==",
    ("dist/ort.wasm.min.mjs", "dist/ort-wasm-simd-threaded.mjs", "dist/ort-wasm-simd-threaded.wasm"),
)


def ort_files() -> list[Path]:
    """onnxruntime-web's files that the pages load (fetched once, checked)."""
    return [fetch(ORT_WEB, VENDOR_CACHE) / g for g in ORT_WEB.files]


def _integrity(path: Path) -> str:
    digest = hashlib.sha512()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return "sha512-" + base64.b64encode(digest.digest()).decode()


def fetch(pkg: Package, cache: Path) -> Path:
    """The unpacked ``package/`` folder of ``pkg`` in ``cache``, downloaded once.

    The tarball is checked against ``pkg.integrity`` before anything is unpacked; a mismatch deletes
    it and raises ``IntegrityError``. A folder unpacked from a checked tarball carries a ``.integrity``
    stamp: later calls read only that stamp (no download)."""
    where = cache / f"{pkg.folder}-{pkg.version}"
    stamp = where / ".integrity"
    if stamp.is_file() and stamp.read_text() == pkg.integrity:
        return where / "package"
    cache.mkdir(parents=True, exist_ok=True)
    tgz = cache / f"{pkg.folder}-{pkg.version}.tgz"
    if not tgz.is_file():
        part = tgz.with_suffix(".part")
        try:
            with urllib.request.urlopen(pkg.url, timeout=120) as r, open(part, "wb") as f:
                shutil.copyfileobj(r, f)
        except OSError as err:
            part.unlink(missing_ok=True)
            raise OSError(
                f"could not download {pkg.name}@{pkg.version} from {pkg.url} ({err}); run `make book-cdn` "
                "where the npm registry is reachable, or set NPM_REGISTRY to a mirror"
            ) from err
        part.replace(tgz)
    found = _integrity(tgz)
    if found != pkg.integrity:
        tgz.unlink()
        raise IntegrityError(f"{pkg.url}: integrity {found}, pinned {pkg.integrity}; the download was deleted")
    shutil.rmtree(where, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(dir=cache))
    with tarfile.open(tgz) as tar:
        tar.extractall(tmp, filter="data")
    tmp.replace(where)
    stamp.write_text(pkg.integrity)
    return where / "package"


def _wanted(rel: str, globs) -> bool:
    """Whether ``rel`` matches one of ``globs`` and none of the ``!globs`` among them."""
    hits = {g[:1] == "!" for g in globs if fnmatch.fnmatchcase(rel, g.removeprefix("!"))}
    return hits == {False}


def vendor(out_dir: Path, packages, cache: Path) -> dict[str, str]:
    """Copy each package's ``files`` into ``out_dir/_static/<folder>/``; returns {name: relative folder}."""
    urls = {}
    for pkg in packages:
        src, dest = fetch(pkg, cache), out_dir / STATIC / pkg.folder
        for path in src.rglob("*"):
            rel = path.relative_to(src).as_posix()
            if path.is_file() and _wanted(rel, pkg.files):
                target = dest / rel
                if not target.is_file() or target.stat().st_size != path.stat().st_size:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, target)
        urls[pkg.name] = f"{STATIC}/{pkg.folder}"
    return urls


def offline_urls(urls: dict[str, str]) -> dict:
    """nbconvert's HTMLExporter settings that load require.js, MathJax and the slides' widget manager from ``urls``."""
    found = {
        "require_js_url": f"{urls[REQUIREJS.name]}/require.js",
        "mathjax_url": f"{urls[MATHJAX.name]}/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
    }
    if HTML_MANAGER.name in urls:
        found["widget_renderer_url"] = f"{urls[HTML_MANAGER.name]}/dist/embed-amd.js"
    return found


# --------------------------------------------------------------------------- rendering


SCRIPT = re.compile(r"(<script\b.*?</script>)", flags=re.S)
NO_ALT = re.compile(r"<img(?![^>]*\balt=)")
FOCUSABLE = re.compile(r'(<div [^>]*?\bclass="[^"]*\b(?:jp-Cell-inputWrapper|jp-OutputArea-output)\b[^"]*")')


def accessible(page: str) -> str:
    """What nbconvert's HTMLExporter adds in a BeautifulSoup pass over the whole page (half the book's
    build time): an alt text on each image without one, keyboard focus on cell inputs and outputs.
    The contents of ``<script>`` elements (the widget state) are left as they are."""
    parts = SCRIPT.split(page)
    for i in range(0, len(parts), 2):  # odd parts are scripts
        parts[i] = NO_ALT.sub('<img alt="No description has been provided for this image"', parts[i])
        parts[i] = FOCUSABLE.sub(r'\1 tabindex="0"', parts[i])
    return "".join(parts)


class FastPages:
    """Mixin for nbconvert's HTML exporters: the page of ``HTMLExporter.from_notebook_node``, with
    ``accessible`` in place of its BeautifulSoup pass."""

    def from_notebook_node(self, nb, resources=None, **kw):
        from nbconvert.exporters.templateexporter import TemplateExporter
        from nbconvert.filters.highlight import Highlight2HTML
        from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

        langinfo = nb.metadata.get("language_info", {})
        lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
        highlight = self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self))
        resources = self._init_resources(resources)
        data_type = WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self, resources=resources)
        self.register_filter("highlight_code", highlight)
        self.register_filter("filter_data_type", data_type)
        page, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return accessible(page), resources


def exporter(kind: str, template: str, **settings):
    """An nbconvert exporter (``"html"`` or ``"slides"``) of ``FastPages`` rendering the Jinja ``template``
    (which extends nbconvert's lab or reveal template)."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter, SlidesExporter

    base = {"html": HTMLExporter, "slides": SlidesExporter}[kind]
    cls = type(f"Fast{base.__name__}", (FastPages, base), {})
    return cls(
        template_name="lab" if kind == "html" else "reveal",
        extra_loaders=[DictLoader({"page.j2": template})],
        template_file="page.j2",
        **settings,
    )


# --------------------------------------------------------------------------- what a notebook says about itself


def _plain(markdown: str) -> str:
    """Markdown to one line of plain text: emphasis, code marks, links and math delimiters dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    text = re.sub(r"[*_`$]", "", text)
    return " ".join(text.split())


def summary(nb, limit: int = 220) -> str:
    """The first sentence of the notebook's opening paragraph (after the title; the Colab badge and
    the Serves / Runtime lines skipped), at most ``limit`` characters."""
    for cell in nb.cells[:3]:
        if cell.cell_type != "markdown" or not cell.source.lstrip().startswith("# "):
            continue
        for para in re.split(r"\n\s*\n", cell.source)[1:]:
            para = para.strip()
            if not para or para.startswith(("**Serves", "**Runtime", "[![", "<a ", "#", "1. ", "- ", "* ")):
                continue
            text = _plain(para.split("\n1.")[0])
            first = re.match(r"(.{20,}?(?<!e\.g)(?<!i\.e)[.!?])(\s|$)", text)
            text = first.group(1) if first else text
            if text.endswith(":"):  # "What this notebook covers:" introduces a list, it sums nothing up
                continue
            return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"
    return ""


def heading_level(cell) -> int:
    """1-6 for a markdown cell that opens with a heading, else 0."""
    head = HEADING.match(cell.source.lstrip().split("\n", 1)[0])
    return len(head.group(1)) if cell.cell_type == "markdown" and head else 0


def collapsed_sections(cells) -> list[tuple[int, int]]:
    """``(start, end)`` cell ranges of the collapsed sections (the audit appendix): a heading cell with
    ``jp-MarkdownHeadingCollapsed`` up to, not including, the next heading of its level or higher."""
    out = []
    for i, cell in enumerate(cells):
        level = heading_level(cell)
        if level and cell.metadata.get("jp-MarkdownHeadingCollapsed"):
            end = next((j for j in range(i + 1, len(cells)) if 0 < heading_level(cells[j]) <= level), len(cells))
            out.append((i, end))
    return out


def fold_cells(nb) -> None:
    """Mark, in the cells' metadata, where ``<details>`` open and close (read by TEMPLATE): a heading
    cell with ``jp-MarkdownHeadingCollapsed`` folds up to the next heading of its level or higher;
    a code cell tagged ``solution`` folds alone, summarised by its first comment line."""
    cells = nb.cells
    for cell in cells:
        cell.metadata.pop("tnb_open", None)
        cell.metadata.pop("tnb_close", None)
    folds = dict(collapsed_sections(cells))
    for i, cell in enumerate(cells):
        first = cell.source.lstrip().split("\n", 1)[0]
        if i in folds:
            end = folds[i]
            text = html.escape(_plain(HEADING.match(first).group(2)))
            cell.metadata["tnb_open"] = {"kind": "tnb-fold", "summary": f"{text} <small>(click to open)</small>"}
            cells[end - 1].metadata["tnb_close"] = cells[end - 1].metadata.get("tnb_close", 0) + 1
        elif cell.cell_type == "code" and "solution" in cell.metadata.get("tags", []):
            label = first.lstrip("# ").strip() if first.startswith("#") else "worked solution"
            label = label if label.lower().startswith("solution") else f"Solution: {label}"
            summary_text = f"{html.escape(label)} <small>(click to show)</small>"
            cell.metadata["tnb_open"] = {"kind": "tnb-solution", "summary": summary_text}
            cell.metadata["tnb_close"] = cell.metadata.get("tnb_close", 0) + 1


# --------------------------------------------------------------------------- pages


def _link(page: dict | None, rel: str) -> str:
    if page is None:
        return "<span></span>"
    arrow = "← " if rel == "prev" else ""
    after = " →" if rel == "next" else ""
    cls = "tnb-next" if rel == "next" else "tnb-prev"
    return f'<a class="{cls}" href="{page["name"]}.html" rel="{rel}">{arrow}{html.escape(page["title"])}{after}</a>'


def _pager(prev: dict | None, nxt: dict | None, where: str) -> str:
    index = '<a class="tnb-index" href="index.html">contents</a>'
    return f'<nav class="tnb-pager tnb-{where}">{_link(prev, "prev")}{index}{_link(nxt, "next")}</nav>'


def _side(pages: list, here: str) -> str:
    items = "".join(
        f'<li class="{"tnb-here" if p["name"] == here else ""}"><a href="{p["name"]}.html">'
        f"{html.escape(p['title'])}</a></li>"
        for p in pages
    )
    return (
        f'<nav class="tnb-side"><a class="tnb-home" href="index.html">{BOOK_TITLE}</a>'
        f'<h4>On this page</h4>{TOC_MARK}<h4>All notebooks</h4><ul class="tnb-pages">{items}</ul></nav>'
    )


def toc(body: str) -> str:
    """The page's table of contents, from the ``<h2>``/``<h3>`` ids nbconvert gave its headings."""
    items = []
    for level, anchor, inner in TOC_HEADING.findall(body):
        text = html.unescape(re.sub(r"<[^>]+>", "", inner)).replace("¶", "").strip()
        items.append(f'<li class="tnb-h{level}"><a href="#{anchor}">{html.escape(text)}</a></li>')
    return f"<ul>{''.join(items)}</ul>" if items else "<ul><li>(no sections)</li></ul>"


STYLE = re.compile(r'<style type="text/css">\n(.*?)</style>', flags=re.S)
SHARED_CSS = 8_000  # characters: a longer style block (JupyterLab's CSS, the same on every page) becomes a file


def shared_styles(page: str, out_dir: Path) -> str:
    """``page`` with each long ``<style>`` block moved to ``_static/css/<digest>.css`` and linked: a reader's
    browser loads JupyterLab's 250 kB of CSS once for the whole book instead of once per page."""

    def link(m):
        if len(m.group(1)) < SHARED_CSS:
            return m.group(0)
        name = f"{STATIC}/css/{hashlib.sha1(m.group(1).encode()).hexdigest()[:16]}.css"
        (out_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (out_dir / name).write_text(m.group(1), encoding="utf-8")
        return f'<link rel="stylesheet" href="{name}">'

    return STYLE.sub(link, page)


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
BOX = {"HBoxModel": "row", "VBoxModel": "column"}


def _output_html(out: dict) -> str:
    """An output an Output widget stored, as HTML (its richest kind the book shows)."""
    from nbconvert.filters.markdown import markdown2html

    data = out.get("data", {})
    if "text/html" in data:
        return "".join(data["text/html"])
    if "text/markdown" in data:
        return markdown2html("".join(data["text/markdown"]))
    if "image/png" in data:
        return f'<img alt="" src="data:image/png;base64,{data["image/png"]}">'
    text = out.get("text", data.get("text/plain", ""))
    return f"<pre>{html.escape(''.join(text))}</pre>"


def _widget_html(state: dict, ref: str) -> str:
    """The widget ``ref`` as its stored state shows it, in plain HTML: boxes as flex rows or columns, progress bars
    as ``<progress>``, images inline, an Output widget's outputs, text as it is, any other control as its value."""
    m = state.get(ref.removeprefix("IPY_MODEL_"))
    if m is None:
        return ""
    kind, s = m["model_name"], m["state"]
    desc = html.escape(s.get("description", ""))
    if kind in BOX:
        inner = "".join(_widget_html(state, c) for c in s.get("children", []))
        return f'<div style="display:flex;flex-direction:{BOX[kind]};gap:0.2rem 0.8rem;flex-wrap:wrap">{inner}</div>'
    if kind in ("HTMLModel", "HTMLMathModel", "LabelModel"):
        text = s.get("value", "") if kind != "LabelModel" else html.escape(s.get("value", ""))
        return f"<span>{desc} {text}</span>" if desc else f"<span>{text}</span>"
    if kind.endswith("ProgressModel"):
        return f'<span>{desc} <progress value="{s.get("value", 0)}" max="{s.get("max", 100)}"></progress></span>'
    if kind == "ImageModel":
        data = next((b["data"] for b in m.get("buffers", []) if b["path"] == ["value"]), "")
        return f'<img alt="{desc or "figure"}" src="data:image/{s.get("format", "png")};base64,{data}">'
    if kind == "OutputModel":
        return "<div>" + "".join(_output_html(o) for o in s.get("outputs", [])) + "</div>"
    labels, value = s.get("_options_labels"), s.get("value", "")
    shown = labels[s["index"]] if labels and isinstance(s.get("index"), int) else value
    return f"<span>{desc + ': ' if desc else ''}<output>{html.escape(str(shown))}</output></span>"


def static_widgets(nb) -> None:
    """Each widget the page still shows from the notebook (a progress bar, a widget the book cannot run) as
    plain HTML of its stored state, and the state dropped: the pages need no widget manager."""
    state = nb.metadata.pop("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            view = out.get("data", {}).pop(live.VIEW, None)
            if view and view["model_id"] in state:
                out["data"]["text/html"] = _widget_html(state, view["model_id"])


def render_page(path: Path, pages: list, k: int, exporter, out_dir: Path) -> str:
    """One notebook's HTML page: nbconvert's lab template with the book's navigation, folds and live widgets."""
    nb = nbformat.read(path, as_version=4)
    fold_cells(nb)
    live.make_live(nb, path.stem, out_dir, ort=ort_files)
    static_widgets(nb)
    prev, nxt = (pages[k - 1] if k else None), (pages[k + 1] if k + 1 < len(pages) else None)
    resources = {
        "metadata": {"name": pages[k]["title"]},
        "book": {
            "side": _side(pages, path.stem),
            "pager_top": _pager(prev, nxt, "top"),
            "pager_bottom": _pager(prev, nxt, "bottom"),
        },
    }
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    return shared_styles(body.replace(TOC_MARK, toc(body), 1), out_dir)


def _seconds(s) -> str:
    if s is None:
        return "–"
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.0f} min"


def render_index(pages: list) -> str:
    """The contents page: per notebook its number, title, summary, what it serves and its runtime."""
    rows = []
    for p in pages:
        exercises = "".join(f'<span class="tnb-ex">Ex. {e}</span>' for e in p["exercises"])
        rows.append(
            "<tr>"
            f'<td class="tnb-num">{html.escape(p["name"][:2])}</td>'
            f'<td><a class="tnb-title" href="{p["name"]}.html">{html.escape(p["title"])}</a>'
            f'<p class="tnb-summary">{html.escape(p["summary"])}</p>'
            f'<div class="tnb-serves"><b>Serves:</b> {html.escape(_plain(p["serves"])) or "–"}</div>'
            f"<div>{exercises}</div></td>"
            f'<td class="tnb-time">quick {_seconds(p["quick_s"])}<br>full {_seconds(p["full_s"])}</td>'
            f'<td><a href="{p["name"]}.ipynb">.ipynb</a></td>'
            "</tr>"
        )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1.0">'
        f"<title>{BOOK_TITLE}: contents</title><style>{INDEX_CSS}</style></head><body>"
        f'<h1>{BOOK_TITLE}</h1><p class="tnb-lead">A Jupyter companion to the Transformer chapter: '
        f"{len(pages)} notebooks in book order, rendered with their full-profile outputs. The widgets work "
        "here with no kernel, over the control values drawn when the book was built; open a notebook in "
        "Jupyter (or Colab) to set any value. Runtimes: 2 CPU cores.</p>"
        "<table><thead><tr><th>#</th><th>notebook</th><th>runtime</th><th></th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></body></html>\n"
    )


def page_info(path: Path, runtimes: dict) -> dict:
    """What the index and the navigation show of one notebook."""
    nb = nbformat.read(path, as_version=4)
    facts = companion.info(path, runtimes)
    return {**facts, "summary": summary(nb)}


def build(notebooks: list[Path], out_dir: Path, runtimes: dict) -> list[Path]:
    """Render ``notebooks`` (book order) into ``out_dir``: NAME.html, NAME.ipynb and index.html."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pages = [page_info(p, runtimes) for p in notebooks]
    html_exporter = exporter("html", TEMPLATE, **offline_urls(vendor(out_dir, BOOK_PACKAGES, VENDOR_CACHE)))
    written = []
    for k, path in enumerate(notebooks):
        if path.parent.resolve() != out_dir.resolve():
            shutil.copyfile(path, out_dir / path.name)
        written.append(out_dir / f"{path.stem}.html")
        written[-1].write_text(render_page(path, pages, k, html_exporter, out_dir), encoding="utf-8")
    (out_dir / "index.html").write_text(render_index(pages), encoding="utf-8")
    return written


def stored_notebooks(folder: Path = ROOT / "notebooks") -> list[Path]:
    """The stored notebooks ``NN_*.ipynb`` in book order."""
    return sorted(folder.glob("[0-9][0-9]_*.ipynb"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "book")
    parser.add_argument(
        "--execute", action="store_true", help="run every notebook again into --out first (tools/refresh.py --all)"
    )
    parser.add_argument(
        "--fetch-only", action="store_true", help="download and check the pinned JavaScript packages into build/vendor"
    )
    args = parser.parse_args(argv)
    if args.fetch_only:
        for pkg in (*BOOK_PACKAGES, *SLIDE_PACKAGES, ORT_WEB):
            print(f"book: {pkg.name}@{pkg.version} {pkg.integrity[:24]}… -> {fetch(pkg, VENDOR_CACHE)}")
        return 0
    out = args.out.resolve()
    if args.execute:
        import refresh  # tools/, on the path since import live

        status = refresh.main(["--all", "--out", str(out)])
        if status:
            print("book: a notebook failed to run; the book was not rendered", file=sys.stderr)
            return status
        notebooks = sorted(out.glob("[0-9][0-9]_*.ipynb"))
    else:
        notebooks = stored_notebooks()
    rt = ROOT / "notebooks" / "runtimes.json"
    runtimes = json.loads(rt.read_text()) if rt.exists() else {}
    pages = build(notebooks, out, runtimes)
    print(f"book: {len(pages)} pages and the contents -> {out / 'index.html'}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, IntegrityError) as err:
        sys.exit(f"book: {err}")
