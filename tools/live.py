"""The widgets of the book and the slides, live with no kernel: frames precomputed over a small grid.

At build time each widget shown on a page is built from its catalog entry and, for every point of a small
grid of its control values (``grid``), its controls are set and its PNG taken (``Widget.png``, the same
code JupyterLab runs). The frames go under ``_static/frames/`` (one file per distinct image, as lossless
WebP: the same pixels) and the widget's output on the page becomes plain HTML controls restricted to the grid
(range inputs, selects, checkboxes) plus an ``<img>``; ``live.js`` swaps to the preloaded frame of the
chosen values. A control outside the grid stays at its value (free text among them: a typed sentence
becomes a choice of the widget's presets), and the page says so.

A widget class declares its grid next to its controls, ``FRAMES = ((control, values or None), ...)`` (``None``:
the control's own choices, or up to ``MOST`` evenly spaced slider values); without it the first control is
varied. The frames are cached in ``build/frames`` under a digest of the sources the widget runs.
"""

from __future__ import annotations

import fcntl
import hashlib
import html
import io
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "build" / "frames"
JS = Path(__file__).with_name("live.js")
MOST = 16  # slider values a derived grid keeps
SHOW = re.compile(r"^\s*(\w+)\(.*\)\.show\(\)", flags=re.M)
VIEW = "application/vnd.jupyter.widget-view+json"
IMPORTS = re.compile(r"^\s*(?:from|import)\s+(transformer_nb[\w.]*)", flags=re.M)

try:  # the trained models' widgets (09, 10) run in the page when tools/live_models.py is there
    import live_models
except ImportError:
    live_models = None


def _choices(c) -> list:
    import ipywidgets as W
    import numpy as np

    if hasattr(c, "options"):
        return [o[1] if isinstance(o, tuple) else o for o in c.options]
    if isinstance(c, W.Checkbox):
        return [False, True]
    n = round((c.max - c.min) / c.step) + 1
    steps = sorted({round(k) for k in np.linspace(0, n - 1, min(n, MOST))})
    if isinstance(c, W.FloatLogSlider):
        return [float(c.base ** (c.min + k * c.step)) for k in steps]
    return [type(c.value)(c.min + k * c.step) for k in steps]


def _same(a, b) -> bool:
    return type(a) is type(b) and a == b


def grid(w) -> dict[str, list]:
    """``{control: values}`` the page offers: ``w.FRAMES`` or the first control's choices; each control's
    starting value is among them (the page opens on what the notebook shows)."""
    spec = dict(getattr(w, "FRAMES", None) or {next(iter(w.controls)): None})
    out = {}
    for name, values in spec.items():
        values = list(_choices(w.controls[name]) if values is None else values)
        start = w.controls[name].value
        if not any(_same(v, start) for v in values):
            values = sorted([*values, start]) if isinstance(start, (int, float)) else [start, *values]
        out[name] = values
    return out


def label(c, value) -> str:
    """What the control shows for ``value``."""
    for o in getattr(c, "options", ()):
        if isinstance(o, tuple) and _same(o[1], value):
            return str(o[0])
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _sources(module: str, seen: set) -> set:
    """The files of ``module`` and of every ``transformer_nb`` module (and package) it imports, transitively."""
    parts = module.split(".")
    for k in range(1, len(parts) + 1):
        base = ROOT.joinpath(*parts[:k])
        path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if path.is_file() and path not in seen:
            seen.add(path)
            for name in IMPORTS.findall(path.read_text(encoding="utf-8")):  # not ast: a tenth of the time
                _sources(name, seen)
    return seen


