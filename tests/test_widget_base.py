"""What every widget shares (``widgets/base.py``): a change of a control recomputes and redraws, an error is shown
in the widget and the next change works, starting values are checked, fast widgets animate and paint what a full
redraw paints, and the catalog lists exactly the widgets the notebooks show."""

import random
import re
from pathlib import Path

import ipywidgets as W
import matplotlib.pyplot as plt
import numpy as np
import pytest
from test_lm_widget import WORDS, tiny_lm

from transformer_nb import reversal as rv
from transformer_nb.widgets.base import CHEAP_MS, Widget, _error_message, error_html
from transformer_nb.widgets.catalog import WIDGETS, build
from transformer_nb.wikitext import Vocab

ROOT = Path(__file__).resolve().parents[1]
CONTINUOUS = {"SoftmaxTemperature", "ScalingWidget", "SinusoidFingerprint", "AlibiExplorer", "RotatePair"}
CONTINUOUS |= {"MaskExplorer", "HeadsWidget", "VariantWidget", "ParamCalculator"}
STANDALONE = [e for e in WIDGETS if e.needs is None]


class Reciprocal(Widget):
    """1/x: x = 0 raises inside ``compute``; x = 3 raises a bug-like error inside ``draw``."""

    def __init__(self, x=2):
        super().__init__({"x": x}, x=W.IntSlider(min=-5, max=5))

    def compute(self, x):
        if x == 0:
            raise ValueError("x must not be 0: 1/x is undefined there")
        return {"x": x, "y": 1 / x}

    def draw(self, data):
        fig, ax = plt.subplots()
        ax.bar(["1/x"], [data["y"]])
        if data["x"] == 3:
            raise RuntimeError("a bug while drawing")
        return fig


def test_a_change_redraws_an_error_is_shown_and_the_next_change_works():
    w = Reciprocal()
    w.refresh()
    first, figures = w.fig, set(plt.get_fignums())
    w.controls["x"].value = 0  # raised out of the observer before (issue 18)
    assert w.error.startswith("⚠ x must not be 0") and "try again" in w.error
    assert "ValueError" in w.traceback and w.last["x"] == 2
    assert 'class="tnb-widget-error"' in w.message.value and w.image.layout.display == "none"
    w.controls["x"].value = 3  # an unexpected error says what it is
    assert "RuntimeError: a bug while drawing" in w.error and "unexpected" in w.error
    assert set(plt.get_fignums()) == figures  # the half-drawn figure was closed, it will not pop up later
    w.controls["x"].value = 4
    assert w.error is None and w.traceback is None and w.message.value == ""
    assert w.last == {"x": 4, "y": 0.25} and w.fig is not first and w.updates == 2


def test_the_message_is_escaped_html():
    html = error_html(_error_message(ValueError("length <b>70</b> is too long")))
    assert "&lt;b&gt;70&lt;/b&gt;" in html and "<b>" not in html


@pytest.mark.parametrize(
    "control, value, exc, match",
    [
        (W.IntSlider(min=2, max=9), 0, ValueError, "x must lie in [2, 9], got 0"),  # not silently clamped
        (W.IntSlider(), 1.5, TypeError, "x must be an int"),
        (W.Dropdown(options=[1, 2]), True, ValueError, "x must be one of 1, 2, got True"),  # True is not 1
        (W.ToggleButtons(options=[("a", "A")]), "a", ValueError, "x must be one of 'A'"),
        (W.Text(), 3, TypeError, "x must be a str"),
        (W.Checkbox(), 1, TypeError, "x must be True or False"),
        (W.FloatLogSlider(min=-1, max=1), 20.0, ValueError, "x must lie in [0.1, 10]"),
    ],
)
def test_a_starting_value_a_control_cannot_show_is_refused_by_name(control, value, exc, match):
    with pytest.raises(exc, match=re.escape(match)):
        Widget({"x": value}, x=control)


