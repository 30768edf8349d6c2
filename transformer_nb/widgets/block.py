"""Depth, norm placement and skip connections at initialisation (notebook 06).

``DepthWidget``: choose the depth (2–48 blocks), Pre-LN or Post-LN, and whether the blocks
have residual connections; see, for a freshly initialised stack,

- left: the gradient norm of every layer's parameters (what an optimizer step scales with),
- right: the residual stream after every layer: its size (RMS) and how different the
  positions still are (token diversity, 0 = every position holds the same vector).

Everything comes from one pass of ``experiments.layer_grad_norms``.
"""

import asyncio
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

    CONTINUOUS = False  # a new setting: ~60 ms pass (experiments.layer_grad_norms) + ~15 ms figure and PNG
    REDRAW = "a tenth of a second: it runs a forward and backward pass"
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

    def refresh(self, *_):
        """Redraw (``Widget.refresh``), then compute the passes one step away while the kernel is idle."""
        out = super().refresh()
        self._prefetch()
        return out

    def _prefetch(self):
        """Queue the pass of each setting one step of a control away (depth ± 2, the other placement, residuals
        toggled, the next d_model) on the kernel's event loop, one per turn, so that a step finds its pass done;
        none without a running loop (headless), and none left once a control has moved on."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        v, start = self.values(), self.updates
        other = PLACEMENTS[v["placement"] == PLACEMENTS[0]]
        wider = D_MODELS[(D_MODELS.index(v["d_model"]) + 1) % len(D_MODELS)]
        steps = [dict(v, depth=v["depth"] + 2), dict(v, depth=v["depth"] - 2), dict(v, placement=other)]
        steps += [dict(v, residual=not v["residual"]), dict(v, d_model=wider)]
        todo = [s for s in steps if 2 <= s["depth"] <= 48]

        def step():
            if todo and self.updates == start:
                self.compute(**todo.pop(0))
                loop.call_soon(step)

        loop.call_soon(step)

    def draw(self, data):
        """The figure on fixed axes (every setting on the same scales: all 288 fit), filled in by ``update``."""
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
        fig.subplots_adjust(left=0.08, right=0.94, bottom=0.132, top=0.8, wspace=0.22)
        ax1.semilogy([1], [1], marker="o", ms=3)
        ax1.set(xlim=(0, 49), ylim=(1e-3, 1e2), xlabel="layer (1 = next to the input)", ylabel="‖∂loss/∂θ_layer‖")
        ax1.set_title(" ", fontsize=10)
        ax1.grid(alpha=0.3, which="both")
        ax2.semilogy([0], [1], marker="o", ms=3, color="C2", label="token diversity (left axis, log)")
        ax2.set(xlim=(-1, 49), ylim=(1e-8, 2.0), xlabel="after layer", ylabel="token diversity")
        ax3 = ax2.twinx()
        ax3.plot([0], [1], marker=".", ms=3, color="C1", label="stream RMS (right axis)")
        ax3.set(ylim=(0, 9), ylabel="stream RMS")
        ax2.legend(handles=ax2.lines + ax3.lines, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1), ncols=2)
        ax2.grid(alpha=0.3)
        fig.suptitle("a freshly initialised stack (one seed)", fontsize=11)
        self.update(fig, data)
        return fig

    def update(self, fig, data) -> bool:
        """The curves and the left title of ``data`` into the figure ``draw`` made: only those are painted again
        (``Widget.png``)."""
        ax1, ax2, ax3 = fig.axes
        layers, steps = list(range(1, data["depth"] + 1)), list(range(0, data["depth"] + 1))
        ax1.lines[0].set(data=(layers, data["grad"]), color="C0" if data["norm_first"] else "C3")
        ax2.lines[0].set_data(steps, [max(v, 1e-9) for v in data["diversity"]])
        ax3.lines[0].set_data(steps, data["rms"])
        res = "" if data["residual"] else " without residuals"
        ax1.set_title(f"{data['depth']} {data['placement']} blocks{res}: last/first = {data['ratio']:.2f}", fontsize=10)
        self.animated = [*ax1.lines, ax1.title, *ax2.lines, *ax3.lines]
        return True
