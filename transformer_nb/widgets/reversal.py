"""Widget for notebook 09 (the reversal task).

:class:`ReversalWidget` -- type a source sequence (symbols 3..12, as in the text's demo
``3 5 7 9 4``); the trained model greedy-decodes it and the widget draws the cross-attention
map of the chosen decoder layer (mean over heads, or one head): rows are the output tokens, columns
the source tokens, so a perfect reversal is an anti-diagonal.
"""

import ipywidgets as W
import matplotlib.pyplot as plt
import torch

from transformer_nb.plotting import heatmap
from transformer_nb.reversal import BOS, EOS, MAX_LEN, MIN_LEN, PAD, attention_maps, greedy_decode, parse_tokens
from transformer_nb.widgets.base import Widget, text_figure

EXTRA_STEPS = 4  # greedy decoding may run this many steps past the source length


def _max_source_len(model) -> int | None:
    """The longest source the widget can decode: the shortest position table in ``model`` (``max_len`` of its
    positional modules) less BOS and the extra decoding steps; None if unbounded."""
    tables = [m.max_len for m in model.modules() if isinstance(getattr(m, "max_len", None), int)]
    return min(tables) - 1 - EXTRA_STEPS if tables else None


def _label(tok: int) -> str:
    return {PAD: "PAD", BOS: "BOS", EOS: "EOS"}.get(int(tok), str(int(tok)))


class ReversalWidget(Widget):
    """A text box (the source), a layer and a head selector -> the output and its cross-attention map.

    ``last`` holds ``text, error`` (None or the message), ``src, pred`` (symbols before EOS),
    ``expected``, ``correct`` (bool), ``ended`` (EOS produced), ``outputs`` (pred + EOS if any),
    ``layer, head``, ``cross (T_out, S)`` (the drawn weights) and ``anti_diagonal`` (share of
    output symbols whose attention peaks at the mirrored source position).
    """

    CONTINUOUS = False  # cheap (~40 ms: python -m transformer_nb.widgets.timing), but it has no slider to animate
    REDRAW = "a twentieth of a second"

    def __init__(self, model, text: str = "3 5 7 9 4"):
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a reversal model (an nn.Module), got {type(model).__name__}")
        self.model, self.max_src = model, _max_source_len(model)
        n_layers, n_heads = len(model.decoder.layers), model.decoder.layers[0].cross_attn.n_heads
        heads = [("mean of heads", -1)] + [(f"head {h + 1}", h) for h in range(n_heads)]
        layers = [(f"decoder layer {i + 1}", i) for i in range(n_layers)]
        super().__init__(
            dict(text=text),
            text=W.Text(description="source", continuous_update=False, placeholder="symbols 3..12, e.g. 3 5 7 9 4"),
            layer=W.Dropdown(options=layers, value=n_layers - 1, description="layer"),
            head=W.Dropdown(options=heads, value=-1, description="head"),
        )

    def compute(self, text, layer, head) -> dict:
        data = {"text": text, "layer": layer, "head": head, "error": None}
        try:
            src = parse_tokens(text)
        except ValueError as err:
            return {**data, "error": str(err)}
        if self.max_src is not None and len(src) > self.max_src:
            rows = self.max_src + 1 + EXTRA_STEPS
            too_long = f"{len(src)} symbols is too long: this model decodes at most {self.max_src} "
            too_long += f"(its position tables have {rows} rows); it was trained on {MIN_LEN}..{MAX_LEN}"
            return {**data, "error": too_long}
        device = next(self.model.parameters()).device
        src_t = torch.tensor([src], device=device)
        out = greedy_decode(self.model, src_t, max_new=len(src) + EXTRA_STEPS)[0].tolist()
        ended = EOS in out
        pred = out[: out.index(EOS)] if ended else out
        outputs = pred + ([EOS] if ended else [])
        tgt_in = torch.tensor([[BOS] + outputs[:-1] if outputs else [BOS]], device=device)
        maps = attention_maps(self.model, src_t, tgt_in)
        w = maps["cross"][layer][0]  # (h, T_out, S)
        cross = (w.mean(0) if head < 0 else w[head]).cpu()
        n = min(len(pred), len(src))
        peak = cross[:n].argmax(-1)
        mirrored = torch.arange(len(src) - 1, len(src) - 1 - n, -1)
        data.update(src=src, pred=pred, expected=src[::-1], correct=ended and pred == src[::-1], ended=ended)
        data.update(outputs=outputs, cross=cross, anti_diagonal=float((peak == mirrored).float().mean()) if n else 0.0)
        data.update(outside_training=not MIN_LEN <= len(src) <= MAX_LEN)
        return data

    def draw(self, data):
        """A layout that does not depend on ``data``, so ``update`` redraws into it."""
        if data["error"]:
            return text_figure(data["error"], "crimson", (5.4, 4.8))
        fig, ax = plt.subplots(figsize=(5.4, 4.8), gridspec_kw=dict(left=0.14, right=0.915, bottom=0.12, top=0.83))
        heatmap(data["cross"], ax=ax, vmin=0, vmax=1, xlabel="source token (key)", ylabel="output token (query)")
        self.update(fig, data)
        return fig

    def update(self, fig, data) -> bool:
        """The map, its labels and the verdict of ``data`` into the figure ``draw`` made."""
        if data["error"] or not fig.axes[0].images:
            return False  # the message, or the map after it: a new figure
        ax, cross = fig.axes[0], data["cross"].numpy()
        ax.images[0].set(data=cross, extent=(-0.5, cross.shape[1] - 0.5, cross.shape[0] - 0.5, -0.5))
        ax.set_xticks(range(len(data["src"])), [str(s) for s in data["src"]])
        ax.set_yticks(range(len(data["outputs"])), [_label(t) for t in data["outputs"]])
        head = "mean of heads" if data["head"] < 0 else f"head {data['head'] + 1}"
        ax.set_title(f"cross-attention, decoder layer {data['layer'] + 1}, {head}")
        verdict = "✓ correct" if data["correct"] else f"✗ expected {data['expected']}"
        outside = f"  (trained on lengths {MIN_LEN}–{MAX_LEN})" if data["outside_training"] else ""
        lines = f"output {data['pred']}{'' if data['ended'] else ' (no EOS)'}\n{verdict}{outside}"
        self.animated = [ax, fig.suptitle(lines, fontsize=9)]  # the colour bar stays: see Widget.png
        return True
