"""Which mask does each attention sublayer use? (notebook 08)

``VariantWidget``: choose the variant (encoder-only, decoder-only, encoder–decoder), the length of
the input (the source, for the encoder–decoder) and of the target, and how much padding each gets;
see, for the chosen layer, every attention sublayer's mask (recorded from the model while it
runs, not drawn from a description) above its attention weights (one head or the mean of all).

The models are small, seeded and untrained (``d_model = 32``, 4 heads, 2 layers): the point is
which keys each query may see, which does not depend on training.
"""

import ipywidgets as W
import matplotlib.pyplot as plt
import torch
from matplotlib.colors import PowerNorm

from transformer_nb.core.masks import padding_mask
from transformer_nb.core.transformer import Transformer
from transformer_nb.probes import capture_masks, record_attention
from transformer_nb.widgets.base import STYLE, Widget, token_label, word_shape
from transformer_nb.widgets.masks import MASK_CMAP

VARIANTS = ("encoder-only", "decoder-only", "encoder-decoder")
VOCAB, PAD = 20, 0


def _build_variant(variant: str):
    """A small seeded model of the named variant (eval mode)."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        arch = {"encoder-only": "encoder", "decoder-only": "decoder"}.get(variant, variant)  # the one Transformer
        return Transformer(vocab=VOCAB, d_model=32, n_heads=4, n_layers=2, d_ff=64, arch=arch).eval()


def _toy_batch(real: int, pad: int, seed: int):
    """One row of ``real`` random tokens followed by ``pad`` PAD tokens, and a full row of the same width:
    ``(ids (2, real+pad), keep (2, real+pad))``; row 0 is the padded one (the one drawn)."""
    t = real + pad
    ids = torch.randint(1, VOCAB, (2, t), generator=torch.Generator().manual_seed(seed))
    keep = padding_mask([real, t], t)
    return ids.masked_fill(~keep, PAD), keep


class VariantWidget(Widget):
    """Controls: ``variant``, ``src_len``/``src_pad`` (input or source), ``tgt_len``/``tgt_pad`` (target,
    encoder–decoder only), ``layer``, ``head`` (``"mean"`` or a head index).

    ``last``: ``variant``, ``sublayers`` (names in execution order for the chosen layer), and per
    sublayer ``labels`` (``mask_kind``), ``masks`` ``(T_q, T_k)`` bool and ``weights`` ``(T_q, T_k)``
    of row 0 of the batch; ``src_keep``/``tgt_keep`` of that row; ``max_weight_on_padding``: the
    largest weight any query gives a padded key (0 exactly when the masks work).
    """

    FRAMES = (("variant", None), ("layer", None), ("head", ("mean", 0, 1)))  # the book's grid

    def __init__(self, variant: str = "encoder-decoder"):
        self.models = {v: _build_variant(v) for v in VARIANTS}
        slider, narrow = dict(style=STYLE, layout=W.Layout(width="230px")), W.Layout(width="150px")
        super().__init__(
            dict(variant=variant),
            variant=W.ToggleButtons(options=VARIANTS, description="variant", style=STYLE),
            src_len=W.IntSlider(value=5, min=1, max=10, description="input/source tokens", **slider),
            src_pad=W.IntSlider(value=2, min=0, max=5, description="+ padding", **slider),
            tgt_len=W.IntSlider(value=4, min=1, max=10, description="target tokens", **slider),
            tgt_pad=W.IntSlider(value=1, min=0, max=5, description="+ padding", **slider),
            layer=W.ToggleButtons(options=[1, 2], description="layer", style={**STYLE, "button_width": "40px"}),
            head=W.Dropdown(options=["mean", 0, 1, 2, 3], description="head", style=STYLE, layout=narrow),
        )

    def compute(self, variant, src_len, src_pad, tgt_len, tgt_pad, layer, head):
        model = self.models[variant]
        two_seqs = variant == "encoder-decoder"
        for name in ("tgt_len", "tgt_pad"):
            self.controls[name].disabled = not two_seqs
        src, src_keep = _toy_batch(src_len, src_pad, 1)
        tgt, tgt_keep = _toy_batch(tgt_len, tgt_pad, 2)
        kw = {"keep": src_keep, **({"tgt": tgt, "tgt_keep": tgt_keep} if two_seqs else {})}
        with record_attention(model):
            records = capture_masks(model, src, **kw)
            modules = dict(model.named_modules())
            weights = {r["name"]: modules[r["name"]].last_weights for r in records}
        chosen = [r for r in records if f".layers.{layer - 1}." in r["name"]]
        data = dict(variant=variant, layer=layer, head=head, sublayers=[], labels={}, masks={}, weights={}, kinds={})
        data.update(src_keep=src_keep[0], tgt_keep=tgt_keep[0] if two_seqs else None)
        worst = 0.0
        for r in chosen:
            w = weights[r["name"]][0]  # (h, T_q, T_k), row 0
            w = w.mean(0) if head == "mean" else w[int(head)]
            key_keep = src_keep[0] if (r["kind"] == "cross" or not r["name"].startswith("decoder")) else tgt_keep[0]
            worst = max(worst, float(weights[r["name"]][0][..., ~key_keep].abs().max()) if (~key_keep).any() else 0.0)
            data["sublayers"].append(r["name"])
            for key, value in (("labels", r["label"]), ("kinds", r["kind"]), ("masks", r["mask"][0]), ("weights", w)):
                data[key][r["name"]] = value
        data["max_weight_on_padding"] = worst
        return data

    @staticmethod
    def _labels(data, name) -> tuple:
        """The (key, query) tick labels of sublayer ``name``: x (source), y (target) or t, and the position; or pad."""
        dec, cross = data["variant"] == "encoder-decoder" and name.startswith("decoder"), data["kinds"][name] == "cross"
        k_keep = data["src_keep"] if (cross or not dec) else data["tgt_keep"]
        qp = "t" if data["variant"] == "decoder-only" else "y" if dec else "x"
        sides = ((k_keep, "x" if cross else qp), (data["tgt_keep"] if dec else data["src_keep"], qp))
        return tuple([f"{p}{i}" if k else "pad" for i, k in enumerate(keep.tolist())] for keep, p in sides)

    def draw(self, data):
        """The figure for this variant, in a fixed layout (so that it never depends on the values shown), filled
        in by ``update``: per sublayer its mask over its weights."""
        n, self._longest = len(data["sublayers"]), self.controls["src_len"].max + self.controls["src_pad"].max
        width = max(3.2 * n + 1.2, 5.0)
        fig, axes = plt.subplots(2, n, figsize=(width, 6.8), squeeze=False)
        fig.subplots_adjust(0.65 / width, 0.66 / 6.8, 1 - 1.1 / width, 1 - 1.02 / 6.8, 0.31, 0.3)  # fixed
        for c in range(n):
            axes[0, c].imshow([[0]], cmap=MASK_CMAP, vmin=0, vmax=1, aspect="auto")
            im = axes[1, c].imshow([[0.0]], cmap="viridis", norm=PowerNorm(0.5, 0, 1), aspect="auto")  # softmax
            axes[0, c].set_ylabel("queries", fontsize=9)  # queries labelled by the mask, keys under the weights
            axes[1, c].set_xlabel("keys", fontsize=9)
            for ax in axes[:, c]:  # no ticks: the labels as shapes (base.word_shape); axis labels placed once
                ax.set(xticks=[], yticks=[])
                ax.yaxis.set_label_coords(-0.37 / (ax.get_position().width * width), 0.5)
                ax.xaxis.set_label_coords(0.5, -0.37 / (ax.get_position().height * 6.8))
            for r in range(self._longest):  # the labels of the longest row
                token_label(axes[0, c], (0, r, axes[0, c].get_yaxis_transform()), gap=3.5)
                token_label(axes[1, c], (r, 0, axes[1, c].get_xaxis_transform()), 90, gap=3.5)
            for up in (21.3, 9.6):  # then the mask's title, two lines of shapes too
                token_label(axes[0, c], (0.5, 1, axes[0, c].transAxes), up=up)
            axes[1, c].set_title("weights", fontsize=10)
        bar = fig.add_axes((1 - 0.85 / width, 0.66 / 6.8, 0.12 / width, axes[1, 0].get_position().height))
        fig.colorbar(im, cax=bar, ticks=(0, 0.05, 0.2, 0.5, 1), format="%g", label="attention weight (√ scale)")
        self._axes, self._variant = axes, data["variant"]
        self._lines = [token_label(fig, (0.5, y, fig.transFigure), up=-4) for y in (0.98, 0.955)]  # above the figure
        self.update(fig, data)
        return fig

    def update(self, fig, data) -> bool:
        """``data`` into the figure ``draw`` made for the same variant (else False); the heatmaps, their labels and
        titles and the lines above them, shapes of ``base.word_shape``, are painted again (``Widget.png``)."""
        if data["variant"] != self._variant:
            return False
        head = "mean of heads" if data["head"] == "mean" else f"head {data['head']}"
        lines = [f"{data['variant']}, layer {data['layer']}   (blue = may attend, grey = blocked)"]
        lines.append(f"weights: {head}; the largest on a padded key: {data['max_weight_on_padding']:.1g}")
        self.animated = []
        for c, name in enumerate(data["sublayers"]):
            ax0, ax1 = self._axes[:, c]
            short = name.replace("layers.", "L").replace("_attn", "")
            for shape, line in zip(ax0.patches[-2:], (short, f"mask: {data['labels'][name]}")):
                shape.set(path=word_shape(line, 10, 0.5))
            xt, yt = self._labels(data, name)
            for ax, values, labels in ((ax0, data["masks"][name].int(), yt), (ax1, data["weights"][name].detach(), xt)):
                ax.images[0].set(data=values.numpy(), extent=(-0.5, len(xt) - 0.5, len(yt) - 0.5, -0.5))
                for r, label in enumerate(ax.patches[: self._longest]):
                    label.set(path=word_shape(labels[min(r, len(labels) - 1)]), visible=r < len(labels))
                self.animated += [*ax.images, *ax.patches, *ax.spines.values()]
        for shape, line in zip(self._lines, lines):
            shape.set(path=word_shape(line, 10, 0.5))
        self.animated += self._lines
        return True
