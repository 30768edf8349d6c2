"""`tools/refresh.py --stale [--list]` on a damaged tree: a stored notebook or twin that cannot be read, or a corrupt
notebooks/runtimes.json, is named with its fix while the other notebooks are still handled; a --root that is no
checkout is refused. And the runtimes: a refresh inside the noise of two runs records nothing (no diff), while the
map notebook (00) is stale once a runtime it shows moves beyond that noise."""

import json
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import notebook_harness as harness  # noqa: E402
import refresh  # noqa: E402

TWIN = "# %% [markdown]\n# # {name}\n\n# %%\nx = {value}\nprint(x)\n"


def store(root: Path, name: str, value: int = 1, twin_text: str | None = None) -> Path:
    """A twin and its stored notebook, stamped as a clean full-profile refresh would (nothing executed)."""
    twin = root / "notebooks" / "py" / f"{name}.py"
    twin.parent.mkdir(parents=True, exist_ok=True)
    twin.write_text(twin_text or TWIN.format(name=name, value=value))
    nb = refresh.build_inputs(twin)
    for count, cell in enumerate((c for c in nb.cells if c.cell_type == "code"), start=1):
        cell.execution_count = count
    nb.metadata[harness.STAMP_KEY] = harness.make_stamp(nb, [], root, name=name)
    nbformat.write(nb, harness.ipynb_of(twin))
    return harness.ipynb_of(twin)


@pytest.fixture
def tree(tmp_path):
    """01 fresh, 02 stale (its twin changed), 03 to damage."""
    store(tmp_path, "01_fresh")
    store(tmp_path, "02_stale")
    (tmp_path / "notebooks" / "py" / "02_stale.py").write_text(TWIN.format(name="02_stale", value=2))
    store(tmp_path, "03_broken")
    (tmp_path / "notebooks" / "runtimes.json").write_text(json.dumps({"01_fresh": {"full_s": 8.0}}))
    return tmp_path


def listing(root, capsys) -> tuple[int, str]:
    status = refresh.main(["--stale", "--list", "--root", str(root)])
    out = capsys.readouterr()
    return status, out.out + out.err


DAMAGE = {
    "truncated": lambda p: p.write_text(p.read_text()[:200]),
    "empty": lambda p: p.write_text(""),
    "not-utf8": lambda p: p.write_bytes(b"\xff\xfe" + p.read_bytes()),
    "metadata-list": lambda p: p.write_text(json.dumps(json.loads(p.read_text()) | {"metadata": []})),
    "stamp-string": lambda p: p.write_text(
        json.dumps(json.loads(p.read_text()) | {"metadata": {harness.STAMP_KEY: "x"}})
    ),
    "twin-not-utf8": lambda p: (p.parent / "py" / "03_broken.py").write_bytes(b"# %%\nx = '\xff'\n"),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_notebook_is_named_with_its_fix_and_the_others_are_still_handled(tree, capsys, damage, request):
    DAMAGE[damage](tree / "notebooks" / "03_broken.ipynb")
    status, text = listing(tree, capsys)
    assert status == 0, text
    bad = "notebooks/py/03_broken.py" if "twin" in request.node.name else "notebooks/03_broken.ipynb"
    assert f"refresh: 03_broken is stale: {bad} cannot be read" in text and f"git checkout {bad}" in text
    assert ("make refresh NB=03_broken" in text) == bad.endswith(".ipynb")
    assert "02_stale is stale" in text and "01_fresh" not in text and "refresh: 2 stale" in text
    assert "Traceback" not in text


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"01_fresh": 8.0}', '{"01_fresh": {"full_s": "8"}}'])
def test_a_corrupt_runtimes_file_is_named_listing_goes_on_and_a_refresh_stops_before_it_starts(
    tree, capsys, monkeypatch, content
):
    (tree / "notebooks" / "runtimes.json").write_text(content)
    status, text = listing(tree, capsys)
    assert status == 0 and "notebooks/runtimes.json cannot be read" in text and "git checkout" in text
    assert "02_stale is stale" in text and "refresh: 1 stale" in text and "(1 with no stored time)" in text
    monkeypatch.delenv("TNB_PROFILE", raising=False)
    before = (tree / "notebooks" / "02_stale.ipynb").read_bytes()
    assert refresh.main(["--stale", "--root", str(tree)]) == 2
    assert "notebooks/runtimes.json cannot be read" in capsys.readouterr().err
    assert (tree / "notebooks" / "02_stale.ipynb").read_bytes() == before  # nothing ran
    monkeypatch.setenv("TNB_PROFILE", "full")  # as the refresh sets it; restored by monkeypatch


