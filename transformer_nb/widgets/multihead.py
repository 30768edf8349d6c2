"""Per-head attention heatmaps of a small seeded random model (notebook 03).

``HeadsWidget``: type or pick a sentence, choose the number of heads, the layer, the word
order and how sharp the query projection is; see one heatmap per head, titled with the
head's measured mean attention distance and entropy.

The model is deliberately tiny and untrained: ``n_layers`` blocks of ``x <- x + MHA(x)``
(no feed-forward, no norms, no positions), ``d_model = 32``. Each word's embedding is
seeded by the word itself, so the same word always gets the same vector.
"""

import zlib

import ipywidgets as W
import matplotlib.pyplot as plt
import torch
import torch.nn as nn
from matplotlib.colors import PowerNorm

from transformer_nb.core.multihead import MultiHeadAttention
from transformer_nb.probes import head_stats, record_attention, uniform_distance
from transformer_nb.widgets.base import STYLE, Widget, painted, text_figure

SENTENCES = [
    "The cat sat on the comfortable mat",
    "The cat that sat on the mat was hungry",
    "The government raised the interest rate because inflation was rising",
    "the the the the the the the",
]
ORDERS = ("as typed", "reversed", "shuffled")
MAX_TOKENS = 16
SCALE = PowerNorm(0.5, vmin=0, vmax=1)  # colours of the weights: fixed, so that sharpness shows; square-root spaced
D_MODEL, N_LAYERS = 32, 2


def _word_embedding(word: str) -> torch.Tensor:
    """A fixed random ``(D_MODEL,)`` vector for ``word`` (case-sensitive), N(0, 1) entries."""
    return torch.randn(D_MODEL, generator=torch.Generator().manual_seed(zlib.crc32(word.encode())))


class _AttentionStack(nn.Module):
    """``n_layers`` residual self-attention layers ``x <- x + MHA(x)``: ``(B, T, d) -> (B, T, d)``; ``W_Q``
    scaled by ``sharpness`` (every score q·k with it: sharper heads above 1, flatter below)."""

    def __init__(self, d_model: int, n_heads: int, n_layers: int, sharpness: float = 1.0):
        super().__init__()
        with torch.random.fork_rng():
            torch.manual_seed(0)
            self.layers = nn.ModuleList(MultiHeadAttention(d_model, n_heads) for _ in range(n_layers))
        with torch.no_grad():
            for layer in self.layers:
                layer.q_proj.weight.mul_(sharpness)
                layer.q_proj.bias.mul_(sharpness)

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


def _reorder(tokens: list, order: str) -> list:
    """``tokens`` in ``order`` (one of ``ORDERS``): as typed, reversed, or shuffled (seeded)."""
    if order == "reversed":
        return tokens[::-1]
    if order == "shuffled":
        return [tokens[i] for i in torch.randperm(len(tokens), generator=torch.Generator().manual_seed(1)).tolist()]
    return tokens


