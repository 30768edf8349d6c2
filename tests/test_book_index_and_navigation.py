"""The rendered book (tools/book.py): an index that says what each notebook is, and pages a reader can
navigate (previous / next, a table of contents), with the appendix and the solutions folded."""

import base64
import hashlib
import io
import re
import sys
import tarfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import book  # noqa: E402

WIDGET_STATE, VIEW = "application/vnd.jupyter.widget-state+json", "application/vnd.jupyter.widget-view+json"


def _notebook(num: str, name: str, exercise: str | None = None) -> nbformat.NotebookNode:
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    opening = (
        f"# {num} · {name}\n\n[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](x)\n\n"
        f"{name} is the letter number {num}. It comes after the one before.\n\n"
        f"**Serves:** 000 §8.{int(num) + 1}" + (f", Exercise {exercise}" if exercise else "") + "\n\n"
        "**Runtime on 2 CPU cores:** quick ~1 s"
    )
    cells = [
        md(opening),
        code("x = 1", outputs=[nbformat.v4.new_output("display_data", {VIEW: {"model_id": "bar"}})]),
        md("## 1 · First section\n\nText."),
        md("### A smaller part"),
        code("print(x)"),
        md("## Exercises" + (f"\n\n### Exercise {exercise}: do it" if exercise else "")),
    ]
    if exercise:
        cells.append(code("# Solution: the worked check\nassert x == 1", metadata={"tags": ["solution"]}))
    cells += [
        md("## Appendix · The texts, checked", metadata={"jp-MarkdownHeadingCollapsed": True}),
        code("print('audit')"),
        md("### Audit detail"),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": {"bar": {"model_name": "IntProgressModel", "state": {"max": 9}}}}}
    return nb


def _publish(registry: Path, pkg: book.Package, files: list[str]) -> book.Package:
    """A tarball of stand-ins of ``files`` (under ``package/``) laid out as the npm registry serves it; its Package."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for rel in files:
            data = f"/* {pkg.name} {rel} */".encode()
            info = tarfile.TarInfo(f"package/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path = registry / pkg.name / "-" / f"{pkg.folder}-1.0.0.tgz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue())
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(buf.getvalue()).digest()).decode()
    return book.Package(pkg.name, "1.0.0", integrity, pkg.files)


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    """A local npm registry (file://) holding stand-ins of the book's packages, each with a file the pages do not
    need (which must not be copied)."""
    folder = tmp_path_factory.mktemp("registry")
    fakes = {
        pkg.name: _publish(folder, pkg, files)
        for pkg, files in (
            (book.REQUIREJS, ["require.js"]),
            (book.MATHJAX, ["MathJax.js", "unpacked/MathJax.js", "extensions/a11y/mathmaps/mathmaps_ie.js"]),
        )
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(book, "NPM_REGISTRY", folder.as_uri())
        mp.setattr(book, "VENDOR_CACHE", tmp_path_factory.mktemp("vendor"))
        mp.setattr(book, "BOOK_PACKAGES", tuple(fakes.values()))
        yield folder, fakes


@pytest.fixture(scope="module")
def built(tmp_path_factory, registry):
    src, out = tmp_path_factory.mktemp("nbs"), tmp_path_factory.mktemp("book")
    paths = []
    for num, name, ex in (("00", "Alpha", None), ("01", "Beta", "8.1"), ("02", "Gamma", None)):
        paths.append(src / f"{num}_{name.lower()}.ipynb")
        nbformat.write(_notebook(num, name, ex), paths[-1])
    runtimes = {"01_beta": {"quick_s": 3.2, "full_s": 125.0}}
    book.build(paths, out, runtimes)
    return out


def _page(out, name):
    return (out / f"{name}.html").read_text(encoding="utf-8")


def test_the_index_says_what_each_notebook_is(built):
    index = (built / "index.html").read_text(encoding="utf-8")
    for stem, title in (("00_alpha", "00 · Alpha"), ("01_beta", "01 · Beta"), ("02_gamma", "02 · Gamma")):
        assert f'href="{stem}.html">{title}</a>' in index
        assert f'href="{stem}.ipynb"' in index and (built / f"{stem}.ipynb").exists()
    assert "Beta is the letter number 01." in index  # the summary: the opening's first sentence
    assert "It comes after" not in index and "colab" not in index.lower().split("</h1>")[1].split("jupyter (or")[0]
    assert "<b>Serves:</b> 000 §8.2, Exercise 8.1" in index
    assert '<span class="tnb-ex">Ex. 8.1</span>' in index
    assert "quick 3 s<br>full 2 min" in index and "quick –<br>full –" in index  # 00 and 02 have no runtime
    page = _page(built, "00_alpha")  # a stored widget (a progress bar) is drawn from its state, with no widget manager
    assert '<span> <progress value="0" max="9"></progress></span>' in page and WIDGET_STATE not in page


def test_pages_link_to_their_neighbours_and_the_contents(built):
    first, middle, last = (_page(built, n) for n in ("00_alpha", "01_beta", "02_gamma"))
    for page in (first, middle, last):
        assert page.count('href="index.html"') >= 3  # sidebar title, top and bottom pagers
    assert 'rel="prev"' not in first and first.count('href="01_beta.html" rel="next"') == 2
    assert middle.count('href="00_alpha.html" rel="prev"') == 2 and middle.count('href="02_gamma.html" rel="next"') == 2
    assert 'rel="next"' not in last and last.count('href="01_beta.html" rel="prev"') == 2
    assert '<li class="tnb-here"><a href="01_beta.html">01 · Beta</a></li>' in middle  # where the reader is


def test_every_page_has_a_table_of_contents_that_points_at_its_headings(built):
    page = _page(built, "01_beta")
    side = page.split('<nav class="tnb-side">', 1)[1].split("</nav>", 1)[0]
    toc = re.findall(r'<li class="tnb-h([23])"><a href="#([^"]+)">([^<]*)</a>', side)
    assert [(lvl, text) for lvl, _, text in toc] == [
        ("2", "1 · First section"), ("3", "A smaller part"), ("2", "Exercises"), ("3", "Exercise 8.1: do it"),
        ("2", "Appendix · The texts, checked"), ("3", "Audit detail"),
    ]  # fmt: skip
    body = page.split("</nav>", 2)[-1]
    for _, anchor, _ in toc:
        assert f'id="{anchor}"' in body, anchor


def test_the_appendix_and_the_solutions_are_folded(built):
    page = _page(built, "01_beta")
    folds = re.findall(r'<details class="(tnb-fold|tnb-solution)"><summary>(.*?)</summary>(.*?)</details>', page, re.S)
    assert [(kind, re.sub("<[^>]+>", "", s)) for kind, s, _ in folds] == [
        ("tnb-solution", "Solution: the worked check (click to show)"),
        ("tnb-fold", "Appendix · The texts, checked (click to open)"),
    ]
    solution, appendix = folds[0][2], folds[1][2]
    assert "assert" in solution and "Appendix" not in solution
    assert "audit" in appendix and "Audit detail" in appendix  # folded up to the end of the notebook
    assert "Exercises" not in appendix
    assert page.index("Exercise 8.1: do it") < page.index('<details class="tnb-solution">')


def test_the_summary_skips_a_paragraph_that_only_introduces_a_list():
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# 01 · X\n\nWhat this covers:\n\n1. one\n2. two\n\nX is a *letter*.")]
    )
    assert book.summary(nb) == "X is a letter."


def test_pages_load_their_javascript_from_static_only(built):
    page = _page(built, "01_beta")
    for url in ("_static/requirejs/require.js", "_static/mathjax/MathJax.js"):
        assert url in page, f"{url} is not loaded"
        assert (built / url).is_file(), f"{url} is not bundled"
    assert not re.search(r"(src=|Src = )['\"]https?://(?!colab)", page), "a script still comes from the network"
    assert [p.name for p in (built / "_static/mathjax").iterdir()] == ["MathJax.js"], "files the pages do not need"
    assert "embed-amd" not in page and not (built / "_static/html-manager").exists(), "a widget manager is loaded"


def test_a_second_build_downloads_nothing(built, registry, tmp_path):
    folder, fakes = registry
    moved = folder.with_name(folder.name + "-away")
    folder.rename(moved)  # the registry is gone: only the cache can answer
    try:
        book.vendor(tmp_path, tuple(fakes.values()), book.VENDOR_CACHE)
    finally:
        moved.rename(folder)
    assert (tmp_path / "_static/requirejs/require.js").is_file()


def test_a_download_that_does_not_match_its_pinned_hash_is_refused_and_deleted(registry, tmp_path):
    folder, fakes = registry
    good = fakes[book.REQUIREJS.name]
    forged = book.Package(good.name, good.version, "sha512-" + "A" * 86 + "==", good.files)
    with pytest.raises(book.IntegrityError, match="pinned"):
        book.fetch(forged, tmp_path)
    assert list(tmp_path.iterdir()) == [], "the refused download or its contents were kept"


def test_an_unreachable_registry_names_the_package_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(book, "NPM_REGISTRY", (tmp_path / "nowhere").as_uri())
    with pytest.raises(OSError, match="requirejs@2.3.7.*make book-cdn"):
        book.fetch(book.REQUIREJS, tmp_path / "cache")


def test_slides_hide_setup_solutions_and_appendix_and_start_a_slide_per_heading_and_figure():
    import slides

    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    figure = code("plot()")
    figure.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBOR", "text/plain": "<Figure>"})]
    solution = code("# Solution\nanswer = 42")
    solution.metadata["tags"] = ["solution"]
    appendix = md("## Appendix · checked")
    appendix.metadata["jp-MarkdownHeadingCollapsed"] = True
    cells = [
        md("# 01 · Title\n\nWhat it is."),
        code("# Setup\nfrom transformer_nb import setup\nsetup()"),
        code("import torch\n\ntorch.set_printoptions(precision=3)"),
        md("## 1 · A section"),
        code("x = 1"),
        figure,
        md("What the figure shows."),
        md("### Exercise 1"),
        code("def f():\n    raise NotImplementedError"),
        solution,
        md("### Exercise 2"),
        appendix,
        code("report()"),
        md("## After the appendix"),
    ]
    kinds = slides.plan(nbformat.v4.new_notebook(cells=cells))
    # title, setup, imports and settings, heading, x = 1, figure (on its own), what follows a figure, exercise 1,
    # its stub, its solution, exercise 2, the appendix heading and its cells, the next heading of its level (ends it)
    assert kinds == "slide skip skip slide - slide slide slide - skip slide skip skip slide".split()  # noqa: SIM905
    kept = slides.with_slides(nbformat.v4.new_notebook(cells=cells)).cells
    assert "answer = 42" not in "".join(c.source for c in kept) and len(kept) == kinds.count("slide") + kinds.count("-")
