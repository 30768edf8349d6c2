"""The common shape of every widget: controls, a compute step, and a drawing.

A subclass implements ``compute(**values) -> dict`` (pure, testable) and
``draw(data) -> matplotlib Figure``. Changing any control recomputes and redraws.
Headless use (tests)::

    w = SomeWidget()
    w.refresh()
    w.controls["d_k"].value = 512     # observers fire at once
    assert w.last["d_k"] == 512
"""

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import clear_output, display

from transformer_nb.plotting import _in_notebook


class Widget:
    """Controls (a dict of ipywidgets) plus an Output area that shows ``draw(compute(...))``."""

    def __init__(self, **controls):
        self.controls = controls
        self.out = widgets.Output()
        self.last = None
        self.fig = None
        self.updates = 0
        for c in controls.values():
            c.observe(self.refresh, names="value")

    def values(self) -> dict:
        return {name: c.value for name, c in self.controls.items()}

    def compute(self, **values) -> dict:
        raise NotImplementedError

    def draw(self, data):
        raise NotImplementedError

    def refresh(self, *_):
        """Recompute from the current control values and redraw into the output area."""
        self.last = self.compute(**self.values())
        fig = self.draw(self.last)
        if fig is not None:
            plt.close(fig)  # shown through the Output widget only
        self.fig = fig
        self.updates += 1
        if _in_notebook():  # headless (tests): keep the data and figure, draw nothing
            with self.out:
                clear_output(wait=True)
                if fig is not None:
                    display(fig)
        return self.last

    def layout(self):
        return widgets.VBox(
            [widgets.HBox(list(self.controls.values()), layout=widgets.Layout(flex_flow="row wrap")), self.out]
        )

    def show(self):
        """Draw once and display the controls with the output (the notebook cell calls this)."""
        self.refresh()
        display(self.layout())
        return None