class HeadsWidget(Widget):
    """Controls: ``sentence`` (type or pick), ``n_heads``, ``layer``, ``order``, ``sharpness``.

    ``last``: ``tokens``, ``weights (h, T, T)`` of the chosen layer, per-head ``distance`` and
    ``entropy`` lists, and the uniform-attention baselines ``uniform_distance`` and ``uniform_entropy``.
    """

    FRAMES = (("sentence", None), ("n_heads", None), ("layer", None))  # the book's grid

    def __init__(self, sentence: str = SENTENCES[0], n_heads: int = 4, layer: int = 1):
        buttons, self._figs = {**STYLE, "button_width": "40px"}, {}  # the last 8 figures, by heads and words
        super().__init__(
            dict(sentence=sentence, n_heads=n_heads, layer=layer),
            sentence=W.Combobox(
                options=SENTENCES,
                ensure_option=False,
                continuous_update=False,
                description="sentence",
                placeholder="type a sentence, press Enter",
                layout=W.Layout(width="480px"),
            ),
            n_heads=W.ToggleButtons(options=(1, 2, 4, 8), description="heads", style=buttons),
            layer=W.ToggleButtons(options=list(range(1, N_LAYERS + 1)), description="layer", style=buttons),
            order=W.Dropdown(options=ORDERS, value="as typed", description="word order", style=STYLE),
            sharpness=W.FloatLogSlider(
                value=1.0, base=2, min=-2, max=3, step=0.25, description="W_Q scale", style=STYLE
            ),
        )

    def compute(self, sentence, n_heads, layer, order, sharpness):
        tokens = _reorder(sentence.split()[:MAX_TOKENS], order)
        if not tokens:
            return {"tokens": [], "message": "type a sentence and press Enter"}
        x = torch.stack([_word_embedding(w) for w in tokens])[None]  # (1, T, d)
        model = _AttentionStack(D_MODEL, n_heads, N_LAYERS, sharpness)
        with torch.no_grad(), record_attention(model) as mods:
            model(x)
        weights = mods[layer - 1].last_weights[0]  # (h, T, T)
        stats = head_stats(weights.double())
        t = len(tokens)
        data = dict(tokens=tokens, weights=weights, layer=layer, n_heads=n_heads, order=order, sharpness=sharpness)
        data.update(distance=stats["distance"].tolist(), entropy=stats["entropy"].tolist())
        data.update(uniform_distance=uniform_distance(t), uniform_entropy=float(torch.log(torch.tensor(float(t)))))
        data.update(truncated=len(sentence.split()) > MAX_TOKENS)
        return data

    def draw(self, data):
        """The figure for these tokens and heads, laid out once with placeholder values (so that the layout
        never depends on the weights), then filled in by ``update``; the last few are kept for a move back."""
        if not data["tokens"]:
            return text_figure(data["message"], size=(5, 1))
        toks, h = data["tokens"], data["n_heads"]
        if (fig := self._figs.get((h, data["truncated"], *toks))) is not None and self.update(fig, data):
            return fig
        ncols, nrows = min(h, 4), max(h // 4, 1)  # 1, 2, 4 or 8 heads
        size = 2.6 if len(toks) <= 8 else 3.4
        fig, axes = plt.subplots(
            nrows, ncols, figsize=(size * ncols + 1.2, size * nrows + 0.9), squeeze=False, layout="constrained"
        )
        n = len(toks)
        for i, ax in enumerate(axes.flat):  # h = nrows * ncols: 1, 2, 4 or 8 heads
            im = ax.imshow(torch.zeros(n, n).numpy(), norm=SCALE, cmap="viridis")
            ax.set_xticks(range(n), toks, rotation=60, ha="right", fontsize=8)
            ax.set_yticks(range(n), toks if i % ncols == 0 else [""] * n, fontsize=8)
            ax.set_title("head 1: dist 0.00, H 0.00", fontsize=9)
        fig.colorbar(im, ax=axes, fraction=0.03, pad=0.02, label="attention weight")
        note = " (first 16 words)" if data["truncated"] else ""  # the title holds for every layer and sharpness
        fig.suptitle(
            f"{h} head(s){note}; uniform attention: dist {data['uniform_distance']:.2f}, "
            f"H = ln T = {data['uniform_entropy']:.2f}",
            fontsize=9,
        )
        fig.get_layout_engine().execute(fig)
        fig.set_layout_engine("none")
        self._figs = {(h, data["truncated"], *toks): fig, **dict(list(self._figs.items())[:7])}
        self.update(fig, data)
        return fig

    def update(self, fig, data) -> bool:
        """The weights and titles of ``data`` into the figure ``draw`` made for the same tokens and heads (else
        False); only the heads are painted again (``Widget.png``)."""
        if not data["tokens"] or self._figs.get((data["n_heads"], data["truncated"], *data["tokens"])) is not fig:
            return False
        w, h = data["weights"], data["n_heads"]
        for i, ax in enumerate(fig.axes[:h]):
            ax.images[0].set_data(w[i].numpy())
            ax.set_title(f"head {i + 1}: dist {data['distance'][i]:.2f}, H {data['entropy'][i]:.2f}", fontsize=9)
        self.animated = [a for ax in fig.axes[:h] for a in painted(ax)]
        return True
