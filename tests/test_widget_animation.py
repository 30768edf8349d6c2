"""Which widgets animate while a slider is dragged, and that their fast redraw paints what a full one does.

The split follows ``python -m transformer_nb.widgets.timing`` (redraw at most ``CHEAP_MS`` = 100 ms:
continuous) and the browser test's key-press-to-new-image table (tests/browser: over 250 ms, a widget
must update on release and say so; ParamCalculator took about 300 ms there).
"""

import io
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from transformer_nb.widgets.base import CHEAP_MS
from transformer_nb.widgets.catalog import WIDGETS, build

ROOT = Path(__file__).resolve().parents[1]
CONTINUOUS = {
    "SoftmaxTemperature",
    "ScalingWidget",
    "SinusoidFingerprint",
    "AlibiExplorer",
    "RotatePair",
}
STANDALONE = [e for e in WIDGETS if e.needs is None]


def test_the_threshold_is_the_issues():
    assert CHEAP_MS == 100


@pytest.mark.parametrize("entry", WIDGETS, ids=[e.name for e in WIDGETS])
def test_each_widget_is_continuous_exactly_when_cheap(entry):
    assert (entry.name in CONTINUOUS) == entry.cls().CONTINUOUS


@pytest.mark.parametrize("entry", STANDALONE, ids=[e.name for e in STANDALONE])
def test_sliders_follow_the_policy_and_slow_widgets_say_so(entry):
    w = build(entry)
    sliders = [c for c in w.controls.values() if type(c).__name__.endswith("Slider")]
    assert sliders and all(c.continuous_update == w.CONTINUOUS for c in sliders)
    texts = [c for c in w.controls.values() if type(c).__name__ in ("Text", "Combobox", "IntText", "BoundedIntText")]
    assert all(not c.continuous_update for c in texts)  # typing waits for Enter
    notes = [c.value for c in w.layout().children if type(c).__name__ == "HTML" and c is not w.message]
    assert bool(notes) != w.CONTINUOUS
    assert all("release a slider" in n and w.REDRAW in n for n in notes)


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png))).astype(int)


@pytest.mark.parametrize("name", ["SoftmaxTemperature", "ScalingWidget", "SinusoidFingerprint", "RotatePair"])
def test_a_fast_redraw_paints_exactly_what_a_full_one_does(name):
    """These widgets repaint only what moves over a kept background (Widget.png)."""
    w = build(next(e for e in WIDGETS if e.name == name))
    w.refresh()
    w.png()
    for control in w.controls.values():  # every control, one step up
        step = getattr(control, "step", 1)
        if hasattr(control, "max") and control.value + step <= control.max:
            control.value = control.value * control.base**step if hasattr(control, "base") else control.value + step
        assert w.error is None, w.traceback
        fast = w.png()
        w.invalidate()
        assert np.array_equal(_pixels(fast), _pixels(w.png())), f"{name}: after moving {control.description!r}"
    assert w.animated, "nothing was painted over a kept background"


def _shown_in_twins() -> list:
    """(notebook, class) of every ``SomeWidget(...).show()`` in the twins of 00-12, in book order."""
    out = []
    for twin in sorted((ROOT / "notebooks" / "py").glob("[0-9][0-9]_*.py")):
        if int(twin.stem[:2]) > 12:  # the ledger and the lecture show no widget of their own
            continue
        text = twin.read_text(encoding="utf-8")
        imported = {
            name.strip().split(" as ")[-1]: name.strip().split(" as ")[0]
            for names in re.findall(r"^from transformer_nb\.widgets\.\w+ import (.+)$", text, flags=re.M)
            for name in names.split(",")
        }
        for cls in re.findall(r"^(\w+)\(.*\)\.show\(\)", text, flags=re.M):
            if cls in imported:
                out.append((twin.stem, imported[cls]))
    return out


def test_the_catalog_lists_every_widget_the_notebooks_show():
    assert _shown_in_twins() == [(e.notebook, e.name) for e in WIDGETS]
