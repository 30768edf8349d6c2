"""The figure helpers: annotations readable on every cell, and each quantity of a live plot on its own axis."""

import matplotlib.pyplot as plt
import torch

from transformer_nb.plotting import LiveLoss, heatmap, text_color


def test_text_colour():
    assert text_color((1, 1, 1)) == "k" and text_color((0, 0, 0)) == "w"
    assert text_color(plt.get_cmap("Reds")(0.05)) == "k"  # a pale cell
    assert text_color(plt.get_cmap("Reds")(0.95)) == "w"  # a dark red cell
    assert text_color(plt.get_cmap("viridis")(1.0)) == "k"  # yellow
    assert text_color(plt.get_cmap("viridis")(0.0)) == "w"  # dark purple


def test_annotations_are_dark_on_pale_cells_and_light_on_dark_ones():
    """09's first-mistake heatmap: most cells near 0 in "Reds" (white), a few large (dark red).
    Before, a value below the midpoint of the range always got white text, unreadable on white."""
    m = torch.tensor([[0.0, 0.02, 0.1], [0.2, 0.38, 0.47]])
    ax = heatmap(m, cmap="Reds", annotate=True)
    colors = {t.get_text(): t.get_color() for t in ax.texts}
    assert colors["0.00"] == colors["0.02"] == colors["0.10"] == colors["0.20"] == "k"
    assert colors["0.47"] == "w"
    plt.close(ax.figure)


def test_short_tick_labels_stay_upright_and_words_slant():
    ax = heatmap(torch.rand(2, 3), xlabels=[0, 1, 2])
    assert all(t.get_rotation() == 0 for t in ax.get_xticklabels())
    ax2 = heatmap(torch.rand(2, 3), xlabels=["the", "government", "cat"])
    assert all(t.get_rotation() == 60 for t in ax2.get_xticklabels())
    plt.close("all")


def test_a_loss_and_an_exact_match_get_separate_panels_with_their_labels():
    """09's live plot drew the exact match on the loss axis, labelled "loss"."""
    live = LiveLoss(total=10, title="toy", plot=False, disable=True)
    for step in range(10):
        live.update(loss=2.0 - 0.1 * step)
        if step % 5 == 4:
            live.log(exact_match=0.1 * step, token_accuracy=0.5, val_ppl=30.0 - step)
    assert live.layout() == {"loss": ["loss"], "accuracy": ["exact_match", "token_accuracy"], "perplexity": ["val_ppl"]}
    live.handle = type("Handle", (), {"update": lambda self, fig: None})()  # no IPython display here
    live.draw()
    assert [ax.get_ylabel() for ax in live.axes] == ["loss", "accuracy", "perplexity"]
    assert [len(ax.get_lines()) for ax in live.axes] == [1, 2, 1]
    assert live.axes[1].get_ylim() == (0, 1.02) and live.axes[2].get_yscale() == "log"
    plt.close(live.fig)
