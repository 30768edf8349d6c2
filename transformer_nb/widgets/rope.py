"""Widgets for notebook 05 (rotary position embeddings).

- :class:`RotatePair` -- one 2-D pair of a query and a key, rotated by their positions m and n:
  the dot product depends only on the offset n - m (drag both sliders by the same amount).
"""

import ipywidgets as W
import matplotlib.pyplot as plt
import numpy as np
import torch

from transformer_nb.rope import rope_frequencies
from transformer_nb.widgets.base import Widget


class RotatePair(Widget):
    """Sliders ``m`` (query position), ``n`` (key position), ``pair`` (i, frequency θ_i of d = ``d``).

    ``last``: ``m``, ``n``, ``offset`` (n - m), ``theta``, ``q_rot``/``k_rot`` (the rotated 2-D
    vectors), ``score`` (their dot product), ``score_at_offset`` (qᵀ R_(n-m) k, positions 0 and n-m).
    """

    def __init__(self, q=(1.0, 0.3), k=(0.6, 0.8), d: int = 8, m: int = 5, n: int = 12, max_pos: int = 40):
        self.q = torch.tensor(q, dtype=torch.float64)
        self.k = torch.tensor(k, dtype=torch.float64)
        self.thetas = rope_frequencies(d)
        self.max_pos = max_pos
        super().__init__(
            m=W.IntSlider(
                value=m,
                min=0,
                max=max_pos,
                description="query pos m",
                continuous_update=False,
                style={"description_width": "initial"},
            ),
            n=W.IntSlider(
                value=n,
                min=0,
                max=max_pos,
                description="key pos n",
                continuous_update=False,
                style={"description_width": "initial"},
            ),
            pair=W.IntSlider(value=1, min=0, max=d // 2 - 1, description="pair i", continuous_update=False),
        )

    @staticmethod
    def _rot(v, angle):
        c, s = np.cos(angle), np.sin(angle)
        return torch.stack([v[0] * c - v[1] * s, v[0] * s + v[1] * c])

    def compute(self, m, n, pair):
        theta = float(self.thetas[pair])
        q_rot, k_rot = self._rot(self.q, m * theta), self._rot(self.k, n * theta)
        score = float(q_rot @ k_rot)
        at_offset = float(self.q @ self._rot(self.k, (n - m) * theta))
        pos = torch.arange(self.max_pos + 1, dtype=torch.float64)
        # score for every (m', n') of this pair: S[m', n'] = qᵀ R((n' - m')θ) k
        d = (pos[None, :] - pos[:, None]) * theta
        qk, cross = float(self.q @ self.k), float(self.q[1] * self.k[0] - self.q[0] * self.k[1])
        grid = qk * torch.cos(d) + cross * torch.sin(d)
        return {
            "m": m,
            "n": n,
            "offset": n - m,
            "pair": pair,
            "theta": theta,
            "q_rot": q_rot,
            "k_rot": k_rot,
            "score": score,
            "score_at_offset": at_offset,
            "grid": grid,
        }

    def draw(self, data):
        fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.2))
        ax = axes[0]
        for v, rot, c, name in ((self.q, data["q_rot"], "tab:blue", "q"), (self.k, data["k_rot"], "tab:red", "k")):
            ax.annotate("", xy=v.numpy(), xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=c, alpha=0.3))
            ax.annotate("", xy=rot.numpy(), xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=c, lw=2))
            ax.text(*(rot.numpy() * 1.12), f"R_{'m' if name == 'q' else 'n'} {name}", color=c, ha="center")
        t = np.linspace(0, 2 * np.pi, 200)
        ax.plot(np.cos(t), np.sin(t), color="0.85", lw=0.8)
        ax.set_xlim(-1.4, 1.4)
        ax.set_ylim(-1.4, 1.4)
        ax.set_aspect("equal")
        ax.axhline(0, color="0.8", lw=0.5)
        ax.axvline(0, color="0.8", lw=0.5)
        ax.set_title(
            f"pair {data['pair']} (θ={data['theta']:.3g}): m={data['m']}, n={data['n']}\n"
            f"score {data['score']:+.4f}  =  qᵀR(n-m)k {data['score_at_offset']:+.4f}"
        )
        ax = axes[1]
        lim = float(self.q.norm() * self.k.norm())  # |score| <= |q||k|
        im = ax.imshow(data["grid"].numpy(), cmap="RdBu_r", vmin=-lim, vmax=lim, origin="upper")
        ax.plot([data["n"]], [data["m"]], "k*", ms=12)
        off = data["offset"]
        xs = np.arange(max(0, off), min(self.max_pos, self.max_pos + off) + 1)
        ax.plot(xs, xs - off, "k--", lw=1)
        ax.set_xlabel("key position n")
        ax.set_ylabel("query position m")
        ax.set_title(f"score of this pair for every (m, n): constant along n - m = {off}")
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        fig.tight_layout()
        return fig
