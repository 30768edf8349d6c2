"""How long each widget takes to redraw, as a reader sees it: the observer (compute + draw) and the
PNG that the notebook shows (rendered as the inline backend renders it).

    python -m transformer_nb.widgets.timing              # every widget, a table in ms
    python -m transformer_nb.widgets.timing --json       # the same, as JSON
    python -m transformer_nb.widgets.timing RotatePair   # some widgets only

Each control of each widget is moved to a neighbouring value ``repeats`` times (as a drag
would); the widget's redraw time is the median over all moves, its slowest control's median is
shown too. The widgets of notebooks 09 and 10 are timed with the models of ``lecture`` when
their caches are warm (``make lecture``), else with untrained models of the same shape, which
decode a little longer (no early EOS). Timings depend on the machine and on its load: run it
on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import ipywidgets as W

from transformer_nb.core.utils import as_int
from transformer_nb.widgets.base import CHEAP_MS, Widget
from transformer_nb.widgets.catalog import WIDGETS, build


def neighbours(control) -> list:
    """Two values next to the control's current one (what one step of a drag sets), or []."""
    if not isinstance(control, W.ValueWidget):
        raise TypeError(f"control must be an ipywidgets control with a value, got {type(control).__name__}")
    v = control.value
    if isinstance(control, (W.Dropdown, W.ToggleButtons, W.SelectionSlider)):
        opts = [o[1] if isinstance(o, tuple) else o for o in control.options]
        i = opts.index(v)
        return [opts[(i + 1) % len(opts)], v]
    if isinstance(control, W.Checkbox):
        return [not v, v]
    if isinstance(control, W.FloatLogSlider):
        up = v * control.base**control.step
        return [up if up <= control.base**control.max else v / control.base**control.step, v]
    if hasattr(control, "step") and hasattr(control, "max"):
        up = v + control.step
        return [up if up <= control.max else v - control.step, v]
    return []


def time_widget(widget, repeats: int = 3, clock=time.perf_counter) -> dict:
    """``{control: median ms}`` over ``repeats`` moves there and back of each control, by ``clock``
    (``time.process_time`` counts this process's CPU time: on a busy machine, closer to what an
    idle one would take)."""
    if not isinstance(widget, Widget):
        raise TypeError(f"widget must be a transformer_nb widget, got {type(widget).__name__}")
    repeats = as_int("repeats", repeats, minimum=1)
    widget.refresh()
    widget.png()  # warm-up: first draw and font cache
    out = {}
    for name, control in widget.controls.items():
        values = neighbours(control)
        if not values or getattr(control, "disabled", False):
            continue
        times = []
        for _ in range(repeats):
            for v in values:
                t0 = clock()
                control.value = v
                if widget.fig is not None:
                    widget.png()  # what a notebook shows (Widget.refresh renders it there)
                times.append(1e3 * (clock() - t0))
        out[name] = statistics.median(times)
    return out


def untrained_models() -> dict:
    """Untrained models of the shapes notebooks 09 and 10 train (the vocabulary is WikiText-2's
    when the data is at hand, else as many made-up words). A model that cannot be built is left out."""
    out = {}
    try:
        from transformer_nb import reversal as rv

        out["reversal"] = rv.build_model(rv.IMPROVED.model, rv.IMPROVED.init, seed=0).eval()
    except Exception as err:
        print(f"(no reversal model: {type(err).__name__}: {err})", file=sys.stderr)
    try:
        import torch

        from transformer_nb import lm_recipe
        from transformer_nb.wikitext import Vocab, load_wikitext2

        try:
            vocab = load_wikitext2().vocab
        except Exception:  # no data here: as many made-up words
            vocab = Vocab([f"w{i}" for i in range(33278)])
        ranks = torch.arange(len(vocab))
        out["lm"] = (lm_recipe.build_model("transformer", len(vocab), ranks).eval(), vocab)
    except Exception as err:
        print(f"(no language model: {type(err).__name__}: {err})", file=sys.stderr)
    return out


def stand_in_models() -> dict:
    """Trained models from the lecture caches when they are warm, else ``untrained_models()``."""
    try:
        from transformer_nb import lecture

        return lecture.models()
    except Exception as err:  # no lecture module yet, no cache, or no data
        print(f"(the widgets of 09 and 10 are timed with untrained models: {err})", file=sys.stderr)
    return untrained_models()


def _positive(text: str) -> int:
    """argparse type: an int >= 1 (``--repeats 0`` would time nothing)."""
    try:
        return as_int("--repeats", int(text), minimum=1)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="widget class names (default: all)")
    parser.add_argument("--repeats", type=_positive, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--cpu", action="store_true", help="count this process's CPU time, not wall time (for a busy machine)"
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - {e.name for e in WIDGETS})
    if unknown:
        parser.error(f"no widget named {', '.join(unknown)}; the widgets: {', '.join(e.name for e in WIDGETS)}")
    import matplotlib

    matplotlib.use("Agg")
    entries = [e for e in WIDGETS if not args.names or e.name in args.names]
    models = stand_in_models() if any(e.needs for e in entries) else {}
    rows = []
    for e in entries:
        try:
            w = build(e, models)
        except ValueError as err:
            print(f"{e.notebook} {e.name}: not timed ({err})", file=sys.stderr)
            continue
        per = time_widget(w, args.repeats, time.process_time if args.cpu else time.perf_counter)
        print(f"{e.name}: {statistics.median(per.values()):.0f} ms", file=sys.stderr, flush=True)
        rows.append(
            {
                "notebook": e.notebook,
                "widget": e.name,
                "median_ms": round(statistics.median(per.values()), 1),
                "slowest_control": max(per, key=per.get),
                "slowest_ms": round(max(per.values()), 1),
                "clock": "cpu" if args.cpu else "wall",
                "continuous": w.CONTINUOUS,
                "per_control_ms": {k: round(v, 1) for k, v in per.items()},
            }
        )
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'notebook':<26} {'widget':<20} {'median':>8} {'slowest control':>26}  continuous (<= {CHEAP_MS} ms)")
    for r in rows:
        slow = f"{r['slowest_control']} {r['slowest_ms']:.0f} ms"
        print(f"{r['notebook']:<26} {r['widget']:<20} {r['median_ms']:>5.0f} ms {slow:>26}  {r['continuous']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
