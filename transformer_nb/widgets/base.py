"""The common shape of every widget: controls -> ``compute`` -> ``draw``.

A subclass builds its controls, passes their starting values as ``start`` (checked here, once: a value a
control cannot show is a ``ValueError`` naming it, never traitlets' bare "Invalid selection" or a slider that
silently clamps it), and implements ``compute(**values) -> dict`` (pure, testable) and
``draw(data) -> matplotlib Figure``. Changing any control recomputes and redraws. Headless use (tests)::

    w = SomeWidget()
    w.refresh()
    w.controls["d_k"].value = 512     # observers fire at once
    assert w.last["d_k"] == 512

**Animation.** A widget whose redraw takes at most ``CHEAP_MS`` (``python -m transformer_nb.widgets.timing``)
keeps ``CONTINUOUS = True``: its sliders redraw while dragged. A slower one redraws when a slider is released
and says so under its controls. ``update(fig, data)`` may redraw into the last figure instead of building one;
the artists it lists in ``animated`` (whole Axes too), all that it changed, are then the only ones painted again
over the rest kept from the last PNG (``png``): exact while the list stays the same and one update ran since.

**The book.** ``FRAMES = ((control, values or None), ...)`` names the grid of control values over which the
book and the slides precompute the widget's frames (``tools/live.py``; ``None``: the control's own choices).

**Errors.** An exception raised while computing or drawing never escapes the observer (where Jupyter would
swallow it and the widget would look frozen): the widget shows one red line (``message``) in place of its
figure (``image``), ``error`` keeps it, and the next change of a control tries again.
"""

import html
import io
import traceback
from functools import lru_cache

import ipywidgets as W
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display
from matplotlib.patches import PathPatch
from matplotlib.textpath import TextPath
from matplotlib.transforms import Affine2D, ScaledTranslation

from transformer_nb.core.utils import as_int, as_real
from transformer_nb.plotting import _in_notebook

__all__ = ["Widget"]  # the helpers below serve the widgets only

CHEAP_MS = 100  # a redraw at most this long animates while a slider is dragged
USER_ERRORS = (ValueError, TypeError, OverflowError)  # a bad input, not a bug
STYLE = {"description_width": "initial"}


def _check_start(name: str, c, value) -> None:
    """``value`` must be one a control ``c`` shows as it is (same type for a choice: ``True`` is not ``1``)."""
    if isinstance(c, W.Text):  # Combobox too: free text
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
        return
    if hasattr(c, "options"):
        values = [o[1] if isinstance(o, tuple) else o for o in c.options]
        if not any(type(value) is type(v) and value == v for v in values):
            raise ValueError(f"{name} must be one of {', '.join(map(repr, values))}, got {value!r}")
        return
    if isinstance(c, W.Checkbox):
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {value!r}")
        return
    value = as_int(name, value, minimum=-(2**63)) if isinstance(c.value, int) else as_real(name, value)
    lo, hi = (c.base**c.min, c.base**c.max) if isinstance(c, W.FloatLogSlider) else (c.min, c.max)
    if not lo <= value <= hi:
        raise ValueError(f"{name} must lie in [{lo:g}, {hi:g}], got {value!r}")


def error_html(text: str) -> str:
    """One red line for the output area."""
    return (
        '<div class="tnb-widget-error" style="color:#b00020;font-family:monospace;'
        f'white-space:pre-wrap;padding:4px 0">{html.escape(text)}</div>'
    )


def _error_message(err: BaseException) -> str:
    """The line a reader sees for ``err``: its message for a bad input, more for anything else."""
    if isinstance(err, USER_ERRORS):
        return f"⚠ {err}  (change a control to try again)"
    return (
        f"⚠ {type(err).__name__}: {err}  (an unexpected error inside the widget; the traceback "
        f"is in .traceback; change a control to try again)"
    )


def text_figure(text: str, color: str = "k", size=(6, 1.4)):
    """A figure holding one centred message (an impossible model, an empty sentence...)."""
    fig, ax = plt.subplots(figsize=size)
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, color=color)
    ax.axis("off")
    return fig


def painted(ax) -> list:
    """What a redraw of ``ax`` that keeps its ticks paints again: images, patches, title and the spines over them."""
    return [*ax.images, *ax.patches, ax.title, *ax.spines.values()]


@lru_cache(maxsize=1024)
def word_shape(word: str, size: float = 8, align: float = 1) -> TextPath:
    """``word`` as a shape ``size`` points high, (0, 0) at its middle height and at ``align`` of its width (0: its
    start, 0.5: its centre, 1: its end): a label that paints some 15 times faster than a Text, so that every label
    can be painted again at every redraw."""
    path = TextPath((0, 0), word, size=size)
    box = path.get_extents()
    return path.transformed(Affine2D().translate(-box.x0 - align * box.width, -0.3625 * size))


