"""A wording fix in one ledger entry makes stale only the notebooks whose outputs show that entry; a change of
verdict makes stale every notebook that shows the ledger (its counts and selections follow the verdicts)."""

import json
import shutil
from pathlib import Path

import notebook_harness as harness

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / harness.LEDGER_DATA


def _notebook(root: Path, name: str, printed: str, widgets: dict | None = None) -> Path:
    nb = {"cells": [{"cell_type": "code", "source": "report()", "metadata": {}, "outputs": []}], "metadata": {}}
    nb["cells"][0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": [printed]}]
    if widgets:
        nb["metadata"]["widgets"] = widgets
    nb["metadata"][harness.STAMP_KEY] = harness.make_stamp(nb, [], root, name=name)
    path = root / "notebooks" / f"{name}.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def _edit(root: Path, cid: str, field: str, new: str) -> None:
    """Change one field of one entry, in place in its data file (a one-word edit when ``new`` adds a word)."""
    path = root / harness.LEDGER_DATA / f"{cid[:3]}.toml"
    head, sep, rest = path.read_text(encoding="utf-8").partition(f'id = "{cid}"\n')
    assert sep, cid
    rest = rest.replace(f'\n{field} = "', f"\n{field} = {new}", 1) if field != "id" else new + rest
    path.write_text(head + ("" if field == "id" else sep) + rest, encoding="utf-8")


def test_a_wording_fix_stales_only_the_notebooks_that_show_the_entry(tmp_path):
    shutil.copytree(DATA, tmp_path / harness.LEDGER_DATA)
    (tmp_path / "notebooks").mkdir()
    a, b, c = list(harness._ledger(tmp_path))[:3]
    nbs = {
        "01_shows_a": _notebook(tmp_path, "01_shows_a", f"\n{a} · 000 §8.1 · CONFIRMED\n"),
        "02_shows_b": _notebook(tmp_path, "02_shows_b", f"[{b}] 000 §8.1: confirmed"),
        "03_a_in_a_widget": _notebook(tmp_path, "03_a_in_a_widget", "-", {"state": {"m": f"| `{a}` |"}}),
        "04_no_ledger": _notebook(tmp_path, "04_no_ledger", f"000-8.2.5 is a section, {a}x is no id"),
    }

    def stale():
        return sorted(name for name, path in nbs.items() if harness.stamp_problems(path))

    assert stale() == []
    assert "ledger" not in harness.load(nbs["04_no_ledger"])["metadata"][harness.STAMP_KEY]
    _edit(tmp_path, a, "claim", '"indeed ')  # one word added to what the text claims
    assert stale() == ["01_shows_a", "03_a_in_a_widget"]
    assert f"{a} changed" in harness.stamp_problems(nbs["01_shows_a"])[0]
    _edit(tmp_path, c, "id", f'id = "{c}-renamed"\n')  # shown nowhere, but the verdicts change
    assert stale() == ["01_shows_a", "02_shows_b", "03_a_in_a_widget"]
    assert "the ledger's verdicts" in harness.stamp_problems(nbs["02_shows_b"])[0]


def test_each_notebooks_stored_outputs_show_its_own_entries():
    """Notebooks 00-11 show the entries that belong to them and notebook 13 shows every entry, so those are the
    notebooks an entry's wording fix stales."""
    entries = harness._ledger(ROOT)
    shown = {
        p.stem[:2]: set(harness.ledger_digests(harness.load(p), ROOT).get("entries", {}))
        for p in harness.notebooks_in(ROOT)
    }
    assert shown["13"] == set(entries)
    for cid, e in entries.items():
        assert cid in shown[e["notebook"]], cid
