"""Widgets for notebook 04 (positional encodings).

- :class:`SinusoidFingerprint` -- position and frequency sliders over the sinusoidal table: which
  column is position p's fingerprint, and how fast the chosen sin/cos pair turns.
- :class:`AlibiExplorer` -- a head-count slider: the ALiBi slopes (base and interpolated) and the
  attention a query would pay to each earlier token when the content scores are all equal.
"""

import ipywidgets as W
import matplotlib.pyplot as plt
import numpy as np
import torch

from transformer_nb.core.positional import alibi_slopes, sinusoid_frequencies, sinusoidal_encoding
from transformer_nb.widgets.base import Widget


class SinusoidFingerprint(Widget):
    """Sliders ``position`` (0..T-1) and ``pair`` (frequency index i, 0..d/2-1).

    ``last``: ``position``, ``pair``, ``omega`` (ω_i), ``wavelength`` (2π/ω_i, in positions),
    ``fingerprint`` (PE[position], a (d_model,) tensor), ``pair_values`` (sin, cos of position·ω_i).
    """

    FRAMES = (("position", (0, 10, 20, 40, 60, 80, 100, 127)), ("pair", (4, 12)))  # the book's grid

    def __init__(self, position: int = 10, pair: int = 4):
        self.n_positions, self.d_model = 128, 64
        self.pe, self.omega = sinusoidal_encoding(128, 64), sinusoid_frequencies(64)
        super().__init__(
            dict(position=position, pair=pair),
            position=W.IntSlider(min=0, max=127, description="position p"),
            pair=W.IntSlider(min=0, max=31, description="pair i (freq.)"),
        )

    def compute(self, position, pair):
        omega, fp = float(self.omega[pair]), self.pe[position].clone()
        pair_values = (float(fp[2 * pair]), float(fp[2 * pair + 1]))
        data = dict(position=position, pair=pair, omega=omega, wavelength=2 * np.pi / omega, fingerprint=fp)
        data.update(pair_values=pair_values)
        return data

    def draw(self, data):
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.4), gridspec_kw={"width_ratios": [1.3, 1.3, 1]})
        ax = axes[0]
        ax.imshow(self.pe.T.numpy(), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
        ax.axvline(0, color="k", lw=1.5)
        ax.add_patch(plt.Rectangle((-0.5, -0.5), self.n_positions, 2, color="gold", alpha=0.5))
        ax.set(xlabel="position", ylabel="dimension", title="PE table: column = fingerprint")
        ax = axes[1]
        xs = np.linspace(0, self.n_positions - 1, 600)
        for _ in range(2):
            ax.plot(xs, np.zeros_like(xs), label=" ")
        ax.plot([0, 0], [0, 0], "ko")
        ax.axvline(0, color="k", lw=0.8, ls=":")
        ax.set(ylim=(-1.15, 1.6), xlabel="position p", title=" ")
        ax = axes[2]
        ax.bar(range(self.d_model), np.zeros(self.d_model), width=1.0)
        ax.set(ylim=(-1.1, 1.1), xlabel="dimension (blue sin, orange cos)", title=" ")
        fig.tight_layout()
        self.update(fig, data)
        return fig

    def update(self, fig, data) -> bool:
        """Cursor, band, curves, bars and titles of ``data`` into the figure ``draw`` made."""
        p, i, omega = data["position"], data["pair"], data["omega"]
        ax0, ax1, ax2 = fig.axes
        ax0.lines[0].set_xdata([p, p])
        ax0.patches[0].set_y(2 * i - 0.5)
        sin, cos, dots, cursor = ax1.lines
        xs = sin.get_xdata()
        sin.set_ydata(np.sin(xs * omega))
        cos.set_ydata(np.cos(xs * omega))
        legend = ax1.get_legend() or ax1.legend(handles=[sin, cos], loc="upper right", fontsize=8, ncol=2)
        for text, label in zip(legend.get_texts(), (f"PE[·, {2 * i}] = sin(p·ω)", f"PE[·, {2 * i + 1}] = cos(p·ω)")):
            text.set_text(label)
        dots.set_data([p, p], data["pair_values"])
        cursor.set_xdata([p, p])
        ax1.set_title(f"pair i={i}: ω={omega:.3g}, wavelength={data['wavelength']:.3g}")
        fp = data["fingerprint"].tolist()
        for dim, bar in enumerate(ax2.patches):
            bar.set_height(fp[dim])
            bar.set_color("gold" if dim // 2 == i else ("tab:blue" if dim % 2 == 0 else "tab:orange"))
        ax2.set_title(f"fingerprint PE[{p}]")
        # what moves; the rest (table, axes, ticks) is drawn once: see Widget.png
        self.animated = [*ax0.lines, *ax0.patches, *ax1.lines, legend, ax1.title, *ax2.patches, ax2.title]
        return True


class AlibiExplorer(Widget):
    """Slider ``n_heads`` (1..16) and ``query`` position; zero content scores, so only ALiBi acts.

    ``last``: ``n_heads``, ``slopes`` ((n,) float64), ``interpolated`` (bool per head: not one of the
    ``n0`` base slopes), ``weights`` ((n, query+1) attention of the query over keys 0..query).
    """

    FRAMES = (("n_heads", (1, 2, 4, 8, 12, 16)), ("query", (24, 63)))  # the book's grid

    def __init__(self, n_heads: int = 8, query: int = 24):
        self._legend_for = None  # the number of heads the legend shows
        super().__init__(
            dict(n_heads=n_heads, query=query),
            n_heads=W.IntSlider(min=1, max=16, description="heads"),
            query=W.IntSlider(min=1, max=63, description="query pos"),
        )

    def compute(self, n_heads, query):
        slopes = alibi_slopes(n_heads)
        n0 = 1 << (n_heads.bit_length() - 1)
        dist = torch.arange(query, -1, -1, dtype=torch.float64)  # distance of key j = 0..query
        weights = torch.softmax(-slopes[:, None] * dist[None, :], dim=-1)
        interpolated = [h >= n0 for h in range(n_heads)]
        return dict(n_heads=n_heads, query=query, slopes=slopes, interpolated=interpolated, weights=weights)

    def draw(self, data):
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
        ax = axes[0]
        ax.bar(range(1, 17), np.zeros(16))
        ax.set(xlabel="head (blue: geometric base, orange: interpolated)", ylabel="log2(slope)")
        ax.set(xlim=(0.4, 16.6), ylim=(-8.5, 0), title=" ")  # fixed: a redraw paints bars and title only
        ax = axes[1]
        for _ in range(16):
            ax.plot([0], [0])
        ax.set_ylim(0, 1.05)
        ax.set(xlabel="key position j", ylabel="attention weight", title=" ")
        fig.tight_layout()
        self._legend_for = None  # a new figure: no legend yet
        self.update(fig, data)
        return fig

    def update(self, fig, data) -> bool:
        """Bars, curves, legend and titles of ``data`` into the figure ``draw`` made."""
        ax0, ax1 = fig.axes
        n, s = data["n_heads"], np.log2(data["slopes"].numpy())
        for h, bar in enumerate(ax0.patches):
            bar.set_visible(h < n)
            if h < n:
                bar.set_height(s[h])
                bar.set_color("tab:orange" if data["interpolated"][h] else "tab:blue")
        ax0.set_title(f"ALiBi slopes, {n} heads")
        cmap, keys = plt.get_cmap("viridis"), np.arange(data["query"] + 1)
        for h, line in enumerate(ax1.lines):
            line.set_visible(h < n)
            if h < n:
                line.set_data(keys, data["weights"][h].numpy())
                line.set_color(cmap(h / max(n - 1, 1)))
                line.set_label(f"head {h + 1}")
            else:  # as draw leaves it: the legend's "best" place counts hidden lines too
                line.set_data([0], [0])
        ax1.set(xlim=(0, data["query"]), ylim=(0, 1.05 * float(data["weights"].max())))
        ax1.set_title(f"query at {data['query']}, equal content scores")
        if n != self._legend_for:  # the legend depends on the number of heads only
            self._legend_for = n
            if ax1.get_legend() is not None:
                ax1.get_legend().remove()
            if n <= 8:
                ax1.legend(handles=ax1.lines[:n], fontsize=7, ncol=2)
        self.animated = [*ax0.patches, ax0.title, ax1]  # see Widget.png: ax1 whole (its limits follow the data)
        return True
