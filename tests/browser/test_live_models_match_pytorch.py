"""Notebooks 09's, 10's and 12's models run in the book's pages with no kernel (tools/live.py's make_live, live_models).
The pages: notebook 10's and the lecture's (14) model-widget cells, as stored, made live by make_live with models of
the lecture's shapes and seeded weights (what the page computes is checked here, not what the models learned), in
headless Chromium with all requests but the local server's blocked. Greedy decoding gives PyTorch's tokens for 20
inputs each (the reversal's cross-attention: PyTorch's weights; the capstone's, stored in 8 bits: PyTorch's with those
weights); a cell whose model is missing keeps its stored output; once a page has warmed its wasm (the widgets say so),
moving the first control of the generation and reversal widgets redraws them within REDRAW_MS: the median of 10
moves a tenth of a second apart (a reader's pace: on a loaded machine, moves back to back get the process's fair share
of the cores, not a reader's), each from the control's change to the redrawn output and one animation frame, on both
pages. Notebook 12's capstone computes its 33,278-word head 30 times a redraw: 35–48 ms on an idle machine, over 50
when make test's other worker keeps the second core busy; it is held to CAPSTONE_MS."""

import statistics
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
import torch
from static_site import WARM, bundled, offline_page, serve

from transformer_nb import reversal as rv
from transformer_nb.core.generation import generate
from transformer_nb.exercises.capstone_lm import CAPSTONE_MODEL, package_lm, sizes
from transformer_nb.lecture import NotPrepared
from transformer_nb.lm_recipe import build_model
from transformer_nb.widgets.catalog import WIDGETS

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import book
import live
import live_models

ROOT = Path(__file__).resolve().parents[2]
REDRAW_MS, CAPSTONE_MS = 50, 100
PAGES = {"10_wikitext_lm": ("lm",), "14_lecture": ("reversal", "lm", "capstone")}
DECODE = """async ([sources, prompts]) => {
  const m = await import("./_static/live/live.mjs"), rev = [], lm = [], top1 = [], cap = [];
  for (const s of sources) rev.push(await m.reverse(s, s.length + 4));
  for (const p of prompts) lm.push((await m.generate(p, 12)).slice(p.length));
  for (const p of prompts) cap.push((await m.generate(p, 12, 0, 0, 0, "capstone")).slice(p.length));
  for (const p of prompts.slice(0, 3)) top1.push((await m.generate(p, 12, 0.7, 1, 5)).slice(p.length));
  return { rev: rev.map((r) => r.out), cross: Array.from(rev[0].cross.data), lm, top1, cap };
}"""
MOVE = """async ([id, values]) => {
  const root = document.getElementById(id), pre = root.querySelector("pre"), el = root.querySelector("input");
  const times = [], once = (ok) => new MutationObserver((_, o) => (o.disconnect(), ok()));
  for (const v of values) {
    const drawn = new Promise((ok) => once(ok).observe(pre, { childList: true }));
    const t0 = performance.now();
    el.value = v;
    el.dispatchEvent(new Event("change"));
    await drawn;
    await new Promise(requestAnimationFrame);
    times.push(performance.now() - t0);
    await new Promise((ok) => setTimeout(ok, 100)); // a reader's pace
  }
  return { times, shown: pre.textContent };
}"""
MOVES = {
    "lm": [f"w{i} w{2 * i} w7" for i in range(10)],
    "capstone": [f"w{i} w{2 * i} w7" for i in range(10)],
    "reversal": [f"3 {i % 10 + 3} 5 {12 - i % 9}" for i in range(10)],
}


def model_cells(stem: str):
    """The stored notebook ``stem`` with only its cells that show a model widget (as make_live finds them)."""
    nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    views = lambda c: any(live.VIEW in o.get("data", {}) for o in c.get("outputs", []))
    nb.cells = [c for c in nb.cells if c.cell_type == "code" and views(c) and live._entry_of(c.source, stem).needs]
    return nb