def _digest(entry, g) -> str:
    """Of the entry, its grid, the versions that draw it and the sources its widget runs."""
    import matplotlib
    import torch

    h = hashlib.sha256(repr((entry, g, "webp-m1", matplotlib.__version__, torch.__version__)).encode())
    for path in sorted(_sources(f"transformer_nb.widgets.{entry.module}", set())):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def frames(entry) -> dict:
    """The widget of ``entry`` over its grid: ``{"controls", "grid", "frames"}`` where ``frames`` lists, in
    ``itertools.product`` order of the grid, ``{"image": file, "error": text, "fixed": labels}``; cached."""
    import matplotlib

    matplotlib.use("Agg")
    from PIL import Image

    from transformer_nb.widgets.catalog import build

    w = build(entry)
    g = grid(w)
    where = CACHE / f"{entry.name}-{_digest(entry, g)}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{entry.name}.lock", "w") as lock:  # another process drawing them (tests in parallel): wait
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (where / "frames.json").is_file():
            return {**json.loads((where / "frames.json").read_text()), "dir": str(where)}
        tmp = where.with_suffix(".part")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        start = {n: next(i for i, v in enumerate(vals) if _same(v, w.controls[n].value)) for n, vals in g.items()}
        w.refresh()
        c, fixed = w.controls, [n for n in w.controls if n not in g]
        sizes, points = [len(v) for v in g.values()], [()]
        for n in sizes:  # a snake through the grid: one control moves at a time, as a reader moves them (one redraw)
            points = [(*p, i) for k, p in enumerate(points) for i in (range(n) if k % 2 == 0 else range(n - 1, -1, -1))]
        out = {}
        for point in points:
            for (name, values), i in zip(g.items(), point):
                c[name].value = values[i]  # fires a redraw when it changes
            frame = {"image": None, "error": w.error, "fixed": [label(c[n], c[n].value) for n in fixed]}
            # lossless WebP (exact: transparent pixels kept too): the PNG's pixels, a third the size; method 1 and
            # effort 0 take two thirds of the time of method 2 and effort 25, for 13 % more bytes
            if w.error is None:
                buf = io.BytesIO()
                Image.open(io.BytesIO(w.png())).save(buf, "webp", lossless=True, quality=0, method=1, exact=True)
                frame["image"] = hashlib.sha1(buf.getvalue()).hexdigest()[:16] + ".webp"
                (tmp / frame["image"]).write_bytes(buf.getvalue())
            out[point] = frame
        controls = [
            {"name": n, "description": c.description or n, "kind": type(c).__name__, "value": label(c, c.value)}
            for n, c in w.controls.items()
        ]
        manifest = {
            "controls": controls,
            "grid": {n: [[v, label(w.controls[n], v)] for v in vals] for n, vals in g.items()},
            "start": start,
            "frames": [out[p] for p in sorted(out)],  # in product order
        }
        (tmp / "frames.json").write_text(json.dumps(manifest))
        shutil.rmtree(where, ignore_errors=True)
        tmp.replace(where)
    return {**manifest, "dir": str(where)}


def _input(i: int, c: dict, choices: list, at: int) -> str:
    """The HTML control for grid control ``i``: a range over the grid's indices for a slider, a checkbox
    for True/False, else a select."""
    desc = html.escape(c["description"])
    if c["kind"] == "Checkbox" and [v for v, _ in choices] == [False, True]:
        checked = " checked" if at else ""
        return f'<label class="tnb-live-c"><input type="checkbox" data-c="{i}"{checked}> {desc}</label>'
    if c["kind"].endswith("Slider"):
        return (
            f'<label class="tnb-live-c">{desc} <input type="range" data-c="{i}" min="0" max="{len(choices) - 1}" '
            f'step="1" value="{at}"> <output>{html.escape(choices[at][1])}</output></label>'
        )
    opts = "".join(
        f'<option value="{k}"{" selected" if k == at else ""}>{html.escape(lab)}</option>'
        for k, (_, lab) in enumerate(choices)
    )
    return f'<label class="tnb-live-c">{desc} <select data-c="{i}">{opts}</select></label>'


def widget_html(name: str, manifest: dict, frame_url: str, js_url: str) -> str:
    """The widget as the page shows it: controls over the grid, the note on what stays fixed, the frame."""
    import numpy as np

    g, controls = manifest["grid"], {c["name"]: c for c in manifest["controls"]}
    inputs = "".join(_input(i, controls[n], g[n], manifest["start"][n]) for i, n in enumerate(g))
    fixed = [c for c in manifest["controls"] if c["name"] not in g]
    kept = "".join(
        f'<span class="tnb-live-c">{html.escape(c["description"])}: <output>{html.escape(c["value"])}</output></span>'
        for c in fixed
    )
    note = "precomputed frames: each control offers the values drawn when the book was built"
    if fixed:
        note += "; the others stay as shown (open the notebook in Jupyter to change them)"
    if any(controls[n]["kind"] in ("Combobox", "Text") for n in g):
        note += "; typed text is replaced by the widget's presets"
    data = {
        "sizes": [len(v) for v in g.values()],
        "values": [[v for v, _ in vals] for vals in g.values()],
        "labels": [[lab for _, lab in vals] for vals in g.values()],
        "names": list(g),
        "frames": [{**f, "image": f["image"] and f"{frame_url}/{f['image']}"} for f in manifest["frames"]],
    }
    blob = json.dumps(data).replace("</", "<\\/")
    first = data["frames"][int(np.ravel_multi_index([manifest["start"][n] for n in g], data["sizes"]))]
    error = html.escape(first["error"] or "")
    return (
        f'<div class="tnb-live" data-widget="{name}" style="font:14px/1.4 system-ui,sans-serif">'
        f'<script type="application/json">{blob}</script>'
        f'<div class="tnb-live-controls" style="display:flex;flex-wrap:wrap;gap:0.3rem 1.2rem">{inputs}</div>'
        f'<div class="tnb-live-fixed" style="color:#555;display:flex;flex-wrap:wrap;gap:0 1.2rem">{kept}</div>'
        f'<div class="tnb-live-note" style="color:#666;font-size:90%">{html.escape(note)}</div>'
        f'<div class="tnb-live-error" style="color:#b00020;font-family:monospace">{error}</div>'
        f'<img class="tnb-live-img" alt="the widget\'s figure" src="{first["image"] or ""}" style="max-width:100%">'
        f'<script src="{js_url}"></script></div>'
    )


