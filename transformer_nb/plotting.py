"""Heatmaps, curves and a live training figure, all plain matplotlib.

Every function draws into a given ``ax`` (or makes one) and returns it, so a notebook
cell ends with ``plt.show()``.
"""

import time

import numpy as np
import torch

from transformer_nb.core.utils import as_int

__all__ = ["LiveLoss", "heatmap", "heatmaps", "plot_curves"]  # text_color serves heatmap


def _np(x):
    return x.detach().float().cpu().numpy() if isinstance(x, torch.Tensor) else x


def text_color(rgba) -> str:
    """``"k"`` or ``"w"``: whichever contrasts more with a cell of sRGB colour ``(r, g, b[, a])`` (WCAG 2 contrast of
    relative luminances: 0 black, 1 white)."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
    lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return "k" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "w"


def heatmap(
    matrix,
    xlabels=None,
    ylabels=None,
    title=None,
    ax=None,
    cmap="viridis",
    vmin=None,
    vmax=None,
    annotate=False,
    colorbar=True,
    xlabel=None,
    ylabel=None,
):
    """Draw a 2-D ``matrix`` (T_q, T_k) as a heatmap; rows are queries, columns keys."""
    try:
        m = np.asarray(_np(matrix), dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"matrix must be a tensor or an array of numbers, got {type(matrix).__name__}") from None
    if m.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix, got shape {tuple(m.shape)}")
    import matplotlib.pyplot as plt  # here: a process that trains without a figure (torchrun) never loads it

    ax = ax or plt.subplots(figsize=(4, 3.4))[1]
    im = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    if xlabels is not None:
        xlabels = [str(s) for s in xlabels]
        turn = max(map(len, xlabels), default=0) > 3  # words slant; short numbers stay upright
        ax.set_xticks(range(len(xlabels)), xlabels, rotation=60 if turn else 0, ha="right" if turn else "center")
    if ylabels is not None:
        ax.set_yticks(range(len(ylabels)), [str(s) for s in ylabels])
    if annotate:
        rgba = im.cmap(im.norm(m))  # the colour of every cell, as drawn
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", color=text_color(rgba[i, j]), fontsize=8)
    ax.set(**{k: v for k, v in {"title": title, "xlabel": xlabel, "ylabel": ylabel}.items() if v})
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return ax


def heatmaps(matrices, titles=None, xlabels=None, ylabels=None, ncols=4, size=3.0, **kw):
    """A grid of heatmaps, one per matrix in ``matrices`` (a list or a tensor (n, T_q, T_k)).

    Returns the figure.
    """
    if isinstance(matrices, (str, bytes)) or not hasattr(matrices, "__len__") or len(matrices) == 0:
        raise ValueError(
            f"matrices must be a non-empty list of matrices or a tensor (n, T_q, T_k), got {matrices!r:.60}"
        )
    n = len(matrices)
    ncols = min(as_int("ncols", ncols, minimum=1), n)
    nrows = (n + ncols - 1) // ncols
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols + 0.5, size * nrows), squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.axis("off")
            continue
        heatmap(
            matrices[i],
            xlabels=xlabels,
            ylabels=ylabels if i % ncols == 0 else None,
            title=titles[i] if titles else None,
            ax=ax,
            colorbar=False,
            **kw,
        )
        if ylabels is not None and i % ncols:
            ax.set_yticks([])
    fig.tight_layout()
    return fig


def plot_curves(curves, xlabel="", ylabel="", title=None, ax=None, logy=False, marker=None):
    """Plot ``curves``: a dict ``label -> (xs, ys)``. Returns the axes."""
    if not isinstance(curves, dict) or not all(isinstance(c, (tuple, list)) and len(c) == 2 for c in curves.values()):
        raise TypeError(f"curves must be a dict label -> (xs, ys), got {curves!r:.80}")
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(5.5, 3.5))[1]
    for label, (xs, ys) in curves.items():
        ax.plot(_np(xs), _np(ys), label=label, marker=marker)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if logy:
        ax.set_yscale("log")
    if len(curves) > 1:
        ax.legend()
    ax.grid(alpha=0.3)
    return ax


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython

        ip = get_ipython()
        return ip is not None and "IPKernelApp" in ip.config
    except ImportError:
        return False


#: The panel of a logged quantity, by its name: accuracies (0 to 1) and perplexities (log scale) get their own.
PANELS = (("acc", "accuracy"), ("match", "accuracy"), ("ppl", "perplexity"), ("perplexity", "perplexity"))


class LiveLoss:
    """A ``tqdm.auto`` progress bar plus a loss figure that redraws while training runs.

    Usage::

        live = LiveLoss(total=steps, title="reversal")
        for step in range(steps):
            ...
            live.update(loss=loss.item())            # logs at the current step
            live.log(val_loss=v, exact_match=acc)    # extra series, any time
        live.close()                                  # final figure stays in the cell

    Each quantity is drawn in the panel of its unit, side by side: names containing "acc" or "match" in an
    "accuracy" panel (0 to 1), "ppl" or "perplexity" in a "perplexity" panel (log scale), the rest in the
    "loss" panel. So a loss and an exact match never share an axis.
    ``history`` keeps one dict per logged point: ``{"step", "seconds", name: value}``.
    Outside Jupyter (benchmarks, tests) no figure is drawn.
    """

    def __init__(
        self,
        total: int,
        title: str = "training",
        every: int | None = None,
        disable: bool = False,
        plot: bool | None = None,
    ):
        from tqdm.auto import tqdm

        self.total, self.title = as_int("total", total), title
        self.every = max(1, total // 20) if every is None else as_int("every", every, minimum=1)
        self.bar = tqdm(total=total, desc=title, disable=disable)
        self.step, self.t0, self.history = 0, time.perf_counter(), []
        self.plot = _in_notebook() and not disable if plot is None else plot
        self.fig = self.handle = None

    def log(self, **metrics) -> None:
        """Record ``metrics`` at the current step without advancing."""
        self.history.append({"step": self.step, "seconds": time.perf_counter() - self.t0, **metrics})

    def update(self, n: int = 1, **metrics) -> None:
        """Advance ``n`` steps, record ``metrics``, and redraw every ``every`` steps."""
        self.step += n
        self.bar.update(n)
        if metrics:
            self.log(**metrics)
            self.bar.set_postfix({k: f"{v:.4g}" for k, v in metrics.items()}, refresh=False)
        if self.plot and (self.step % self.every < n or self.step >= self.total):
            self.draw()

    def layout(self) -> dict:
        """``{panel label: [names]}`` in drawing order: the loss panel first, then as first logged."""
        names = [k for k in dict.fromkeys(k for h in self.history for k in h) if k not in ("step", "seconds")]
        out = {}
        for name in names:
            out.setdefault(next((lab for key, lab in PANELS if key in name.lower()), "loss"), []).append(name)
        return dict(sorted(out.items(), key=lambda kv: kv[0] != "loss"))

    def draw(self) -> None:
        """Redraw the figure in place (a display handle update in Jupyter)."""
        import matplotlib.pyplot as plt
        from IPython.display import display

        panels = self.layout()
        if self.fig is None or len(self.fig.axes) != max(1, len(panels)):
            n = max(1, len(panels))
            self.fig, axes = plt.subplots(1, n, figsize=(6 + 4 * (n - 1), 3.4), squeeze=False)
            self.axes = list(axes[0])
            plt.close(self.fig)  # we display it ourselves; stop inline from showing a copy
        for ax, (label, names) in zip(self.axes, panels.items()):
            ax.clear()
            curves = {n: tuple(map(list, zip(*[(h["step"], h[n]) for h in self.history if n in h]))) for n in names}
            plot_curves(curves, xlabel="step", ylabel=label, ax=ax, logy=label == "perplexity")
            if label == "accuracy":
                ax.set_ylim(0, 1.02)
            if len(names) == 1 and label != names[0]:
                ax.set_title(names[0].replace("_", " "), fontsize=10)
        self.fig.suptitle(f"{self.title} (step {self.step}/{self.total})", fontsize=11)
        self.fig.tight_layout()
        if self.handle is None:
            self.handle = display(self.fig, display_id=True)
        else:
            self.handle.update(self.fig)

    def close(self) -> None:
        """Close the bar and draw the final figure."""
        self.bar.close()
        if self.plot and self.history:
            self.draw()
