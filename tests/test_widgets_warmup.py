"""Notebook 00's softmax widget recomputes when the scale slider moves."""

import math

from transformer_nb.widgets.warmup import SoftmaxTemperature


def test_larger_scale_hardens_the_softmax():
    w = SoftmaxTemperature()
    w.refresh()
    soft = w.last
    assert abs(float(soft["weights"].sum()) - 1) < 1e-6 and w.fig is not None
    w.controls["scale"].value = 30.0
    hard = w.last
    assert abs(hard["scale"] - 30.0) < 1e-9 and hard["entropy"] < soft["entropy"] and hard["max_weight"] > 0.9
    w.controls["n"].value = 32
    assert len(w.last["weights"]) == 32 and math.isclose(w.last["max_entropy"], math.log(32))
