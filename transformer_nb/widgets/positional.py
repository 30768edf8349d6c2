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

from transformer_nb.positional import alibi_slopes, sinusoid_frequencies, sinusoidal_encoding
from transformer_nb.widgets.base import Widget


class SinusoidFingerprint(Widget):
    """Sliders ``position`` (0..T-1) and ``pair`` (frequency index i, 0..d/2-1).

    ``last``: ``position``, ``pair``, ``omega`` (ω_i), ``wavelength`` (2π/ω_i, in positions),
    ``fingerprint`` (PE[position], a (d_model,) tensor), ``pair_values`` (sin, cos of position·ω_i).
    """

    def __init__(self, n_positions: int = 128, d_model: int = 64, position: int = 10, pair: int = 4):
        self.pe = sinusoidal_encoding(n_positions, d_model)
        self.omega = sinusoid_frequencies(d_model)
        self.n_positions, self.d_model = n_positions, d_model
        super().__init__(
            position=W.IntSlider(
                value=position, min=0, max=n_positions - 1, description="position p", continuous_update=False
            ),
            pair=W.IntSlider(
                value=pair, min=0, max=d_model // 2 - 1, description="pair i (freq.)", continuous_update=False
            ),
        )

    def compute(self, position, pair):
        omega = float(self.omega[pair])
        fp = self.pe[position].clone()
        return {
            "position": position,
            "pair": pair,
            "omega": omega,
            "wavelength": 2 * np.pi / omega,
            "fingerprint": fp,
            "pair_values": (float(fp[2 * pair]), float(fp[2 * pair + 1])),
        }

    def draw(self, data):
        p, i, omega = data["position"], data["pair"], data["omega"]
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.4), gridspec_kw={"width_ratios": [1.3, 1.3, 1]})
        ax = axes[0]
        ax.imshow(self.pe.T.numpy(), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
        ax.axvline(p, color="k", lw=1.5)
        ax.axhspan(2 * i - 0.5, 2 * i + 1.5, color="gold", alpha=0.5)
        ax.set_xlabel("position")
        ax.set_ylabel("dimension")
        ax.set_title("PE table: column = fingerprint")
        ax = axes[1]
        xs = np.linspace(0, self.n_positions - 1, 600)
        ax.plot(xs, np.sin(xs * omega), label=f"PE[·, {2 * i}] = sin(p·ω)")
        ax.plot(xs, np.cos(xs * omega), label=f"PE[·, {2 * i + 1}] = cos(p·ω)")
        ax.plot([p, p], data["pair_values"], "ko")
        ax.axvline(p, color="k", lw=0.8, ls=":")
        ax.set_ylim(-1.15, 1.6)
        ax.set_xlabel("position p")
        ax.set_title(f"pair i={i}: ω={omega:.3g}, wavelength={data['wavelength']:.3g}")
        ax.legend(loc="upper right", fontsize=8, ncol=2)
        ax = axes[2]
        fp = data["fingerprint"].numpy()
        colors = ["gold" if d // 2 == i else ("tab:blue" if d % 2 == 0 else "tab:orange") for d in range(len(fp))]
        ax.bar(range(len(fp)), fp, color=colors, width=1.0)
        ax.set_ylim(-1.1, 1.1)
        ax.set_xlabel("dimension (blue sin, orange cos)")
        ax.set_title(f"fingerprint PE[{p}]")
        fig.tight_layout()
        return fig


class AlibiExplorer(Widget):
    """Slider ``n_heads`` (1..16) and ``query`` position; zero content scores, so only ALiBi acts.

    ``last``: ``n_heads``, ``slopes`` ((n,) float64), ``interpolated`` (bool per head: not one of the
    ``n0`` base slopes), ``weights`` ((n, query+1) attention of the query over keys 0..query).
    """

    def __init__(self, n_heads: int = 8, query: int = 24):
        super().__init__(
            n_heads=W.IntSlider(value=n_heads, min=1, max=16, description="heads", continuous_update=False),
            query=W.IntSlider(value=query, min=1, max=63, description="query pos", continuous_update=False),
        )

    def compute(self, n_heads, query):
        slopes = alibi_slopes(n_heads)
        n0 = 1 << (n_heads.bit_length() - 1)
        dist = torch.arange(query, -1, -1, dtype=torch.float64)  # distance of key j = 0..query
        weights = torch.softmax(-slopes[:, None] * dist[None, :], dim=-1)
        return {
            "n_heads": n_heads,
            "query": query,
            "slopes": slopes,
            "interpolated": [h >= n0 for h in range(n_heads)],
            "weights": weights,
        }

    def draw(self, data):
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
        n, s = data["n_heads"], data["slopes"].numpy()
        ax = axes[0]
        colors = ["tab:orange" if f else "tab:blue" for f in data["interpolated"]]
        ax.bar(range(1, n + 1), np.log2(s), color=colors)
        ax.set_xlabel("head (blue: geometric base, orange: interpolated)")
        ax.set_ylabel("log2(slope)")
        ax.set_ylim(-8.5, 0)
        ax.set_title(f"ALiBi slopes, {n} heads")
        ax = axes[1]
        cmap = plt.get_cmap("viridis")
        for h in range(n):
            ax.plot(
                range(data["query"] + 1),
                data["weights"][h].numpy(),
                color=cmap(h / max(n - 1, 1)),
                label=f"head {h + 1}" if n <= 8 else None,
            )
        ax.set_xlabel("key position j")
        ax.set_ylabel("attention weight")
        ax.set_title(f"query at {data['query']}, equal content scores")
        if n <= 8:
            ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        return fig
