"""Notebooks 09's, 10's and 12's models run in the book's pages with no kernel (tools/live.py's make_live, live_models):
in headless Chromium, all requests but the local server's blocked, the three widgets mount and decode, and greedy
decoding gives PyTorch's tokens for 20 inputs each (the reversal's cross-attention: PyTorch's weights); a cell whose
model is missing keeps its stored output. Small seeded models: PyTorch against ONNX Runtime Web on the same weights."""

import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from nbformat.v4 import new_code_cell, new_notebook
from static_site import bundled, offline_page, serve

from transformer_nb import reversal as rv
from transformer_nb.core.generation import generate
from transformer_nb.exercises.capstone_lm import package_lm
from transformer_nb.lecture import NotPrepared
from transformer_nb.lm_recipe import build_model
from transformer_nb.widgets.catalog import WIDGETS

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import book
import live
import live_models

SHOWN = "() => [...document.querySelectorAll('.tnb-live pre')].filter((p) => p.textContent).length === 3"
DECODE = """async ([sources, prompts]) => {
  const m = await import("./_static/live/live.mjs"), rev = [], lm = [], top1 = [], cap = [];
  for (const s of sources) rev.push(await m.reverse(s, s.length + 4));
  for (const p of prompts) lm.push((await m.generate(p, 12)).slice(p.length));
  for (const p of prompts) cap.push((await m.generate(p, 12, 0, 0, 0, "capstone")).slice(p.length));
  for (const p of prompts.slice(0, 3)) top1.push((await m.generate(p, 12, 0.7, 1, 5)).slice(p.length));
  return { rev: rev.map((r) => r.out), cross: Array.from(rev[0].cross.data), lm, top1, cap };
}"""


def test_pages_decode_pytorchs_tokens(tmp_path, monkeypatch):
    rev = rv.build_model(rv.IMPROVED.model, rv.IMPROVED.init, device="cpu")
    rv.train(rev, replace(rv.IMPROVED, steps=40, batch_size=32), device="cpu")  # half-way: varied outputs, close calls
    gen = torch.Generator().manual_seed(0)
    lm = build_model("transformer", 300, torch.randperm(300, generator=gen), d_model=32, cutoffs=(50, 200), max_len=64)
    cap = package_lm(300, 32, 2, 64, 2, 64)  # d_model, heads, d_ff, layers, max_len
    with torch.no_grad():  # larger weights than a fresh model's: words that vary
        [p.normal_(0, 0.3, generator=gen) for p in [*lm.parameters(), *cap.parameters()] if p.dim() > 1]
    names = ("reversal", "lm", "capstone")  # the book leaves the capstone out (its size); the mechanism serves it
    for name, model in zip(names, (rev, lm, cap)):
        live_models.export(name, model, tmp_path / "m", SimpleNamespace(itos=[f"w{i}" for i in range(300)], unk=299))
    src, args = 'm = lecture.cached("{}")\nGenerateWidget(*m{}).show()', [("lm", ""), ("capstone", ', prompt="w3 x"')]
    cells = ["ReversalWidget(m).show()", *(src.format(*a) for a in [*args, ("lm", "")])]  # as notebook 14; "lm" twice
    view = {"output_type": "display_data", "metadata": {}, "data": {live.VIEW: {"model_id": "x"}}}
    nb = new_notebook(cells=[new_code_cell(c, outputs=[view]) for c in cells])
    monkeypatch.setattr(live_models, "export_lecture", lambda k: (_ for _ in ()).throw(NotPrepared(k)))
    assert live.make_live(nb, "14_lecture", tmp_path, models=names, ort=book.ort_files) == 0 and all(
        c.outputs == [view] for c in nb.cells
    )  # as stored
    monkeypatch.setattr(live_models, "export_lecture", lambda k: (tmp_path / "m" / f"{k}.onnx", "a test model"))
    assert bundled(
        lambda: live.make_live(nb, "14_lecture", tmp_path, models=names, ort=book.ort_files)
    ) == 3 and nb.cells[-1].outputs == [view]
    html = "".join(c.outputs[-1]["data"].get("text/html", "") for c in nb.cells)
    (tmp_path / "index.html").write_text(f"<!doctype html><meta charset=utf-8><body>{html}</body>")
    draw = lambda lo, hi, n: torch.randint(lo, hi, (int(n),), generator=gen).tolist()
    sources = [draw(3, 13, n) for n in torch.randint(3, 10, (20,), generator=gen)]
    prompts = [draw(0, 300, n) for n in torch.randint(1, 12, (20,), generator=gen)]
    with serve(tmp_path) as url, offline_page(url) as page:
        page.goto(f"{url}/index.html")
        got = page.evaluate(DECODE, [sources, prompts])
        page.wait_for_function(SHOWN, timeout=60_000)
        shown = [page.locator(f"#tnb-live-{k} pre").inner_text() for k in ("reversal", "lm", "capstone")]
        assert not page.blocked and not page.missing, (page.blocked, page.missing)
    assert shown[0].startswith("output [") and ("✗ expected" in shown[0] or "✓ correct" in shown[0])
    assert "▶" in shown[1] and "not in the vocabulary (-> <unk>): The, history" in shown[1]
    assert shown[2].startswith("w3 w299 ▶") and "not in the vocabulary (-> <unk>): x" in shown[2]
    want = [rv.greedy_decode(rev, torch.tensor([s]), max_new=len(s) + 4)[0].tolist() for s in sources]
    assert [r + [rv.PAD] * (len(w) - len(r)) for r, w in zip(got["rev"], want)] == want
    assert len({t for r in want for t in r}) >= 8  # not one token over and over
    tgt_in = torch.tensor([[rv.BOS] + got["rev"][0][:-1]])  # the last step: BOS + the outputs but the last
    cross = torch.cat(rv.attention_maps(rev, torch.tensor([sources[0]]), tgt_in)["cross"])
    torch.testing.assert_close(torch.tensor(got["cross"]).view_as(cross), cross, atol=1e-5, rtol=0)
    want = [lm.head.ranks[generate(lm, lm.head.order[p], 12)].tolist()[len(p) :] for p in prompts]  # the page's: ranks
    assert got["lm"] == want and len({t for r in want for t in r}) >= 10
    assert got["top1"] == want[:3]  # sampling from the top 1 is greedy
    assert got["cap"] == [generate(cap, torch.tensor(p), 12).tolist()[len(p) :] for p in prompts]  # word ids: tied head
    with pytest.raises(ValueError, match="runs no trained model in the page"):
        live_models.widget_html(WIDGETS[0], tmp_path)
