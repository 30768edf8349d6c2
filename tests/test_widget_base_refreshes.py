"""Widgets recompute when a control changes, headlessly (no kernel, no browser)."""

import ipywidgets as W
import matplotlib.pyplot as plt

from transformer_nb.widgets.base import Widget


class Square(Widget):
    def __init__(self):
        super().__init__(n=W.IntSlider(value=3, min=1, max=10))

    def compute(self, n):
        return {"n": n, "square": n * n}

    def draw(self, data):
        fig, ax = plt.subplots()
        ax.bar(["n²"], [data["square"]])
        return fig


def test_changing_a_control_recomputes_and_redraws():
    w = Square()
    w.refresh()
    first = w.fig
    w.controls["n"].value = 7
    assert w.last == {"n": 7, "square": 49}
    assert w.updates == 2 and w.fig is not first
