"""Widgets for notebook 02 (masking).

:class:`MaskExplorer` -- a batch of three token sequences. Sliders set their lengths; the
batch is padded to the longest one, on the right or on the left. A toggle adds the causal
mask. The top row shows each sequence's combined self-attention mask (padding AND causal),
the bottom row the attention weights it produces (random queries and keys, fixed seed).
Rows with no key left to attend to (e.g. left padding + causal) are marked: they get zero
weights, never NaN.
"""

import ipywidgets as W
import matplotlib.pyplot as plt
import torch
from matplotlib.colors import ListedColormap

from transformer_nb.core.attention import scaled_dot_product_attention
from transformer_nb.core.masks import padding_mask_from_ids, self_attention_mask
from transformer_nb.widgets.base import STYLE, Widget, token_label, word_shape

__all__ = ["MaskExplorer", "make_batch"]

PAD = 0
MAX_LEN = 8
D_K = 8  # width of the random queries and keys
PAD_SIDES = (("pad right", "right"), ("pad left", "left"))
MASK_CMAP = ListedColormap(["#d9d9d9", "#2b8cbe"])  # blocked = grey, may attend = blue
WORDS = ["<pad>", "the", "cat", "sat", "on", "a", "warm", "mat", "today"]


def make_batch(lengths, pad_side: str = "right") -> torch.Tensor:
    """Token ids ``(B, T)`` with ``T = max(max(lengths), 1)``; sequence b is ``1, 2, ..., lengths[b]``
    padded with ``PAD`` (= 0) on ``pad_side`` (``"right"`` or ``"left"``)."""
    if pad_side not in ("right", "left"):
        raise ValueError(f"pad_side must be 'right' or 'left', got {pad_side!r}")
    T = max(max(lengths), 1)
    ids = torch.full((len(lengths), T), PAD, dtype=torch.long)
    for b, n in enumerate(lengths):
        start = 0 if pad_side == "right" else T - n
        ids[b, start : start + n] = torch.arange(1, n + 1)
    return ids


