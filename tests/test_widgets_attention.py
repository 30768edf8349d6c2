"""The scaling widget of notebook 01 recomputes headlessly when its controls change."""

import math

import pytest
import torch

from transformer_nb.widgets.attention import D_K_CHOICES, ScalingWidget, softmax_stats


def test_first_draw():
    w = ScalingWidget(d_k=64, scaled=True, n_keys=10)
    w.refresh()
    assert w.fig is not None and w.last["d_k"] == 64 and w.last["scaled"] is True
    assert w.last["weights"].shape == (10,)
    assert math.isclose(float(w.last["weights"].sum()), 1.0, abs_tol=1e-12)
    assert math.isclose(w.last["max_entropy"], math.log(10))


def test_d_k_slider_and_toggle_saturate_the_softmax():
    w = ScalingWidget(d_k=64, scaled=True, n_keys=10)
    w.refresh()
    w.controls["d_k"].value = 1024
    scaled = dict(w.last)
    assert scaled["d_k"] == 1024 and w.updates == 2
    w.controls["scaled"].value = False
    raw = w.last
    assert raw["scaled"] is False and w.updates == 3 and w.fig is not None
    # the same vectors: the toggle only divides by sqrt(d_k)
    torch.testing.assert_close(raw["raw_scores"], scaled["raw_scores"])
    torch.testing.assert_close(scaled["logits"], raw["logits"] / 32)
    assert raw["max_weight"] > scaled["max_weight"] and raw["entropy"] < scaled["entropy"]
    assert raw["jacobian_norm"] < scaled["jacobian_norm"]


def test_unscaled_large_d_k_is_near_one_hot_on_average():
    w = ScalingWidget(d_k=1024, scaled=False, n_keys=10)
    w.refresh()
    maxes = [w.last["max_weight"]]
    for seed in range(1, 12):
        w.controls["seed"].value = seed
        maxes.append(w.last["max_weight"])
    assert sum(maxes) / len(maxes) > 0.85


def test_keys_slider_changes_the_bars():
    w = ScalingWidget()
    w.refresh()
    w.controls["n_keys"].value = 25
    assert w.last["weights"].shape == (25,) and sum(b.get_visible() for b in w.fig.axes[1].patches) == 25
    heights = [b.get_height() for b in w.fig.axes[1].patches[:25]]
    assert heights == w.last["weights"].tolist()  # the figure shows this state


def test_d_k_choices_span_4_to_1024():
    assert D_K_CHOICES[0] == 4 and D_K_CHOICES[-1] == 1024


@pytest.mark.parametrize("p", [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
def test_softmax_stats_match_autograd(p):
    z = torch.tensor(p, dtype=torch.float64).clamp_min(1e-9).log()
    st = softmax_stats(z)
    jac = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, -1), z)
    assert math.isclose(float(st["jacobian_norm"]), float(jac.norm()), abs_tol=1e-6)
    probs = torch.softmax(z, -1)
    assert math.isclose(float(st["entropy"]), float(-(probs * probs.log()).sum()), abs_tol=1e-6)
