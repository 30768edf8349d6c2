"""Notebook 00's widget: softmax as a *soft* argmax, and how the scale of the scores hardens it."""

import math

import ipywidgets as W
import matplotlib.pyplot as plt
import torch

from transformer_nb.widgets.base import Widget


class SoftmaxTemperature(Widget):
    """Scores ``s`` (seeded) -> ``softmax(scale · s)`` as bars, with its entropy and max weight.

    Controls: ``scale`` (log slider, 0.1–30) and ``n`` (number of keys).
    ``last``: ``{"scale", "n", "weights", "entropy", "max_weight", "max_entropy"}``.
    """

    FRAMES = (("scale", (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)), ("n", (2, 4, 8, 16, 32)))

    def __init__(self):
        self.scores = torch.randn(32, generator=torch.Generator().manual_seed(0))
        super().__init__(
            scale=W.FloatLogSlider(value=1.0, base=10, min=-1, max=math.log10(30), step=0.05, description="scale"),
            n=W.IntSlider(value=8, min=2, max=32, description="keys"),
        )

    def compute(self, scale: float, n: int) -> dict:
        w = torch.softmax(scale * self.scores[:n], dim=-1)
        entropy = float(-(w * w.clamp_min(1e-30).log()).sum())
        return dict(scale=scale, n=n, weights=w, entropy=entropy, max_weight=float(w.max()), max_entropy=math.log(n))

    def draw(self, d: dict):
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.2), gridspec_kw={"width_ratios": [2, 1]})
        ax1.bar(range(len(self.scores)), [0.0] * len(self.scores), color="tab:blue")
        ax1.set(ylim=(0, 1), xlabel="key j", ylabel="weight", title=" ")
        ax2.barh(["entropy", "uniform"], [0, 0], color=["tab:orange", "0.7"])
        ax2.set(xlim=(0, math.log(32)), title="entropy (nats)")
        fig.tight_layout()
        self.update(fig, d)
        return fig

    def update(self, fig, d: dict) -> bool:
        """Bars and title of ``d`` into the figure ``draw`` made (the bars beyond ``n`` hidden)."""
        ax1, ax2 = fig.axes
        self.animated = [*ax1.patches, ax1.title, *ax2.patches]
        if ax1.get_xlim() != (-0.6, d["n"] - 0.4):
            self.invalidate()  # the axis changed: draw everything
        w = d["weights"].tolist()
        for j, bar in enumerate(ax1.patches):
            bar.set_height(w[j] if j < d["n"] else 0)
            bar.set_visible(j < d["n"])
        ax1.set_xlim(-0.6, d["n"] - 0.4)
        ax1.set_title(f"softmax({d['scale']:.2g} · s): max weight {d['max_weight']:.2f}")
        for bar, v in zip(ax2.patches, (d["entropy"], d["max_entropy"])):
            bar.set_width(v)
        return True