class MaskExplorer(Widget):
    """Three length sliders, padding side, causal toggle -> masks (top) and attention weights (bottom).

    ``last`` holds: ``lengths, pad_side, causal, T, ids (B, T), keep (B, T), mask (B, T, T) bool,
    weights (B, T, T), empty_rows (B, T) bool`` (queries with no visible key), ``n_empty_rows``,
    ``row_sums (B, T)`` and ``has_nan`` (always False: the package never returns NaN).
    """

    FRAMES = (("len_1", (0, 2, 5, 8)), ("pad_side", None), ("causal", None))  # the book's grid

    def __init__(self, lengths=(5, 3, 7), pad_side: str = "right", causal: bool = True):
        if isinstance(lengths, (str, bytes)) or not hasattr(lengths, "__len__") or not len(lengths):
            raise ValueError(f"lengths must be a non-empty list of sequence lengths, got {lengths!r}")
        narrow = W.Layout(width="230px")
        sliders = {
            f"len_{b + 1}": W.IntSlider(min=0, max=MAX_LEN, description=f"length {b + 1}", style=STYLE, layout=narrow)
            for b in range(len(lengths))
        }
        causal_options = [("causal", True), ("bidirectional", False)]
        super().__init__(
            {**{f"len_{b + 1}": n for b, n in enumerate(lengths)}, "pad_side": pad_side, "causal": causal},
            **sliders,
            pad_side=W.ToggleButtons(options=PAD_SIDES, style={"button_width": "80px"}),
            causal=W.ToggleButtons(options=causal_options, style={"button_width": "110px"}),
        )

    def compute(self, pad_side, causal, **lens) -> dict:
        lengths = [lens[f"len_{b + 1}"] for b in range(len(lens))]
        ids = make_batch(lengths, pad_side)
        B, T = ids.shape
        keep = padding_mask_from_ids(ids, PAD)  # (B, T)
        mask = self_attention_mask(keep, causal=bool(causal))[:, 0]  # (B, T, T)
        g, d = torch.Generator().manual_seed(0), D_K
        emb = torch.randn(len(WORDS), d, generator=g)
        wq, wk = torch.randn(d, d, generator=g), torch.randn(d, d, generator=g)
        x = emb[ids] + 0.5 * torch.randn(MAX_LEN, d, generator=g)[:T]  # token + a little position
        q, k = x @ wq / d**0.5, x @ wk / d**0.5
        _, weights = scaled_dot_product_attention(q, k, x, mask=mask)  # (B, T, T)
        empty = ~mask.any(-1)
        data = dict(lengths=lengths, pad_side=pad_side, causal=causal, T=T, ids=ids, keep=keep, mask=mask)
        data.update(weights=weights, empty_rows=empty, n_empty_rows=int(empty.sum()), row_sums=weights.sum(-1))
        data.update(has_nan=bool(torch.isnan(weights).any()))
        return data

    def draw(self, data):
        B = len(data["lengths"])
        fig, axes = plt.subplots(2, B, figsize=(3.3 * B, 6.4), squeeze=False)
        fig.subplots_adjust(0.8 / (3.3 * B), 0.83 / 6.4, 1 - 0.15 / (3.3 * B), 1 - 0.64 / 6.4, 0.25, 0.42)  # fixed
        for i, ax in enumerate(axes.flat):  # the masks (row 0), then the weights (row 1)
            ax.imshow([[0.0]], cmap=MASK_CMAP if i < B else "viridis", vmin=0, vmax=1, aspect="equal")
            ax.set_xlabel("key" if i >= B else "", fontsize=8)
            ax.set_ylabel("" if i % B else "query", fontsize=8)
            # no ticks: the tokens (a column is one sequence) as shapes (word_shape), the queries beside the mask, the
            # keys under the weights; titles and axis labels placed once
            ax.set(xticks=[], yticks=[])
            ax.set_title("" if i < B else "attention weights", fontsize=9, y=1), ax.xaxis.set_label_coords(0.5, -0.28)
            ax.yaxis.set_label_coords(-0.27 if i < B else -0.06, 0.5)
            for r in range(MAX_LEN):  # red frames of the rows with no visible key, shown as needed
                ax.add_patch(plt.Rectangle((-0.5, r - 0.5), 1, 1, fill=False, ec="C3", lw=2, visible=False))
            for r in range(MAX_LEN):  # then the tokens: ax.patches[MAX_LEN:]
                at = (r, -0.03, ax.get_xaxis_transform()) if i >= B else (-0.03, r, ax.get_yaxis_transform())
                token_label(ax, at, 70 * (i >= B))
            if i < B:  # the mask's title, a shape too: ax.patches[-1]
                token_label(ax, (0.5, 1, ax.transAxes), up=9.3)
        self._line = token_label(fig, (0.5, 0.98, fig.transFigure), up=-4)  # the line above the figure
        self.update(fig, data)
        return fig

    def update(self, fig, data) -> bool:
        """Redraw ``data`` into the figure ``draw`` made (a fixed layout); over a kept background (``Widget.png``),
        the images, frames, tokens, mask titles and the line above them are painted again: the same for any control."""
        B, T = data["ids"].shape
        for i, ax in enumerate(fig.axes):
            b, mask = i % B, i < B
            ax.images[0].set(data=(data["mask"][b].float() if mask else data["weights"][b]).numpy())
            ax.images[0].set_extent((-0.5, T - 0.5, T - 0.5, -0.5))
            for r, (frame, token) in enumerate(zip(ax.patches[:MAX_LEN], ax.patches[MAX_LEN:])):
                frame.set(width=T, visible=r < T and bool(data["empty_rows"][b, r]))
                token.set(path=word_shape(WORDS[data["ids"][b, min(r, T - 1)]]), visible=r < T)
            if mask:
                ax.patches[-1].set(path=word_shape(f"seq {b + 1} (length {data['lengths'][b]}): mask", 9, 0.5))
        how = ("padding AND causal" if data["causal"] else "padding only") + f", padded on the {data['pad_side']}"
        extra = f"  ·  {data['n_empty_rows']} query row(s) with no visible key (red): weights 0, not NaN"
        self._line.set(path=word_shape(f"blue = may attend  ·  {how}{extra if data['n_empty_rows'] else ''}", 10, 0.5))
        self.animated = [*(a for ax in fig.axes for a in (*ax.images, *ax.patches, *ax.spines.values())), self._line]
        return True
