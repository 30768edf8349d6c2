"""Notebook 05's widget, driven headlessly: the score of a rotated pair depends only on n - m."""

import math

import torch

from transformer_nb.widgets.rope import RotatePair


def test_score_depends_only_on_the_offset():
    w = RotatePair()
    w.refresh()
    w.controls["m"].value, w.controls["n"].value = 5, 12
    first = w.last["score"]
    w.controls["m"].value, w.controls["n"].value = 10, 17
    assert w.last["offset"] == 7
    assert math.isclose(w.last["score"], first, abs_tol=1e-12)
    assert math.isclose(w.last["score"], w.last["score_at_offset"], abs_tol=1e-12)
    w.controls["n"].value = 18
    assert not math.isclose(w.last["score"], first, abs_tol=1e-6)
    assert w.fig is not None


def test_pair_slider_changes_the_frequency_and_grid_is_toeplitz():
    w = RotatePair(d=8)
    w.refresh()
    w.controls["pair"].value = 0
    assert w.last["theta"] == 1.0
    grid = w.last["grid"]
    for off in range(-5, 6):
        diag = grid.diagonal(off)
        assert torch.allclose(diag, diag[:1].expand_as(diag), atol=1e-12)
    rot = w.last["q_rot"]
    assert math.isclose(rot.norm().item(), w.q.norm().item(), rel_tol=1e-12)  # rotation keeps length


def test_shifting_both_positions_keeps_the_score():
    """The "shift both by s" slider: positions m + s and n + s, the same score for every s."""
    w = RotatePair(m=3, n=11)
    w.refresh()
    first = w.last["score"]
    for s in (1, 7, 29, 40):
        w.controls["shift"].value = s
        assert (w.last["pos_q"], w.last["pos_k"]) == (3 + s, 11 + s) and w.last["offset"] == 8
        assert math.isclose(w.last["score"], first, abs_tol=1e-12)
    star = w.fig.axes[1].lines[1]
    assert list(star.get_xdata()) == [51] and list(star.get_ydata()) == [43]  # the figure shows it
    w.controls["n"].value = 12
    assert not math.isclose(w.last["score"], first, abs_tol=1e-6)
