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

from transformer_nb.core.multihead import MultiHeadAttention
from transformer_nb.core.utils import as_int, as_real
from transformer_nb.probes import head_stats, record_attention, uniform_distance
from transformer_nb.widgets.base import Widget, check_choice, check_ints

SENTENCES = [
    "The cat sat on the comfortable mat",
    "The cat that sat on the mat was hungry",
    "The government raised the interest rate because inflation was rising",
    "the the the the the the the",
]
ORDERS = ("as typed", "reversed", "shuffled")
MAX_TOKENS = 16


def word_embedding(word: str, d_model: int, seed: int = 0) -> torch.Tensor:
    """A fixed random ``(d_model,)`` vector for ``word`` (case-sensitive), N(0, 1) entries."""
    if not isinstance(word, str):
        raise TypeError(f"word must be a str, got {type(word).__name__}")
    d_model = as_int("d_model", d_model, minimum=1)
    g = torch.Generator().manual_seed(zlib.crc32(word.encode()) + 7919 * seed)
    return torch.randn(d_model, generator=g)


class AttentionStack(nn.Module):
    """``n_layers`` residual self-attention layers ``x <- x + MHA(x)``: ``(B, T, d) -> (B, T, d)``."""

    def __init__(self, d_model: int, n_heads: int, n_layers: int, seed: int = 0, sharpness: float = 1.0):
        super().__init__()
        check_ints(seed=seed)
        as_int("n_layers", n_layers, minimum=1)
        sharpness = as_real("sharpness", sharpness, positive=True)
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            self.layers = nn.ModuleList(MultiHeadAttention(d_model, n_heads) for _ in range(n_layers))
        with torch.no_grad():  # scaling W_Q scales every score q·k: sharper (>1) or flatter (<1) heads
            for layer in self.layers:
                layer.q_proj.weight.mul_(sharpness)
                layer.q_proj.bias.mul_(sharpness)

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


def tokenize(sentence: str) -> list:
    """The first ``MAX_TOKENS`` words of ``sentence``, split at white space."""
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
    return sentence.split()[:MAX_TOKENS]


def reorder(tokens: list, order: str, seed: int = 0) -> list:
    """``tokens`` in ``order`` (one of ``ORDERS``): as typed, reversed, or shuffled with ``seed``."""
    if not isinstance(tokens, list):
        raise TypeError(f"tokens must be a list of words, got {type(tokens).__name__}")
    check_choice("order", order, ORDERS)
    if order == "reversed":
        return tokens[::-1]
    if order == "shuffled":
        g = torch.Generator().manual_seed(seed + 1)
        return [tokens[i] for i in torch.randperm(len(tokens), generator=g).tolist()]
    return list(tokens)


class HeadsWidget(Widget):
    """Controls: ``sentence`` (type or pick), ``n_heads``, ``layer``, ``order``, ``sharpness``.

    ``last``: ``tokens``, ``weights (h, T, T)`` of the chosen layer, per-head ``distance`` and
    ``entropy`` lists, and the uniform-attention baselines ``uniform_distance`` and ``uniform_entropy``.
    """

    CONTINUOUS = False  # slower than CHEAP_MS (python -m transformer_nb.widgets.timing)
    REDRAW = "half a second"

    def __init__(
        self,
        sentence: str = SENTENCES[0],
        n_heads: int = 4,
        layer: int = 1,
        n_layers: int = 2,
        d_model: int = 32,
        seed: int = 0,
    ):
        if not isinstance(sentence, str):
            raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
        check_ints(seed=seed)
        d_model, n_layers = as_int("d_model", d_model, minimum=1), as_int("n_layers", n_layers, minimum=1)
        heads = [h for h in (1, 2, 4, 8) if d_model % h == 0]
        check_choice("n_heads", n_heads, heads)
        check_choice("layer", layer, range(1, n_layers + 1))
        self.d_model, self.n_layers, self.seed = d_model, n_layers, seed
        style = {"description_width": "initial"}
        super().__init__(
            sentence=W.Combobox(
                value=sentence,
                options=SENTENCES,
                ensure_option=False,
                continuous_update=False,
                description="sentence",
                placeholder="type a sentence, press Enter",
                layout=W.Layout(width="480px"),
            ),
            n_heads=W.ToggleButtons(
                options=heads, value=n_heads, description="heads", style={**style, "button_width": "40px"}
            ),
            layer=W.ToggleButtons(
                options=list(range(1, n_layers + 1)),
                value=layer,
                description="layer",
                style={**style, "button_width": "40px"},
            ),
            order=W.Dropdown(options=ORDERS, value="as typed", description="word order", style=style),
            sharpness=W.FloatLogSlider(
                value=1.0,
                base=2,
                min=-2,
                max=3,
                step=0.25,
                description="W_Q scale",
                style=style,
            ),
        )

    def compute(self, sentence, n_heads, layer, order, sharpness):
        tokens = reorder(tokenize(sentence), order, self.seed)
        if not tokens:
            return {"tokens": [], "message": "type a sentence and press Enter"}
        x = torch.stack([word_embedding(w, self.d_model, self.seed) for w in tokens])[None]  # (1, T, d)
        model = AttentionStack(self.d_model, n_heads, self.n_layers, self.seed, sharpness)
        with torch.no_grad(), record_attention(model) as mods:
            model(x)
        weights = mods[layer - 1].last_weights[0]  # (h, T, T)
        stats = head_stats(weights.double())
        t = len(tokens)
        return {
            "tokens": tokens,
            "weights": weights,
            "layer": layer,
            "n_heads": n_heads,
            "order": order,
            "sharpness": sharpness,
            "distance": stats["distance"].tolist(),
            "entropy": stats["entropy"].tolist(),
            "uniform_distance": uniform_distance(t),
            "uniform_entropy": float(torch.log(torch.tensor(float(t)))),
            "truncated": len(sentence.split()) > MAX_TOKENS,
        }

    def draw(self, data):
        if not data["tokens"]:
            fig, ax = plt.subplots(figsize=(5, 1))
            ax.text(0.5, 0.5, data["message"], ha="center", va="center")
            ax.axis("off")
            return fig
        w, toks, h = data["weights"], data["tokens"], data["n_heads"]
        ncols = min(h, 4)
        nrows = (h + ncols - 1) // ncols
        size = 2.6 if len(toks) <= 8 else 3.4
        fig, axes = plt.subplots(
            nrows, ncols, figsize=(size * ncols + 1.2, size * nrows + 0.9), squeeze=False, layout="constrained"
        )
        vmax = float(w.max())
        for i, ax in enumerate(axes.flat):
            if i >= h:
                ax.axis("off")
                continue
            im = ax.imshow(w[i].numpy(), vmin=0, vmax=vmax, cmap="viridis")
            ax.set_xticks(range(len(toks)), toks, rotation=60, ha="right", fontsize=8)
            ax.set_yticks(range(len(toks)), toks if i % ncols == 0 else [""] * len(toks), fontsize=8)
            ax.set_title(f"head {i + 1}: dist {data['distance'][i]:.2f}, H {data['entropy'][i]:.2f}", fontsize=9)
        fig.colorbar(im, ax=axes, fraction=0.03, pad=0.02, label="attention weight")
        note = " (first 16 words)" if data["truncated"] else ""
        fig.suptitle(
            f"layer {data['layer']} of {self.n_layers}, {h} head(s), W_Q × {data['sharpness']:g}{note}; "
            f"uniform attention: dist {data['uniform_distance']:.2f}, H = ln T = {data['uniform_entropy']:.2f}",
            fontsize=9,
        )
        return fig