def _entry_of(source: str, notebook: str):
    """The catalog entry a cell shows (``Name(...).show()``): the one of ``notebook``, else the first of
    that name (the lecture notebook shows them all)."""
    from transformer_nb.widgets.catalog import WIDGETS

    found = SHOW.search(source)
    named = [e for e in WIDGETS if found and e.name == found.group(1)]
    return next((e for e in named if e.notebook == notebook), named[0] if named else None)


#: The models the book's pages carry (notebook 12's in 8 bits, 5.4 MB instead of 20.6: tools/live_models.py's LOW).
IN_BOOK = ("reversal", "lm", "capstone")
NOT_IN_BOOK = (
    "This widget's model ({}) is too large for the book: here its stored figure; run the notebook to drive it."
)


def make_live(nb, notebook: str, out_dir: Path, static: str = "_static", models=IN_BOOK, ort=list) -> int:
    """Replace, in ``nb``, the stored output of each widget the catalog lists by its live form (frames
    written under ``out_dir/static``); the stored state keeps only the widgets still shown (progress bars).
    Returns how many widgets were made live. A model widget (09, 10, 14) is live only through ``live_models``, with the
    model its cell loads (``lecture.cached("capstone")``: notebook 12's), each model once a page, if it is one of
    ``models``; ``ort()`` gives onnxruntime-web's files for them (``book.ort_files``)."""
    live, seen = 0, set()
    for cell in nb.cells:
        views = [o for o in cell.get("outputs", []) if VIEW in o.get("data", {})]
        entry = _entry_of(cell.source, notebook) if cell.cell_type == "code" and views else None
        if entry is None or (entry.needs and live_models is None):
            continue
        if entry.needs is None:
            manifest = frames(entry)
            page = widget_html(entry.name, manifest, f"{static}/frames", f"{static}/live.js")
            frames_to = out_dir / static / "frames"  # the images (not the manifest, which the page holds)
            shutil.copytree(manifest["dir"], frames_to, ignore=shutil.ignore_patterns("*.json"), dirs_exist_ok=True)
            shutil.copyfile(JS, out_dir / static / "live.js")
        else:
            from transformer_nb.lecture import NotPrepared

            name = next(iter(re.findall(r'lecture\.cached\("(\w+)"', cell.source)), entry.needs)
            prompt = re.search(r'prompt="([^"]*)"', cell.source)
            if name in seen:
                continue
            seen.add(name)
            if name not in models:
                note = f'<p class="tnb-serves">{html.escape(NOT_IN_BOOK.format(name))}</p>'
                cell.outputs.append({"output_type": "display_data", "metadata": {}, "data": {"text/html": note}})
                continue
            try:
                page = live_models.widget_html(entry, out_dir / static, ort(), name=name, prompt=prompt and prompt[1])
            except NotPrepared as err:  # no trained model here: the stored figure stays
                print(f"live: {entry.name} stays as stored: {err}", file=sys.stderr)
                continue
        keep = [o for o in cell.outputs if VIEW not in o.get("data", {})]
        cell.outputs = [*keep, {"output_type": "display_data", "metadata": {}, "data": {"text/html": page}}]
        live += 1
    _prune_state(nb)
    return live


def _prune_state(nb) -> None:
    """Drop from the notebook's widget state the models no output shows any more (nor refers to)."""
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    todo = [o["data"][VIEW]["model_id"] for c in nb.cells for o in c.get("outputs", []) if VIEW in o.get("data", {})]
    keep = set()
    while todo:
        m = todo.pop()
        if m in state and m not in keep:
            keep.add(m)
            todo += re.findall(r"IPY_MODEL_(\w+)", json.dumps(state[m]))
    for m in set(state) - keep:
        del state[m]
