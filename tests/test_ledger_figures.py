"""Figures that notebooks produce reach the ledger only from the notebooks' stored outputs: the ledger quotes what
each notebook printed, never a typed copy; a stored figure that contradicts an entry's verdict fails its check;
and without stored notebooks the ledger says where the figure lives."""

import re
import shutil
from pathlib import Path

import pytest

from transformer_nb import claims as L
from transformer_nb.claims import figures
from transformer_nb.claims.__main__ import main

NOTEBOOKS = Path(__file__).parents[1] / "notebooks"
KEYS = {c.id: {k for n in L.PROSE for k in figures.PLACEHOLDER.findall(getattr(c, n))} for c in L.LEDGER}

# The line of each notebook's printed output that holds the figure, found without the ledger's own patterns.
LINES = {
    "02:unmasked_rule_kept": ("02", "(", "% of"),
    "09:text_exact": ("09", "the text's recipe after 30 epochs", "exact match"),
    "09:text_demo": ("09", "decodes its demo", "to ["),
    "09:improved_steps": ("09", "(= improved)", "at step"),
    "10:ex89_ppl_transformer": ("10", "Transformer  ", "training perplexity"),
    "10:ex89_ppl_lstm": ("10", "LSTM  ", "training perplexity"),
    "10:ex89_s_transformer": ("10", "Transformer  ", "s per epoch"),
    "10:ex89_s_lstm": ("10", "LSTM  ", "s per epoch"),
    "10:valid_transformer": ("10", "Transformer ", None),
    "10:valid_lstm": ("10", "LSTM ", None),
}


def _printed_lines(nb: str) -> list[str]:
    path = next(NOTEBOOKS.glob(f"{nb}_*.ipynb"))
    return figures._outputs(path, path.stat().st_mtime).splitlines()  # what it printed, read without the patterns


@pytest.mark.parametrize("key", sorted(figures.FIGURES))
def test_each_ledger_figure_matches_its_notebooks_printed_line_and_the_entries_quote_it(key):
    assert set().union(*KEYS.values()) == set(figures.FIGURES) == set(LINES)
    nb, start, has = LINES[key]
    figure = figures.read(key)
    lines = [x for x in _printed_lines(nb) if start in x and (has is None or has in x)]
    assert any(re.search(rf"(?<![\d.]){re.escape(figure)}(?![\d])", x) for x in lines), (key, figure, lines)
    for c in (L.get(cid) for cid, keys in KEYS.items() if key in keys):
        shown = " ".join(getattr(c.resolved(), n) for n in L.PROSE)
        assert figure in shown and "{" + key + "}" not in shown, c.id


def test_no_notebook_figure_is_typed_into_the_ledger():
    """No entry types a figure that its own notebook prints (it quotes ``{NN:key}``), and the stale copies the ledger
    once carried appear nowhere in its source. Per entry: another notebook's unrelated number may look the same
    (notebook 03's "10.7 GB" against an Exercise 8.9 timing of 10.7 s in notebook 10)."""
    for claim in L.LEDGER:
        raw = "\n".join(v for v in vars(claim).values() if isinstance(v, str))
        for key in figures.FIGURES:
            value = figures.read(key)
            if key.split(":")[0] == claim.notebook and len(value) >= 4:  # short figures would match unrelated numbers
                typed = re.search(rf"(?<![\d.]){re.escape(value)}(?![\d]|\.\d)", raw)
                assert typed is None, f"{claim.id} types {key} = {value}"


@pytest.fixture
def notebooks_copy(tmp_path, monkeypatch):
    """A copy of the stored notebooks that the ledger reads instead of the real ones."""
    for nb in ("02", "09", "10"):
        src = next(NOTEBOOKS.glob(f"{nb}_*.ipynb"))
        shutil.copy(src, tmp_path / src.name)
    monkeypatch.setattr(figures, "NOTEBOOKS_DIR", tmp_path)
    return tmp_path


def _edit(folder: Path, nb: str, old: str, new: str) -> None:
    path = next(folder.glob(f"{nb}_*.ipynb"))
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_the_ledger_reads_each_figure_by_its_own_label_from_the_stored_notebooks(notebooks_copy, capsys):
    """A changed figure changes the ledger and fails the verdict built on it; a figure no longer printed fails its
    entry's check. Issue 39: the 30-epoch run's exact match was read from the ladder's row of the same recipe,
    printed first: a label must start the line, and two lines under one label are refused, not resolved by order."""
    lstm, transformer = figures.read("10:ex89_ppl_lstm"), figures.read("10:ex89_ppl_transformer")
    higher = f"{float(transformer) + 100:.1f}"  # the LSTM now loses under the exercise's recipe
    _edit(notebooks_copy, "10", f"training perplexity   {lstm},", f"training perplexity   {higher},")
    assert higher in L.get("000-ex8.9-ppl").resolved().value  # the ledger follows the notebook, and the verdict fails
    assert main(["--check", "--text", "000"]) == 1 and "FAIL 000-ex8.9-ppl" in capsys.readouterr().out
    _edit(notebooks_copy, "02", "rule kept:", "rule held:")
    assert "does not print it" in L.run_checks([L.get("000-8.2.4-leak")])[0]["000-8.2.4-leak"]
    assert "(the figure in notebook 02 §4)" in L.cite("000-8.2.4-leak")
    exact = figures.read("09:text_exact")
    lines = [x for x in _printed_lines("09") if "exact match" in x]
    assert any(x.startswith("the text's recipe after 30 epochs") and f" {exact}%" in x for x in lines)
    assert not any(x.startswith("the text as written") and f" {exact}%" in x for x in lines)
    _edit(notebooks_copy, "09", "the text's recipe after 30 epochs (", "in short: the text's recipe after 30 epochs (")
    with pytest.raises(figures.NotPrinted, match="does not print it"):  # the label no longer starts the line
        figures.read("09:text_exact")
    _edit(notebooks_copy, "09", "in short: the text's recipe after 30 epochs (", "the text's recipe after 30 epochs (")
    _edit(notebooks_copy, "10", "LSTM         training perplexity", "Transformer  training perplexity")
    with pytest.raises(figures.NotPrinted, match="prints 2 lines labelled 'Transformer'"):
        figures.read("10:ex89_ppl_transformer")


def test_where_no_stored_figure_is_quoted_the_ledger_says_where_it_lives(tmp_path, monkeypatch, capsys):
    """Without stored notebooks (a wheel, Colab) the checks that need them are skipped, not failed. Notebook 09's
    appendix runs while 09 is re-executed, before its new outputs are stored: it points to its own figures instead
    of quoting the previous run's; other views quote them."""
    L.report(notebook="09")
    own = capsys.readouterr().out
    L.report(text="001")
    assert "(the figure in notebook 09 §9, above)" in re.sub(r"\s+", " ", own)
    assert f"exact match at step {figures.read('09:improved_steps')}" in re.sub(r"\s+", " ", capsys.readouterr().out)
    monkeypatch.setattr(figures, "NOTEBOOKS_DIR", tmp_path / "absent")
    line = L.cite("000-ex8.9-speed", reveal=True)
    assert "(the figure in notebook 10 §3)" in line and "{10:" not in line
    assert main(["--check"]) == 0 and "need the stored notebooks" in capsys.readouterr().out
