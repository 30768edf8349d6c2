"""Heatmaps, curves and a live training figure, all plain matplotlib.

Every function draws into a given ``ax`` (or makes one) and returns it, so a notebook
cell ends with ``plt.show()``.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
import torch


def _np(x):
    return x.detach().float().cpu().numpy() if isinstance(x, torch.Tensor) else x


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
    m = _np(matrix)
    if m.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix, got shape {tuple(m.shape)}")
    ax = ax or plt.subplots(figsize=(4, 3.4))[1]
    im = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    if xlabels is not None:
        ax.set_xticks(range(len(xlabels)), [str(s) for s in xlabels], rotation=60, ha="right")
    if ylabels is not None:
        ax.set_yticks(range(len(ylabels)), [str(s) for s in ylabels])
    if annotate:
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                ax.text(
                    j,
                    i,
                    f"{m[i, j]:.2f}",
                    ha="center",
                    va="center",
                    color="w" if m[i, j] < (np.nanmax(m) + np.nanmin(m)) / 2 else "k",
                    fontsize=8,
                )
    if title:
        ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return ax


def heatmaps(matrices, titles=None, xlabels=None, ylabels=None, ncols=4, size=3.0, **kw):
    """A grid of heatmaps, one per matrix in ``matrices`` (a list or a tensor (n, T_q, T_k)).

    Returns the figure.
    """
    n = len(matrices)
    ncols = min(ncols, n)
    nrows = (n + ncols - 1) // ncols
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


def plot_curves(curves, xlabel="", ylabel="", title=None, ax=None, logx=False, logy=False, marker=None):
    """Plot ``curves``: a dict ``label -> (xs, ys)``. Returns the axes."""
    ax = ax or plt.subplots(figsize=(5.5, 3.5))[1]
    for label, (xs, ys) in curves.items():
        ax.plot(_np(xs), _np(ys), label=label, marker=marker)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if logx:
        ax.set_xscale("log")
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


class LiveLoss:
    """A ``tqdm.auto`` progress bar plus a loss figure that redraws while training runs.

    Usage::

        live = LiveLoss(total=steps, title="reversal")
        for step in range(steps):
            ...
            live.update(loss=loss.item())            # logs at the current step
            live.log(val_loss=v)                      # extra series, any time
        live.close()                                  # final figure stays in the cell

    ``history`` keeps one dict per logged point: ``{"step", "seconds", name: value}``.
    Outside Jupyter (benchmarks, tests) no figure is drawn.
    """

    def __init__(
        self,
        total: int,
        title: str = "training",
        every: int | None = None,
        ylabel: str = "loss",
        logy: bool = False,
        x: str = "step",
        disable: bool = False,
        plot: bool | None = None,
    ):
        from tqdm.auto import tqdm

        self.total, self.title, self.ylabel, self.logy, self.x = total, title, ylabel, logy, x
        self.every = every or max(1, total // 20)
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

    def series(self, name: str, x: str | None = None):
        """The logged values of ``name`` as ``(xs, ys)``; ``x`` is ``"step"`` or ``"seconds"``."""
        x = x or self.x
        pts = [(h[x], h[name]) for h in self.history if name in h]
        return [p[0] for p in pts], [p[1] for p in pts]

    def names(self):
        return [k for k in dict.fromkeys(k for h in self.history for k in h) if k not in ("step", "seconds")]

    def draw(self) -> None:
        """Redraw the figure in place (a display handle update in Jupyter)."""
        from IPython.display import display

        if self.fig is None:
            self.fig, self.ax = plt.subplots(figsize=(6, 3.4))
            plt.close(self.fig)  # we display it ourselves; stop inline from showing a copy
        self.ax.clear()
        plot_curves(
            {n: self.series(n) for n in self.names()},
            xlabel=self.x,
            ylabel=self.ylabel,
            title=f"{self.title} (step {self.step}/{self.total})",
            ax=self.ax,
            logy=self.logy,
        )
        if self.handle is None:
            self.handle = display(self.fig, display_id=True)
        else:
            self.handle.update(self.fig)

    def close(self) -> None:
        """Close the bar and draw the final figure."""
        self.bar.close()
        if self.plot and self.history:
            self.draw()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
