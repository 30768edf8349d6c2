"""How long each widget takes to redraw, as a reader sees it: the observer (compute + draw) and the PNG that the
notebook shows.

    python -m transformer_nb.widgets.timing              # every widget, a table in ms
    python -m transformer_nb.widgets.timing RotatePair   # some widgets only

Each control of each widget is moved to a neighbouring value ``repeats`` times (as a drag would); the widget's
redraw time is the median over all moves. The widgets of notebooks 09 and 10 are timed with the models of
``lecture`` (``make lecture`` first); without them they are left out. Run it on an idle machine.
"""

import argparse
import statistics
import sys
import time

import ipywidgets as W

from transformer_nb.widgets.base import CHEAP_MS
from transformer_nb.widgets.catalog import WIDGETS, build

__all__ = ["main"]


def _neighbours(control) -> list:
    """Two values next to the control's current one (what one step of a drag sets), or []."""
    v = control.value
    if hasattr(control, "options") and not isinstance(control, W.Text):
        opts = [o[1] if isinstance(o, tuple) else o for o in control.options]
        return [opts[(opts.index(v) + 1) % len(opts)], v]
    if isinstance(control, W.Checkbox):
        return [not v, v]
    if isinstance(control, W.FloatLogSlider):
        up = v * control.base**control.step
        return [up if up <= control.base**control.max else v / control.base**control.step, v]
    if hasattr(control, "step") and hasattr(control, "max"):
        up = v + control.step
        return [up if up <= control.max else v - control.step, v]
    return []


def time_widget(widget, repeats: int = 3) -> dict:
    """``{control: median ms}`` over ``repeats`` moves there and back of each control (wall time)."""
    widget.refresh()
    widget.png()  # warm-up: first draw and font cache
    out = {}
    for name, control in widget.controls.items():
        values = [] if getattr(control, "disabled", False) else _neighbours(control)
        times = []
        for _ in range(repeats if values else 0):
            for v in values:
                t0 = time.perf_counter()
                control.value = v
                if widget.fig is not None:
                    widget.png()  # what a notebook shows (Widget.refresh renders it there)
                times.append(1e3 * (time.perf_counter() - t0))
        if times:
            out[name] = statistics.median(times)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="widget class names (default: all)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if set(args.names) - {e.name for e in WIDGETS}:
        parser.error(f"unknown widget(s) {args.names}; the widgets: {', '.join(e.name for e in WIDGETS)}")
    import matplotlib

    matplotlib.use("Agg")
    entries = [e for e in WIDGETS if not args.names or e.name in args.names]
    models = {}
    if any(e.needs for e in entries):
        from transformer_nb import lecture

        try:
            models = lecture.models()
        except (LookupError, OSError) as err:
            print(f"(no trained models: the widgets of 09 and 10 are left out: {err})", file=sys.stderr)
    print(f"{'notebook':<26} {'widget':<20} {'median':>8} {'slowest control':>26}  continuous (<= {CHEAP_MS} ms)")
    for e in entries:
        if e.needs and e.needs not in models:
            continue
        w = build(e, models)
        per = time_widget(w, args.repeats)
        slow = max(per, key=per.get)
        slowest = f"{slow} {per[slow]:.0f} ms"
        print(f"{e.notebook:<26} {e.name:<20} {statistics.median(per.values()):>5.0f} ms {slowest:>26}  {w.CONTINUOUS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
