"""Notebooks 09's and 10's models run in the book's pages with no kernel (tools/live_models.py, tools/live.mjs): in
headless Chromium, every request but the local server's blocked, the page's greedy decoding gives PyTorch's tokens
for 20 inputs each, its cross-attention weights are PyTorch's, and both widgets mount and decode. Small seeded
models: the point is PyTorch against ONNX Runtime Web on the same weights."""

import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from static_site import bundled, offline_page, serve

from transformer_nb import reversal as rv
from transformer_nb.core.generation import generate
from transformer_nb.lm_recipe import build_model
from transformer_nb.widgets.catalog import WIDGETS

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import live_models

N_NEW = 12
DECODE = """async ([sources, prompts, n]) => {
  const m = await import("./_static/live/live.mjs");
  const rev = [], lm = [], top1 = [];
  for (const s of sources) rev.push(await m.reverse(s, s.length + 4));
  for (const p of prompts) lm.push((await m.generate(p, n)).slice(p.length));
  for (const p of prompts.slice(0, 3)) top1.push((await m.generate(p, n, 0.7, 1, 5)).slice(p.length));
  return { rev: rev.map((r) => r.out), cross: Array.from(rev[0].cross.data), lm, top1 };
}"""

SHOWN = "() => [...document.querySelectorAll('.tnb-live pre')].filter((p) => p.textContent).length === 2"


class Words:
    def __init__(self, n):
        self.itos, self.unk = [f"w{i}" for i in range(n)], n - 1


@pytest.fixture(scope="module")
def decoded(tmp_path_factory):
    """PyTorch's and the page's tokens, for two small seeded models."""
    tmp = tmp_path_factory.mktemp("live")
    rev = rv.build_model(rv.IMPROVED.model, rv.IMPROVED.init, device="cpu")
    rv.train(rev, replace(rv.IMPROVED, steps=40, batch_size=32), device="cpu")  # half-way: varied outputs, close calls
    gen = torch.Generator().manual_seed(0)
    lm = build_model("transformer", 300, torch.randperm(300, generator=gen), d_model=32, cutoffs=(50, 200), max_len=64)
    with torch.no_grad():  # larger weights than a fresh model's: words that differ from one step to the next
        for p in lm.parameters():
            if p.dim() > 1:
                p.normal_(0, 0.3, generator=gen)
    live_models.export("reversal", rev, tmp / "models")
    live_models.export("lm", lm, tmp / "models", Words(300))
    pages = {e.needs: e for e in WIDGETS if e.needs}
    html = lambda: "\n".join(live_models.widget_html(e, tmp / "_static", tmp / "models") for e in pages.values())
    body = bundled(html)
    (tmp / "index.html").write_text(f"<!doctype html><meta charset=utf-8><body>{body}</body>")
    draw = lambda lo, hi, n: torch.randint(lo, hi, (int(n),), generator=gen).tolist()
    sources = [draw(3, 13, n) for n in torch.randint(3, 10, (20,), generator=gen)]
    prompts = [draw(0, 300, n) for n in torch.randint(1, 12, (20,), generator=gen)]
    with serve(tmp) as url, offline_page(url) as page:
        page.goto(f"{url}/index.html")
        got = page.evaluate(DECODE, [sources, prompts, N_NEW])
        page.wait_for_function(SHOWN, timeout=60_000)
        shown = [page.locator(f"#tnb-live-{k} pre").inner_text() for k in ("reversal", "lm")]
        assert not page.blocked and not page.missing, (page.blocked, page.missing)
    torch_rev = [rv.greedy_decode(rev, torch.tensor([s]), max_new=len(s) + 4)[0].tolist() for s in sources]
    torch_lm = [generate(lm, torch.tensor(p), N_NEW).tolist()[len(p) :] for p in prompts]
    first = got["rev"][0]  # the widget draws the cross-attention of its last step: BOS and every output but the last
    cross = rv.attention_maps(rev, torch.tensor([sources[0]]), torch.tensor([[rv.BOS] + first[:-1]]))["cross"]
    return dict(got=got, shown=shown, rev=torch_rev, lm=torch_lm, cross=torch.cat(cross), sources=sources)


def test_reversal_page_decodes_pytorchs_tokens(decoded):
    pad = [r + [rv.PAD] * (len(t) - len(r)) for r, t in zip(decoded["got"]["rev"], decoded["rev"])]
    assert pad == decoded["rev"]
    assert len({t for r in decoded["rev"] for t in r}) >= 8  # not one token over and over
    cross = torch.tensor(decoded["got"]["cross"]).view_as(decoded["cross"])
    torch.testing.assert_close(cross, decoded["cross"], atol=1e-5, rtol=0)


def test_lm_page_generates_pytorchs_greedy_words(decoded):
    assert decoded["got"]["lm"] == decoded["lm"]
    assert len({t for r in decoded["lm"] for t in r}) >= 10
    assert decoded["got"]["top1"] == decoded["lm"][:3]  # sampling from the top 1 is greedy


def test_widgets_mount_and_decode_offline(decoded):
    reversal, lm = decoded["shown"]
    assert reversal.startswith("output [") and ("✗ expected" in reversal or "✓ correct" in reversal)
    assert "▶" in lm and "not in the vocabulary (-> <unk>): The, history" in lm


def test_widget_html_refuses_a_widget_without_a_model(tmp_path):
    with pytest.raises(ValueError, match="runs no trained model in the page"):
        live_models.widget_html(WIDGETS[0], tmp_path)
