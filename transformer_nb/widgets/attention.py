"""Widgets for notebook 01 (scaled dot-product attention).

:class:`ScalingWidget` -- one query against ``n_keys`` random keys, all components i.i.d.
N(0, 1). A ``d_k`` slider and a scaling toggle redraw the scores the softmax sees and the
weights it returns, with their entropy: unscaled, the weights collapse onto one key as
``d_k`` grows; scaled by ``1/sqrt(d_k)`` they stay soft at every ``d_k``.
"""

import math

import ipywidgets as W
import matplotlib.pyplot as plt
import torch

from transformer_nb.widgets.base import STYLE, Widget

D_K_CHOICES = [4, 8, 16, 32, 64, 128, 256, 512, 1024]


def softmax_stats(logits: torch.Tensor) -> dict:
    """Weights, entropy (nats), max weight and the Frobenius norm of the softmax Jacobian.

    ``logits: (..., n)``; returns tensors of shape ``(..., n)`` (weights) and ``(...)`` (the rest).
    The Jacobian of ``p = softmax(z)`` is ``diag(p) - p pᵀ``; its squared Frobenius norm is
    ``sum p² - 2 sum p³ + (sum p²)²``.
    """
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point() or logits.ndim == 0 or not logits.numel():
        raise TypeError(f"logits must be a non-empty float tensor (..., n), got {logits!r:.60}")
    p = torch.softmax(logits.double(), dim=-1)
    entropy = -(p * torch.log(p.clamp_min(1e-300))).sum(-1)
    s2, s3 = (p**2).sum(-1), (p**3).sum(-1)
    jac = (s2 - 2 * s3 + s2**2).clamp_min(0).sqrt()
    return {"weights": p, "entropy": entropy, "max_weight": p.max(-1).values, "jacobian_norm": jac}


class ScalingWidget(Widget):
    """d_k slider + scaling toggle -> bar charts of one query's scores and weights over the keys.

    ``last`` holds: ``d_k, scaled, n_keys, seed, raw_scores (n,), logits (n,), weights (n,),
    entropy, max_entropy, max_weight, jacobian_norm``.
    """

    FRAMES = (("d_k", None), ("scaled", None))  # the book's grid

    def __init__(self, d_k: int = 64, scaled: bool = True, n_keys: int = 10):
        self._frame = None  # (n_keys, score limit) the axes were last drawn for
        scores = [("scaled: QKᵀ/√d_k", True), ("unscaled: QKᵀ", False)]
        super().__init__(
            dict(d_k=d_k, scaled=scaled, n_keys=n_keys),
            d_k=W.SelectionSlider(options=D_K_CHOICES, description="d_k", style=STYLE),
            scaled=W.ToggleButtons(options=scores, description="scores", style=STYLE),
            n_keys=W.IntSlider(min=2, max=32, description="keys", style=STYLE),
            seed=W.IntSlider(min=0, max=20, description="sample (seed)", style=STYLE),
        )

    def compute(self, d_k, scaled, n_keys, seed) -> dict:
        g = torch.Generator().manual_seed(1000 * seed + d_k)
        q = torch.randn(d_k, generator=g, dtype=torch.float64)
        keys = torch.randn(n_keys, d_k, generator=g, dtype=torch.float64)
        raw = keys @ q  # (n_keys,) raw dot products q·k_j
        logits = raw / math.sqrt(d_k) if scaled else raw
        st = softmax_stats(logits)
        out = {k: float(v) for k, v in st.items() if k != "weights"}
        data = dict(out, d_k=d_k, scaled=scaled, n_keys=n_keys, seed=seed, raw_scores=raw, logits=logits)
        data.update(weights=st["weights"], max_entropy=math.log(n_keys))
        return data

    def draw(self, data):
        xs = list(range(1, 33))
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.4))
        a1.bar(xs, [0] * 32, color="C0")
        a1.axhspan(-3, 3, color="0.85", zorder=-1)
        a1.set(xlabel="key j", ylabel="score fed to softmax")
        a2.bar(xs, [0] * 32, color="C2")
        a2.axhline(0, color="k", ls="--", lw=1, label="uniform 1/n")
        a2.set_ylim(0, 1.25)
        a2.set(yticks=[0, 0.25, 0.5, 0.75, 1.0], xlabel="key j", ylabel="attention weight")
        a2.legend(loc="upper left", fontsize=8, frameon=False)
        for ax in (a1, a2):
            ax.set_title(" ", fontsize=10)
        fig.tight_layout()
        self._frame = None  # a new figure: its axes are set by update
        self.update(fig, data)
        return fig

    def update(self, fig, data) -> bool:
        """Bars, limits and titles of ``data`` into the figure ``draw`` made (bars beyond n hidden)."""
        a1, a2 = fig.axes
        n = data["n_keys"]
        z, w = data["logits"].tolist(), data["weights"].tolist()
        for j, (b1, b2) in enumerate(zip(a1.patches, a2.patches)):
            b1.set_visible(j < n)
            b2.set_visible(j < n)
            if j < n:
                b1.set_height(z[j])
                b1.set_color("C3" if abs(z[j]) > 3 else "C0")
                b2.set_height(w[j])
        lim = max(4.0, 1.1 * max(abs(v) for v in z))
        a1.set_ylim(-lim, lim)
        how = "q·k / √d_k" if data["scaled"] else "q·k (unscaled)"
        a1.set_title(f"{how}, d_k = {data['d_k']}  (grey band: [-3, +3])", fontsize=10)
        a2.lines[0].set_ydata([1 / n, 1 / n])
        a2.set_title(
            f"entropy {data['entropy']:.2f} of max {data['max_entropy']:.2f} nats · "
            f"max weight {data['max_weight']:.2f}",
            fontsize=10,
        )
        if (n, lim) != self._frame:  # axes changed: the next PNG is drawn whole, else only the artists below
            self._frame = (n, lim)
            self.invalidate()
            xs = list(range(1, n + 1))
            for ax in (a1, a2):
                ax.set_xlim(0.4, n + 0.6)
                ax.set_xticks(xs if n <= 16 else xs[::2])
        self.animated = [*a1.patches, *a2.patches, a1.title, a2.title, a2.lines[0]]  # see Widget.png
        return True
