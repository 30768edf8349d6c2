"""Bad input to the plotting helpers: a clear error naming the argument (``tests/badinput.py``)."""

import torch
from badinput import Case, parametrize

from transformer_nb import plotting

P = "transformer_nb.plotting."

CASES = {
    "heatmap_refuses_a_string_matrix": Case(P + "heatmap", lambda: plotting.heatmap("abc"), TypeError, "matrix must"),
    "heatmap_refuses_a_3d_tensor": Case(
        P + "heatmap", lambda: plotting.heatmap(torch.zeros(2, 2, 2)), ValueError, "2-D matrix"
    ),
    "heatmaps_refuses_an_empty_list": Case(P + "heatmaps", lambda: plotting.heatmaps([]), ValueError, "matrices must"),
    "heatmaps_refuses_0_columns": Case(
        P + "heatmaps", lambda: plotting.heatmaps([torch.eye(2)], ncols=0), ValueError, "ncols must be >= 1"
    ),
    "plot_curves_refuses_a_bare_number_per_label": Case(
        P + "plot_curves", lambda: plotting.plot_curves({"loss": 3}), TypeError, "curves must be a dict"
    ),
    "LiveLoss_refuses_a_str_total": Case(P + "LiveLoss", lambda: plotting.LiveLoss(total="10"), TypeError, "total"),
    "LiveLoss_refuses_a_negative_total": Case(P + "LiveLoss", lambda: plotting.LiveLoss(total=-5), ValueError, "total"),
    "LiveLoss_refuses_every_0": Case(
        P + "LiveLoss", lambda: plotting.LiveLoss(total=10, every=0), ValueError, "every must be >= 1"
    ),
}


@parametrize(CASES)
def test_plotting_refuses_bad_input_by_name(name):
    CASES[name].check()


def test_heatmap_draws_nested_lists_like_a_tensor():
    """A list of lists is a matrix too: it used to fail with "'list' object has no attribute 'ndim'"."""
    ax = plotting.heatmap([[0.0, 1.0], [1.0, 0.0]], colorbar=False)
    assert ax.images[0].get_array().shape == (2, 2)
