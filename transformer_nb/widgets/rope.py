"""Widgets for notebook 05 (rotary position embeddings).

- :class:`RotatePair` -- one 2-D pair of a query and a key, rotated by their positions m and n:
  the dot product depends only on the offset n - m: "shift both by s" moves both positions at once.
"""

import ipywidgets as W
import matplotlib.pyplot as plt
import numpy as np
import torch

from transformer_nb.core.rope import rope_frequencies
from transformer_nb.widgets.base import STYLE, Widget


class RotatePair(Widget):
    """Sliders ``m`` (query position), ``n`` (key position), ``shift`` (s, added to both), ``pair``
    (i, frequency θ_i of d = ``d``). The rotated pair sits at positions m + s and n + s.

    ``last``: ``m``, ``n``, ``shift``, ``pos_q``/``pos_k`` (m + s, n + s), ``offset`` (n - m), ``theta``,
    ``q_rot``/``k_rot`` (the rotated 2-D vectors), ``score`` (their dot product), ``score_at_offset``
    (qᵀ R_(n-m) k, positions 0 and n-m) and ``grid`` (the score at every pair of positions 0..2·max_pos).
    """

    FRAMES = (("m", (0, 5, 10, 20, 30, 40)), ("shift", (0, 10, 20)))  # the book's grid

    def __init__(self, m: int = 5, n: int = 12):
        self.q, self.k = torch.tensor([1.0, 0.3], dtype=torch.float64), torch.tensor([0.6, 0.8], dtype=torch.float64)
        self.thetas, self.max_pos = rope_frequencies(8), 40
        super().__init__(
            dict(m=m, n=n),
            m=W.IntSlider(min=0, max=40, description="query pos m", style=STYLE),
            n=W.IntSlider(min=0, max=40, description="key pos n", style=STYLE),
            shift=W.IntSlider(value=0, min=0, max=40, description="shift both by s", style=STYLE),
            pair=W.IntSlider(value=1, min=0, max=3, description="pair i"),
        )

    @staticmethod
    def _rot(v, angle):
        c, s = np.cos(angle), np.sin(angle)
        return torch.stack([v[0] * c - v[1] * s, v[0] * s + v[1] * c])

    def compute(self, m, n, pair, shift=0):
        theta = float(self.thetas[pair])
        pm, pn = m + shift, n + shift
        q_rot, k_rot = self._rot(self.q, pm * theta), self._rot(self.k, pn * theta)
        score = float(q_rot @ k_rot)
        at_offset = float(self.q @ self._rot(self.k, (n - m) * theta))
        pos = torch.arange(2 * self.max_pos + 1, dtype=torch.float64)
        # score for every (m', n') of this pair: S[m', n'] = qᵀ R((n' - m')θ) k
        d = (pos[None, :] - pos[:, None]) * theta
        qk, cross = float(self.q @ self.k), float(self.q[1] * self.k[0] - self.q[0] * self.k[1])
        grid = qk * torch.cos(d) + cross * torch.sin(d)
        data = dict(m=m, n=n, shift=shift, pos_q=pm, pos_k=pn, offset=n - m, pair=pair, theta=theta, q_rot=q_rot)
        data.update(k_rot=k_rot, score=score, score_at_offset=at_offset, grid=grid)
        return data

    def draw(self, data):
        fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.2))
        self._grid_pair = data["pair"]
        ax = axes[0]
        self._arrows, self._labels = [], []  # the rotated q and k, and their labels: moved by update
        for v, c, name in ((self.q, "tab:blue", "q"), (self.k, "tab:red", "k")):
            ax.annotate("", xy=v.numpy(), xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=c, alpha=0.3))
            self._arrows.append(
                ax.annotate("", xy=v.numpy(), xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=c, lw=2))
            )
            self._labels.append(ax.text(0, 0, f"R_({'m+s' if name == 'q' else 'n+s'}) {name}", color=c, ha="center"))
        t = np.linspace(0, 2 * np.pi, 200)
        ax.plot(np.cos(t), np.sin(t), color="0.85", lw=0.8)
        ax.set(xlim=(-1.4, 1.4), ylim=(-1.4, 1.4))
        ax.set_aspect("equal")
        ax.axhline(0, color="0.8", lw=0.5)
        ax.axvline(0, color="0.8", lw=0.5)
        ax.set_title(" \n ")
        ax = axes[1]
        lim = float(self.q.norm() * self.k.norm())  # |score| <= |q||k|
        im = ax.imshow(
            data["grid"].numpy(), cmap="RdBu_r", vmin=-lim, vmax=lim, origin="upper", interpolation="nearest"
        )
        ax.plot([0], [0], "k--", lw=1)
        ax.plot([0], [0], "k*", ms=12)
        ax.set(xlabel="key position n + s", ylabel="query position m + s")
        ax.set_title(" ", fontsize=10)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        fig.tight_layout()
        self.update(fig, data)
        return fig

    def update(self, fig, data) -> bool:
        """Arrows, star, diagonal, grid and titles of ``data`` into the figure ``draw`` made."""
        ax, ax2 = fig.axes[:2]
        for arrow, label, rot in zip(self._arrows, self._labels, (data["q_rot"], data["k_rot"])):
            arrow.xy = tuple(rot.tolist())
            label.set_position(tuple((rot * 1.12).tolist()))
        ax.set_title(
            f"pair {data['pair']} (θ={data['theta']:.3g}): m+s={data['pos_q']}, n+s={data['pos_k']}\n"
            f"score {data['score']:+.4f}  =  qᵀR(n-m)k {data['score_at_offset']:+.4f}"
        )
        if data["pair"] != getattr(self, "_grid_pair", None):
            ax2.images[0].set_data(data["grid"].numpy())
            self._grid_pair = data["pair"]
            self.invalidate()  # the grid changed: draw everything
        dash, star = ax2.lines
        star.set_data([data["pos_k"]], [data["pos_q"]])
        off, top = data["offset"], 2 * self.max_pos
        xs = np.arange(max(0, off), min(top, top + off) + 1)
        dash.set_data(xs, xs - off)
        ax2.set_title(f"score of this pair for every position: constant along n - m = {off}", fontsize=10)
        self.animated = [*self._arrows, *self._labels, ax.title, dash, star, ax2.title]  # see Widget.png
        return True
