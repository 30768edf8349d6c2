"""Depth, norm placement and skip connections at initialisation (notebook 06).

``DepthWidget``: choose the depth (2–48 blocks), Pre-LN or Post-LN, and whether the blocks
have residual connections; see, for a freshly initialised stack,

- left: the gradient norm of every layer's parameters (what an optimizer step scales with),
- right: the residual stream after every layer: its size (RMS) and how different the
  positions still are (token diversity, 0 = every position holds the same vector).

Everything comes from one pass of ``experiments.layer_grad_norms``.
"""

from functools import lru_cache

import ipywidgets as W
import matplotlib.pyplot as plt

from transformer_nb.experiments import layer_grad_norms
from transformer_nb.widgets.base import STYLE, Widget

PLACEMENTS = ("Pre-LN", "Post-LN")
D_MODELS = (32, 64, 128)
_grad_norms = lru_cache(layer_grad_norms)  # a move back to a setting reuses its pass (read only)


class DepthWidget(Widget):
    """Controls: ``depth`` (2–48), ``placement`` (Pre-LN / Post-LN), ``residual`` (on/off), ``d_model``.

    ``last``: ``depth``, ``norm_first``, ``residual``, ``grad`` (per-layer parameter-gradient
    norms, list of ``depth`` floats), ``input_grad`` (per-layer ∂loss/∂input norms), ``rms`` and
    ``diversity`` (lists of ``depth + 1`` floats, entry 0 = the input) and ``ratio`` =
    ``grad[-1] / grad[0]`` (last layer over first).
    """

    CONTINUOUS = False  # ~70 ms pass + ~50 ms PNG in the kernel (the pass: experiments.layer_grad_norms)
    REDRAW = "a quarter of a second: it runs a forward and backward pass"
    FRAMES = (("depth", (2, 6, 12, 24, 48)), ("placement", None), ("residual", None))  # the book's grid

    def __init__(self, depth: int = 24, placement: str = "Post-LN", residual: bool = True, d_model: int = 64):
        super().__init__(
            dict(depth=depth, placement=placement, residual=residual, d_model=d_model),
            depth=W.IntSlider(min=2, max=48, step=2, description="blocks", style=STYLE),
            placement=W.ToggleButtons(options=PLACEMENTS, description="norm", style={**STYLE, "button_width": "70px"}),
            residual=W.Checkbox(description="residual connections", style=STYLE),
            d_model=W.Dropdown(options=D_MODELS, description="d_model", style=STYLE),
        )

    def compute(self, depth, placement, residual, d_model):
        norm_first = placement == "Pre-LN"
        heads = 4 if d_model >= 64 else 2
        s = g = _grad_norms(depth, norm_first, residual, d_model=d_model, n_heads=heads, seeds=(0,))
        grad = g["param"].tolist()
        data = dict(depth=depth, placement=placement, norm_first=norm_first, residual=residual, d_model=d_model)
        data.update(grad=grad, input_grad=g["input"].tolist(), rms=s["rms"].tolist(), diversity=s["diversity"].tolist())
        data.update(ratio=grad[-1] / grad[0])
        return data

    def draw(self, data):
        """The figure, in a fixed layout (so that it never depends on the values shown), filled in by ``update``."""
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
        fig.subplots_adjust(left=0.1, right=0.94, bottom=0.132, top=0.868, wspace=0.22)
        ax1.semilogy([1], [1], marker="o", ms=3)
        ax1.set(xlabel="layer (1 = next to the input)", ylabel="‖∂loss/∂θ_layer‖")
        ax1.grid(alpha=0.3, which="both")
        ax2.semilogy([0], [1], marker="o", ms=3, color="C2", label="token diversity (left axis)")
        ax2.set(ylim=(1e-8, 2.0), xlabel="after layer", ylabel="token diversity (log)")
        ax3 = ax2.twinx()
        ax3.plot([0], [1], marker=".", ms=3, color="C1", label="stream RMS (right axis)")
        ax3.set(ylabel="stream RMS")
        ax2.legend(handles=ax2.lines + ax3.lines, fontsize=8, loc="lower left")
        ax2.grid(alpha=0.3)
        for ax, title in ((ax1, ""), (ax2, "the residual stream"), (ax3, "")):  # placed once, not at each redraw
            ax.set_title(title, fontsize=10, y=1)
            ax.xaxis.set_label_coords(0.5, -0.11)
        ax2.yaxis.set_label_coords(-0.128, 0.5), ax3.yaxis.set_label_coords(1.1, 0.5)  # ax1's moves with its ticks
        self.update(fig, data)
        return fig

    def update(self, fig, data) -> bool:
        """The curves and titles of ``data`` into the figure ``draw`` made; all is painted again but the right plot's
        fixed y axis and title (``Widget.png``)."""
        ax1, ax2, ax3 = fig.axes
        layers, steps = list(range(1, data["depth"] + 1)), list(range(0, data["depth"] + 1))
        ax1.lines[0].set(data=(layers, data["grad"]), color="C0" if data["norm_first"] else "C3")
        ax2.lines[0].set_data(steps, [max(v, 1e-9) for v in data["diversity"]])
        ax3.lines[0].set_data(steps, data["rms"])
        for ax in (ax1, ax2):
            ax.relim()
            ax.autoscale_view()
        ax3.set_ylim(0, 1.15 * max(data["rms"]))
        ax1.set_title(f"gradient per layer: last/first = {data['ratio']:.2f}", fontsize=10)
        res = "with" if data["residual"] else "WITHOUT"
        fig.suptitle(
            f"{data['depth']} {data['placement']} blocks {res} residual connections, "
            f"d_model {data['d_model']}, at initialisation",
            fontsize=11,
        )
        self.animated = [ax1, ax2.xaxis, ax2.lines[0], *ax2.spines.values(), ax2.legend_, ax3, fig._suptitle]
        return True
