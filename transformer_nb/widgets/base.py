"""The common shape of every widget: controls, a compute step, and a drawing.

A subclass implements ``compute(**values) -> dict`` (pure, testable) and
``draw(data) -> matplotlib Figure``. Changing any control recomputes and redraws.
Headless use (tests)::

    w = SomeWidget()
    w.refresh()
    w.controls["d_k"].value = 512     # observers fire at once
    assert w.last["d_k"] == 512

**Animation.** A widget whose redraw takes at most ``CHEAP_MS`` (measured by
``python -m transformer_nb.widgets.timing``) sets ``CONTINUOUS = True``: its sliders redraw
while they are dragged (``continuous_update``). A slower one redraws when a slider is released,
and says so under its controls (``SLOW_NOTE``).

**Errors.** An exception raised while computing or drawing never escapes the observer (where
Jupyter would swallow it and the widget would look frozen): the widget shows one red line
(``message``) in place of its figure (``image``), ``error`` keeps it, and the next change of a
control tries again.
"""

import html
import io
import traceback

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import display

from transformer_nb.core.utils import as_int
from transformer_nb.plotting import _in_notebook

CHEAP_MS = 100  # a redraw at most this long animates while a slider is dragged
USER_ERRORS = (ValueError, TypeError, OverflowError)  # a bad input, not a bug


def check_choice(name: str, value, options) -> None:
    """A starting ``value`` must be one of ``options`` (values, or ``(label, value)`` pairs), of the same type
    (``True`` is not ``1``): a selection control would fail with traitlets' "Invalid selection: value not found"."""
    values = [o[1] if isinstance(o, tuple) else o for o in options]
    if not any(type(value) is type(v) and value == v for v in values):
        raise ValueError(f"{name} must be one of {', '.join(map(repr, values))}, got {value!r}")


def check_ints(**values) -> None:
    """Starting values of integer sliders must be ints: ``IntSlider(value="5")`` fails with a bare TraitError."""
    for name, value in values.items():
        as_int(name, value, minimum=-(2**63))


class Message:
    """One line for the output area: red HTML in a notebook, plain text elsewhere."""

    def __init__(self, text: str):
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        self.text = text

    def _repr_html_(self):
        return (
            '<div class="tnb-widget-error" style="color:#b00020;font-family:monospace;'
            f'white-space:pre-wrap;padding:4px 0">{html.escape(self.text)}</div>'
        )

    def __repr__(self):
        return self.text


def error_message(err: BaseException) -> str:
    """The line a reader sees for ``err``: its message for a bad input, more for anything else."""
    if not isinstance(err, BaseException):
        raise TypeError(f"err must be an exception, got {type(err).__name__}")
    if isinstance(err, USER_ERRORS):
        return f"⚠ {err}  (change a control to try again)"
    return (
        f"⚠ {type(err).__name__}: {err}  (an unexpected error inside the widget; the traceback "
        f"is in .traceback; change a control to try again)"
    )