def token_label(parent, at: tuple, turn: float = 0, gap: float = 0, up: float = 0) -> PathPatch:
    """A shape of ``parent`` (Axes or Figure) to show a ``word_shape`` (``.set(path=word_shape(...))``): its anchor
    at ``at`` = ``(x, y, transform)``, ``gap`` points back and ``up`` points up, turned by ``turn`` degrees."""
    place = Affine2D().translate(-gap, up).rotate_deg(turn).scale(1 / 72) + parent.figure.dpi_scale_trans
    return parent.add_artist(
        PathPatch(word_shape("?"), fc="k", lw=0, clip_on=False, transform=place + ScaledTranslation(*at))
    )


class Widget:
    """Controls (a dict of ipywidgets) plus an Image widget that shows ``draw(compute(...))``."""

    CONTINUOUS = True  # redraw while a slider is dragged; False for widgets slower than CHEAP_MS
    REDRAW = "a second"  # how long a redraw takes, said under the controls of a slow widget

    def __init__(self, start: dict | None = None, **controls):
        for name, value in (start or {}).items():
            _check_start(name, controls[name], value)
            controls[name].value = value
        self.controls = controls
        # The figure is an Image widget (its PNG), the error line an HTML widget: no Output widget, whose
        # captured displays a notebook runner (nbclient) echoes back to the kernel, stalling large ones.
        self.image, self.message = W.Image(format="png"), W.HTML("")
        self.last = self.fig = self.error = self.traceback = None
        self.updates = 0
        self.animated, self._background = [], None  # see png()
        for c in controls.values():
            if type(c).__name__.endswith("Slider"):  # typed text and numbers always wait for Enter
                c.continuous_update = self.CONTINUOUS
            c.observe(self.refresh, names="value")

    def values(self) -> dict:
        return {name: c.value for name, c in self.controls.items()}

    def update(self, fig, data) -> bool:
        """Optional: redraw ``data`` into ``fig`` (the figure drawn last) and return True, which
        spares building a new figure; return False to have ``draw`` build one."""
        return False

    def refresh(self, *_):
        """Recompute from the current control values and redraw; the new ``last``, or None when computing or
        drawing raised (``error`` says why)."""
        before = set(plt.get_fignums())
        try:
            data = self.compute(**self.values())
            fig = self.fig if self.fig is not None and self.update(self.fig, data) else self.draw(data)
        except Exception as err:  # shown in the widget, never lost in the observer
            for num in set(plt.get_fignums()) - before:
                plt.close(num)  # half-drawn figures would pop up under the next cell
            self.error, self.traceback = _error_message(err), traceback.format_exc()
            self.fig = None  # perhaps half updated: the next success draws a new one
            self.message.value = error_html(self.error)
            self.image.layout.display = "none"  # no stale figure under the message
            return None
        if fig is not None and fig is not self.fig:
            plt.close(fig)  # shown through the Image widget only
        self.last, self.fig, self.error, self.traceback = data, fig, None, None
        self.updates += 1
        self.message.value = ""
        if _in_notebook() and fig is not None:  # headless (tests): keep the data and figure, render nothing
            self.image.value = self.png()
            self.image.layout.display = None
        return self.last

    def png(self) -> bytes:
        """The current figure as PNG bytes: one Agg rendering pass encoded by Pillow. With ``animated`` artists,
        the rest of the figure is rendered once and kept (until ``invalidate()``): a redraw paints only those."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from PIL import Image

        fig, art = self.fig, [a for a in self.animated if a.figure is self.fig]
        canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
        kept = self._background  # (figure, pixels, art, updates): the last PNG without ``art``
        if kept and kept[0] is fig and kept[2] == art and self.updates - kept[3] <= 1:  # ``art``: all that changed
            np.asarray(canvas.buffer_rgba())[:] = kept[1]
            self._background = (*kept[:3], self.updates)
        else:
            fig.patch.set_facecolor("white")  # opaque in dark themes too
            for a in fig.findobj(lambda a: a.get_animated() != (a in art)):
                a.set_animated(a in art)  # left out of the background
            canvas.draw()  # kept whole: copy_from_bbox(fig.bbox) can miss the last column of pixels
            self._background = (fig, np.array(canvas.buffer_rgba()), art, self.updates) if art else None
        for a in art:
            fig.draw_artist(a)
        rgba = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        buf = io.BytesIO()
        rgba.convert("RGB").save(buf, format="png", compress_level=1)  # opaque (the white figure): RGB, a sixth faster
        return buf.getvalue()

    def invalidate(self) -> None:
        """Say that ``update`` changed more than the ``animated`` artists: the next PNG is drawn whole."""
        self._background = None

    def layout(self):
        parts = [W.HBox(list(self.controls.values()), layout=W.Layout(flex_flow="row wrap"))]
        if not self.CONTINUOUS:
            note = f"redraws when you release a slider (each redraw takes about {self.REDRAW})"
            parts.append(W.HTML(f'<span style="color:#666;font-size:90%">{html.escape(note)}</span>'))
        return W.VBox([*parts, self.message, self.image])

    def show(self):
        """Draw once and display the controls with the output (the notebook cell calls this)."""
        self.refresh()
        display(self.layout())