@pytest.mark.parametrize("flags", [["--stale", "--list"], ["--stale"], ["--all"]])
def test_a_root_that_is_no_checkout_is_refused(tmp_path, capsys, flags):
    with pytest.raises(SystemExit) as stop:
        refresh.main([*flags, "--root", str(tmp_path / "nonexistent")])
    assert stop.value.code == 2
    assert "no notebooks/py/ there" in capsys.readouterr().err


def test_a_time_within_the_noise_of_two_runs_is_not_recorded(tree, monkeypatch):
    written = []
    monkeypatch.setattr(harness, "record_runtime", lambda *a, **k: written.append(a))
    assert not refresh.record_runtime("01_fresh", 6.5, tree)  # "~5 s" against "~10 s": the same run twice
    assert written == []
    assert refresh.record_runtime("01_fresh", 30.0, tree) and refresh.record_runtime("02_stale", 3.0, tree)
    assert written == [("01_fresh", "full", 30.0), ("02_stale", "full", 3.0)]


def test_the_map_notebook_is_stale_once_a_runtime_it_shows_moves_beyond_noise(tree, capsys):
    ipynb = store(
        tree, "00_map", twin_text="# %%\nfrom transformer_nb.companion import notebook_index\n\nnotebook_index()\n"
    )
    nb = json.loads(ipynb.read_text())
    nb["metadata"][harness.STAMP_KEY]["runtimes"] = {"01_fresh": {"full_s": 8.0}}  # what refresh.py stamps
    ipynb.write_text(json.dumps(nb))
    runtimes = tree / "notebooks" / "runtimes.json"
    runtimes.write_text(json.dumps({"01_fresh": {"full_s": 11.0}}))  # noise: still fresh
    assert "00_map" not in listing(tree, capsys)[1]
    runtimes.write_text(json.dumps({"01_fresh": {"full_s": 40.0}}))
    text = listing(tree, capsys)[1]
    assert (
        "00_map is stale: notebooks/00_map.ipynb shows runtimes that changed since (01_fresh full 8 s -> 40 s)" in text
    )


def test_a_refresh_that_moves_a_runtime_refreshes_the_map_notebook_after_it(tree, monkeypatch, capsys):
    store(tree, "00_map", twin_text="# %%\nfrom transformer_nb.companion import notebook_index\n\nnotebook_index()\n")
    ran = []

    def fake_refresh(twin, out_dir, timeout):  # what a refresh stores (00: the runtimes it showed), without a kernel
        ran.append(twin.stem)
        path = store(tree, twin.stem, twin_text=twin.read_text())
        nb = json.loads(path.read_text())
        shown = {n: t for n, t in refresh.read_runtimes(tree).items() if n != twin.stem}
        nb["metadata"][harness.STAMP_KEY]["runtimes"] = shown if twin.stem == "00_map" else {}
        path.write_text(json.dumps(nb))
        return path

    def fake_record(name, seconds, root):  # every notebook took 30 s: 01's 8 s in 00's map moves beyond noise
        runtimes = root / "notebooks" / "runtimes.json"
        runtimes.write_text(json.dumps({**refresh.read_runtimes(root), name: {"full_s": 30.0}}))

    monkeypatch.setattr(refresh, "refresh", fake_refresh)
    monkeypatch.setattr(refresh, "record_runtime", fake_record)
    monkeypatch.delenv("TNB_PROFILE", raising=False)
    assert refresh.main(["--all", "--root", str(tree)]) == 0
    assert ran == ["00_map", "01_fresh", "02_stale", "03_broken", "00_map"]  # 00 once more, after the others
    capsys.readouterr()
    assert "refresh: 0 stale" in listing(tree, capsys)[1]