class Widget:
    """Controls (a dict of ipywidgets) plus an Image widget that shows ``draw(compute(...))``."""

    CONTINUOUS = True  # redraw while a slider is dragged; False for widgets slower than CHEAP_MS
    SLOW_NOTE = "redraws when you release a slider (each redraw takes about {s})"
    REDRAW = "a second"  # what SLOW_NOTE says a redraw takes

    def __init__(self, **controls):
        bad = {n: c for n, c in controls.items() if not isinstance(c, widgets.ValueWidget)}
        if bad:
            raise TypeError(f"controls must be ipywidgets with a value, got {bad!r:.80}")
        self.controls = controls
        # The figure is an Image widget (its PNG), the error line an HTML widget: no Output widget, whose
        # captured displays a notebook runner (nbclient) echoes back to the kernel, stalling large ones.
        self.image = widgets.Image(format="png")
        self.message = widgets.HTML("")
        self.last = None
        self.fig = None
        self.updates = 0
        self.error = self.traceback = None
        self.animated, self._background = [], None  # see png()
        for c in controls.values():
            if type(c).__name__.endswith("Slider"):  # typed text and numbers always wait for Enter
                c.continuous_update = self.CONTINUOUS
            c.observe(self.refresh, names="value")

    def check_start(self, **values) -> None:
        """Refuse a starting value its slider clamped (``IntSlider(value=0, min=2)`` silently shows 2): a
        ``ValueError`` naming the argument and the slider's range. Called at the end of a subclass's ``__init__``."""
        for name, value in values.items():
            c = self.controls[name]
            if c.value != value:
                raise ValueError(f"{name} must lie in [{c.min}, {c.max}], got {value!r}")

    def values(self) -> dict:
        return {name: c.value for name, c in self.controls.items()}

    def compute(self, **values) -> dict:
        raise NotImplementedError

    def draw(self, data):
        raise NotImplementedError

    def update(self, fig, data) -> bool:
        """Optional: redraw ``data`` into ``fig`` (the figure drawn last) and return True, which
        spares building a new figure; return False to have ``draw`` build one."""
        return False

    def refresh(self, *_):
        """Recompute from the current control values and redraw the figure.

        Returns the new ``last``, or None when computing or drawing raised (``error`` says why).
        """
        before = set(plt.get_fignums())
        try:
            data = self.compute(**self.values())
            fig = self.fig if self.fig is not None and self.update(self.fig, data) else self.draw(data)
        except Exception as err:  # shown in the widget, never lost in the observer
            for num in set(plt.get_fignums()) - before:
                plt.close(num)  # half-drawn figures would pop up under the next cell
            self.error, self.traceback = error_message(err), traceback.format_exc()
            self.fig = None  # perhaps half updated: the next success draws a new one
            self.message.value = Message(self.error)._repr_html_()
            self.image.layout.display = "none"  # no stale figure under the message
            return None
        if fig is not None and fig is not self.fig:
            plt.close(fig)  # shown through the Image widget only
        self.last, self.fig, self.error, self.traceback = data, fig, None, None
        self.updates += 1
        if self.message.value:
            self.message.value = ""
        if _in_notebook() and fig is not None:  # headless (tests): keep the data and figure, render nothing
            self.image.value = self.png()
            self.image.layout.display = None
        return self.last

    def png(self) -> bytes:
        """The current figure as PNG bytes: one rendering pass encoded by Pillow (``savefig`` and the
        inline backend's ``bbox_inches="tight"`` take longer; the widgets lay out their figures).

        If the widget lists in ``animated`` the artists its ``update`` changes, the rest of the
        figure is rendered once and kept (until ``invalidate()``): a redraw then paints only those.
        """
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from PIL import Image as PILImage

        fig, art = self.fig, [a for a in self.animated if a.figure is self.fig]
        canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
        if self._background is not None and self._background[0] is fig and art:
            canvas.restore_region(self._background[1])
        else:
            fig.patch.set_facecolor("white")  # opaque in dark themes too
            for a in art:
                a.set_animated(True)  # left out of the background
            canvas.draw()
            self._background = (fig, canvas.copy_from_bbox(fig.bbox)) if art else None
        for a in art:
            fig.draw_artist(a)
        rgba = PILImage.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        buf = io.BytesIO()
        rgba.save(buf, format="png", compress_level=3)
        return buf.getvalue()

    def invalidate(self) -> None:
        """Say that ``update`` changed more than the ``animated`` artists: the next PNG is drawn whole."""
        self._background = None

    def layout(self):
        parts = [widgets.HBox(list(self.controls.values()), layout=widgets.Layout(flex_flow="row wrap"))]
        if not self.CONTINUOUS:
            note = self.SLOW_NOTE.format(s=self.REDRAW)
            parts.append(widgets.HTML(f'<span style="color:#666;font-size:90%">{html.escape(note)}</span>'))
        return widgets.VBox([*parts, self.message, self.image])

    def show(self):
        """Draw once and display the controls with the output (the notebook cell calls this)."""
        self.refresh()
        display(self.layout())
        return None