@pytest.mark.parametrize("entry", STANDALONE, ids=[e.name for e in STANDALONE])
def test_fast_widgets_animate_and_slow_ones_say_they_wait(entry):
    """The split follows ``python -m transformer_nb.widgets.timing`` (at most ``CHEAP_MS`` = 100 ms: continuous)."""
    assert CHEAP_MS == 100
    w = build(entry)
    assert (entry.name in CONTINUOUS) == w.CONTINUOUS
    sliders = [c for c in w.controls.values() if type(c).__name__.endswith("Slider")]
    assert sliders and all(c.continuous_update == w.CONTINUOUS for c in sliders)
    texts = [c for c in w.controls.values() if isinstance(c, (W.Text, W.BoundedIntText))]
    assert all(not c.continuous_update for c in texts)  # typing waits for Enter
    notes = [c.value for c in w.layout().children if isinstance(c, W.HTML) and c is not w.message]
    assert bool(notes) != w.CONTINUOUS and all("release a slider" in n and w.REDRAW in n for n in notes)


REUSED = [e.name for e in WIDGETS if e.cls().update is not Widget.update]  # redraw into the figure they drew
CHOICES = dict(text=["3 5 7 9 4", "3 5 7", "12 11 10 9 8 7", "3 x", "4 " * 9], length=[2, 5, 30], prompt=["the cat"])


def _values(name, c) -> list:
    """The values control ``c`` offers (some: a few that change the figure's shape; a seed box: its first 1000)."""
    if name in CHOICES or isinstance(c, W.Text):
        return CHOICES.get(name, [c.value])
    if hasattr(c, "options"):
        return [o[1] if isinstance(o, tuple) else o for o in c.options]
    if isinstance(c, W.Checkbox):
        return [False, True]
    steps = range(min(1000, round((c.max - c.min) / c.step) + 1))
    if isinstance(c, W.FloatLogSlider):
        return [c.base ** (c.min + k * c.step) for k in steps]
    return [type(c.value)(c.min + k * c.step) for k in steps]


def _fresh_pixels(entry, values: dict, models) -> np.ndarray:
    """What a widget built afresh and drawn once at ``values`` shows."""
    w = build(entry, models)
    for name, v in values.items():
        w.controls[name].unobserve(w.refresh, names="value")
        w.controls[name].value = v
    w.refresh()
    w.png()
    return np.asarray(w.fig.canvas.buffer_rgba())


@pytest.mark.parametrize("name", REUSED)
def test_redraws_into_the_last_figure_show_what_a_fresh_widget_shows_after_any_moves(name):
    """These widgets redraw into their last figure, most repainting only what moves over a kept background
    (Widget.png): along a random sequence of 8 moves (one control, or several between two PNGs as the book sets a
    frame), after the fourth and the eighth the pixels of a fresh widget (a state that a move leaves behind stays to be
    seen). The model widgets run untrained models: a source of another length, a bad one, a prompt word not known."""
    entry, rng = next(e for e in WIDGETS if e.name == name), random.Random(0)
    tiny = {"reversal": rv.build_model(rv.MODEL, "xavier_embeddings", seed=0).eval(), "lm": (tiny_lm(), Vocab(WORDS))}
    w = build(entry, tiny)
    w.refresh()
    w.png()
    values, repainted = {n: _values(n, c) for n, c in w.controls.items()}, 0
    for step in range(8):
        for n in rng.sample(sorted(values), min(len(values), rng.choice((1, 1, 1, 2, 3)))):
            w.controls[n].value = rng.choice(values[n])
        kept = w._background
        w.png()
        repainted += bool(kept and w._background and w._background[1] is kept[1])
        moved = w.values()
        if step % 4 == 3:
            fresh = _fresh_pixels(entry, moved, tiny)
            assert np.array_equal(np.asarray(w.fig.canvas.buffer_rgba()), fresh), (step, moved)
    assert repainted or not w.animated, "nothing was painted over a kept background"


def test_the_catalog_lists_every_widget_the_notebooks_show():
    shown = []
    for twin in sorted((ROOT / "notebooks" / "py").glob("[01][0-9]_*.py"))[:13]:  # 13, 14 show none of their own
        text = twin.read_text(encoding="utf-8")
        imported = {
            n.strip()
            for names in re.findall(r"^from transformer_nb\.widgets\.\w+ import (.+)$", text, re.M)
            for n in names.split(",")
        }
        shown += [(twin.stem, cls) for cls in re.findall(r"^(\w+)\(.*\)\.show\(\)", text, re.M) if cls in imported]
    assert shown == [(e.notebook, e.name) for e in WIDGETS]
