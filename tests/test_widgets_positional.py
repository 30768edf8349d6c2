"""Notebook 04's widgets, driven headlessly: moving a slider recomputes `last` and redraws `fig`."""

import math

import torch

from transformer_nb.core.positional import alibi_slopes, sinusoidal_encoding
from transformer_nb.widgets.positional import AlibiExplorer, SinusoidFingerprint


def test_fingerprint_follows_the_position_and_pair_sliders():
    w = SinusoidFingerprint(n_positions=64, d_model=16)
    w.refresh()
    w.controls["position"].value = 37
    w.controls["pair"].value = 2
    assert w.last["position"] == 37 and w.last["pair"] == 2
    assert torch.allclose(w.last["fingerprint"], sinusoidal_encoding(64, 16)[37])
    omega = 10000 ** (-4 / 16)
    assert math.isclose(w.last["omega"], omega, rel_tol=1e-12)
    assert math.isclose(w.last["wavelength"], 2 * math.pi / omega, rel_tol=1e-12)
    assert math.isclose(w.last["pair_values"][0], math.sin(37 * omega), abs_tol=1e-6)
    assert math.isclose(w.last["pair_values"][1], math.cos(37 * omega), abs_tol=1e-6)
    assert w.fig.axes[2].get_title() == "fingerprint PE[37]"  # the figure shows this state
    assert [b.get_height() for b in w.fig.axes[2].patches] == w.last["fingerprint"].tolist()


def test_alibi_explorer_follows_the_head_slider():
    w = AlibiExplorer()
    w.refresh()
    w.controls["n_heads"].value = 12
    assert torch.equal(w.last["slopes"], alibi_slopes(12))
    assert w.last["interpolated"] == [False] * 8 + [True] * 4
    weights = w.last["weights"]
    assert weights.shape == (12, w.controls["query"].value + 1)
    assert torch.allclose(weights.sum(-1), torch.ones(12, dtype=torch.float64))
    assert (weights[:, 1:] > weights[:, :-1]).all()  # recency: nearer keys get more weight
    assert w.fig is not None
