"""Notebook 00's map is read from the notebooks themselves."""

import json

import nbformat

from transformer_nb.companion import exercise_map, notebook_index


def _write(folder, name, opening, tags=(), png=False):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(opening), nbformat.v4.new_code_cell("1+1", metadata={"tags": list(tags)})]
    if png:
        nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data={"image/png": "AAAA"})]
    nbformat.write(nb, folder / f"{name}.ipynb")


def test_index_reads_titles_texts_exercises_checks_and_runtimes(tmp_path):
    _write(
        tmp_path,
        "01_a",
        "# 01 · Alpha\n**Serves:** 000 §8.2, 004 §5.\n\n## 3 · Exercise 8.5, done",
        tags=["nbval-check-output"],
        png=True,
    )
    _write(tmp_path, "02_b", "# 02 · Beta\n**Serves:** 001 §19.2\n**Runtime:** fast\n### Exercise 8.7 and more")
    (tmp_path / "runtimes.json").write_text(json.dumps({"01_a": {"quick_s": 3.0, "full_s": 9.5}}))
    idx = notebook_index(tmp_path)
    assert [n["title"] for n in idx] == ["01 · Alpha", "02 · Beta"]
    assert idx[0]["texts"] == ["000", "004"] and idx[1]["texts"] == ["001"]
    assert idx[1]["serves"] == "001 §19.2"
    assert idx[0]["check_cells"] == 1 and idx[0]["figures"] == 1 and idx[1]["check_cells"] == 0
    assert idx[0]["full_s"] == 9.5 and idx[1]["quick_s"] is None
    assert exercise_map(idx) == {"8.5": ["01_a"], "8.7": ["02_b"]}


def test_the_map_shipped_in_the_package_matches_the_notebooks():
    """Colab has no notebooks/ folder: notebook 00 reads the packaged copy, which must not drift."""
    from transformer_nb import companion

    shipped = json.loads(companion.INDEX_FILE.read_text(encoding="utf-8"))
    assert shipped == notebook_index(companion.notebooks_dir()), (
        "transformer_nb/notebook_index.json is stale: run .venv/bin/python -m transformer_nb.companion --write-index "
        "(tools/refresh.py and make runtimes do it for you)"
    )


def test_an_installed_copy_reads_the_shipped_map(tmp_path, monkeypatch):
    from transformer_nb import companion

    _write(tmp_path, "01_a", "# 01 · Alpha\n**Serves:** 000 §8.2\n## Exercise 8.5")
    path = companion.write_index(tmp_path, tmp_path / "index.json")
    monkeypatch.setattr(companion, "INDEX_FILE", path)
    monkeypatch.setattr(companion, "notebooks_dir", lambda: None)  # as in Colab: no checkout around the package
    assert [nb["name"] for nb in notebook_index()] == ["01_a"]
    assert exercise_map(notebook_index()) == {"8.5": ["01_a"]}