def test_pages_decode_pytorchs_tokens_and_redraw_in_time(tmp_path, monkeypatch):
    rev = rv.build_model(rv.IMPROVED.model, rv.IMPROVED.init, device="cpu")
    rv.train(rev, replace(rv.IMPROVED, steps=40, batch_size=32), device="cpu")  # half-way: varied outputs, close calls
    gen, v = torch.Generator().manual_seed(0), 33278  # WikiText-2's vocabulary
    lm = build_model("transformer", v, torch.randperm(v, generator=gen))  # notebook 10's model
    cap = package_lm(v, *sizes(CAPSTONE_MODEL))  # notebook 12's
    with torch.no_grad():  # larger weights than a fresh model's: words that vary
        [p.normal_(0, 0.3, generator=gen) for p in [*lm.parameters(), *cap.parameters()] if p.dim() > 1]
    for name, model in zip(PAGES["14_lecture"], (rev, lm, cap)):
        live_models.export(name, model, tmp_path / "m", SimpleNamespace(itos=[f"w{i}" for i in range(v)], unk=v - 1))
    monkeypatch.setattr(live_models, "export_lecture", lambda k: (_ for _ in ()).throw(NotPrepared(k)))
    nb, stored = model_cells("14_lecture"), [c.outputs for c in model_cells("14_lecture").cells]
    assert (
        live.make_live(nb, "14_lecture", tmp_path, ort=book.ort_files) == 0 and [c.outputs for c in nb.cells] == stored
    )
    monkeypatch.setattr(live_models, "export_lecture", lambda k: (tmp_path / "m" / f"{k}.onnx", "a test model"))
    ort = bundled(book.ort_files)
    for stem, names in PAGES.items():
        nb = model_cells(stem)
        assert live.make_live(nb, stem, tmp_path, ort=lambda: ort) == len(names)
        html = "".join(o["data"].get("text/html", "") for c in nb.cells for o in c.outputs if "data" in o)
        (tmp_path / f"{stem}.html").write_text(f"<!doctype html><meta charset=utf-8><body>{html}</body>")
    draw = lambda lo, hi, n: torch.randint(lo, hi, (int(n),), generator=gen).tolist()
    sources = [draw(3, 13, n) for n in torch.randint(3, 10, (20,), generator=gen)]
    prompts = [draw(0, v, n) for n in torch.randint(1, 12, (20,), generator=gen)]
    medians = {}
    with serve(tmp_path) as url, offline_page(url) as page:
        for stem, names in PAGES.items():
            page.goto(f"{url}/{stem}.html")
            page.wait_for_function(WARM, timeout=120_000)
            for name in [n for n in MOVES if n in names]:
                moved = page.evaluate(MOVE, [f"tnb-live-{name}", MOVES[name]])
                medians[f"{stem} {name}"] = statistics.median(moved["times"])
                assert "▶" in moved["shown"] or "output [" in moved["shown"], moved["shown"]
        got = page.evaluate(DECODE, [sources, prompts])
        assert not page.blocked and not page.missing, (page.blocked, page.missing)
    print("redraw medians (ms), once warm:", {k: round(t, 1) for k, t in medians.items()})
    assert all(t <= (CAPSTONE_MS if "capstone" in k else REDRAW_MS) for k, t in medians.items()), medians
    want = [rv.greedy_decode(rev, torch.tensor([s]), max_new=len(s) + 4)[0].tolist() for s in sources]
    assert [r + [rv.PAD] * (len(w) - len(r)) for r, w in zip(got["rev"], want)] == want
    assert len({t for r in want for t in r}) >= 8  # not one token over and over
    tgt_in = torch.tensor([[rv.BOS] + got["rev"][0][:-1]])  # the last step: BOS + the outputs but the last
    cross = torch.cat(rv.attention_maps(rev, torch.tensor([sources[0]]), tgt_in)["cross"])
    torch.testing.assert_close(torch.tensor(got["cross"]).view_as(cross), cross, atol=1e-5, rtol=0)
    want = [lm.head.ranks[generate(lm, lm.head.order[p], 12)].tolist()[len(p) :] for p in prompts]  # the page's: ranks
    assert got["lm"] == want and len({t for r in want for t in r}) >= 10
    assert got["top1"] == want[:3]  # sampling from the top 1 is greedy
    low = live_models.int8(cap)  # word ids: a tied head
    assert got["cap"] == [generate(low, torch.tensor(p), 12).tolist()[len(p) :] for p in prompts]
    with pytest.raises(ValueError, match="runs no trained model in the page"):
        live_models.widget_html(WIDGETS[0], tmp_path)
