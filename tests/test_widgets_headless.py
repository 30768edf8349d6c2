"""Each widget of notebooks 00-08, driven headlessly (no kernel, no browser): moving a control recomputes
``last`` and redraws ``fig``, and what it computes is what the chapter says."""

import asyncio
import math

import pytest
import torch

from transformer_nb.core.masks import causal_mask
from transformer_nb.core.positional import alibi_slopes, sinusoidal_encoding
from transformer_nb.core.transformer import Transformer
from transformer_nb.params import PRESETS, param_breakdown
from transformer_nb.widgets import attention, block, masks, models, multihead, params, positional, rope, warmup


def _w(cls, **kw):
    w = cls(**kw)
    w.refresh()
    assert w.fig is not None and w.error is None
    return w


def test_softmax_temperature_hardens_with_scale():
    w = _w(warmup.SoftmaxTemperature)
    soft = w.last
    w.controls["scale"].value = 30.0
    assert w.last["entropy"] < soft["entropy"] and w.last["max_weight"] > 0.9
    w.controls["n"].value = 32
    assert len(w.last["weights"]) == 32 and math.isclose(w.last["max_entropy"], math.log(32))


def test_scaling_widget_toggle_divides_by_sqrt_d_k_and_unscaled_saturates():
    w = _w(attention.ScalingWidget, d_k=64, scaled=True, n_keys=10)
    assert math.isclose(float(w.last["weights"].sum()), 1.0, abs_tol=1e-12)
    w.controls["d_k"].value = 1024
    scaled = dict(w.last)
    w.controls["scaled"].value = False
    raw = w.last
    torch.testing.assert_close(scaled["logits"], raw["logits"] / 32)  # the same vectors, only divided
    assert raw["max_weight"] > scaled["max_weight"] and raw["jacobian_norm"] < scaled["jacobian_norm"]
    maxes = []
    for seed in range(12):
        w.controls["seed"].value = seed
        maxes.append(w.last["max_weight"])
    assert sum(maxes) / len(maxes) > 0.85  # unscaled d_k = 1024: near one-hot on average
    w.controls["n_keys"].value = 25
    assert [b.get_height() for b in w.fig.axes[1].patches[:25]] == w.last["weights"].tolist()  # the figure shows it
    assert sum(b.get_visible() for b in w.fig.axes[1].patches) == 25


@pytest.mark.parametrize("p", [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
def test_softmax_stats_match_autograd(p):
    z = torch.tensor(p, dtype=torch.float64).clamp_min(1e-9).log()
    st = attention.softmax_stats(z)
    jac = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, -1), z)
    assert math.isclose(float(st["jacobian_norm"]), float(jac.norm()), abs_tol=1e-6)
    probs = torch.softmax(z, -1)
    assert math.isclose(float(st["entropy"]), float(-(probs * probs.log()).sum()), abs_tol=1e-6)


def test_mask_explorer_padding_causal_and_empty_rows():
    w = _w(masks.MaskExplorer)
    last = w.last
    assert last["lengths"] == [5, 3, 7] and last["mask"].shape == (3, 7, 7)
    assert torch.equal(last["mask"][2], causal_mask(7)) and not last["mask"][1][:, 3:].any()
    torch.testing.assert_close(last["row_sums"], torch.ones(3, 7))
    w.controls["len_3"].value = 8
    assert w.last["T"] == 8 and w.last["keep"].sum(1).tolist() == [5, 3, 8]
    w.controls["pad_side"].value = "left"
    assert w.last["keep"][1].tolist() == [False] * 5 + [True] * 3
    assert w.last["empty_rows"][1].tolist() == [True] * 5 + [False] * 3  # left padding + causal
    assert (w.last["weights"][w.last["empty_rows"]] == 0).all() and not w.last["has_nan"]  # 0, not NaN
    w.controls["causal"].value = False
    assert w.last["mask"][2].all() and w.last["n_empty_rows"] == 0
    assert masks.make_batch([2, 0], "left").tolist() == [[1, 2], [0, 0]]


def test_heads_widget_heads_layer_sentence_order_and_sharpness():
    w = _w(multihead.HeadsWidget)
    assert w.last["tokens"] == ["The", "cat", "sat", "on", "the", "comfortable", "mat"]
    assert torch.allclose(w.last["weights"].sum(-1), torch.ones(4, 7), atol=1e-6)
    w.controls["n_heads"].value = 8
    w.controls["layer"].value = 2
    w.controls["sentence"].value = "a b c"
    assert w.last["weights"].shape == (8, 3, 3) and len(w.fig.axes) >= 8
    before = w.last["weights"].clone()
    w.controls["order"].value = "reversed"
    assert w.last["tokens"] == ["c", "b", "a"]  # no positions: the pattern reverses exactly
    assert torch.allclose(w.last["weights"], before.flip(-1).flip(-2), atol=1e-6)
    flat = sum(w.last["entropy"])
    w.controls["sharpness"].value = 8.0
    assert sum(w.last["entropy"]) < flat
    w.controls["sentence"].value = "the the the the the"
    assert torch.allclose(w.last["weights"], torch.full((8, 5, 5), 0.2), atol=1e-6)
    w.controls["sentence"].value = " ".join(f"w{i}" for i in range(30))
    assert len(w.last["tokens"]) == 16 and w.last["truncated"]
    w.controls["sentence"].value = "   "
    assert "type a sentence" in w.last["message"] and w.fig is not None


def test_positional_widgets_follow_their_sliders():
    w = _w(positional.SinusoidFingerprint)
    w.controls["position"].value, w.controls["pair"].value = 37, 2
    omega = 10000 ** (-4 / 64)
    assert torch.allclose(w.last["fingerprint"], sinusoidal_encoding(128, 64)[37])
    assert math.isclose(w.last["omega"], omega, rel_tol=1e-12)
    assert math.isclose(w.last["pair_values"][0], math.sin(37 * omega), abs_tol=1e-6)
    assert [b.get_height() for b in w.fig.axes[2].patches] == w.last["fingerprint"].tolist()
    w = _w(positional.AlibiExplorer)
    w.controls["n_heads"].value = 12
    assert torch.equal(w.last["slopes"], alibi_slopes(12)) and w.last["interpolated"] == [False] * 8 + [True] * 4
    weights = w.last["weights"]
    assert torch.allclose(weights.sum(-1), torch.ones(12, dtype=torch.float64))
    assert (weights[:, 1:] > weights[:, :-1]).all()  # recency: nearer keys get more weight


def test_rotate_pair_score_depends_only_on_the_offset():
    w = _w(rope.RotatePair, m=3, n=11)
    first = w.last["score"]
    for s in (1, 7, 40):
        w.controls["shift"].value = s
        assert (w.last["pos_q"], w.last["pos_k"], w.last["offset"]) == (3 + s, 11 + s, 8)
        assert math.isclose(w.last["score"], first, abs_tol=1e-12)
    assert list(w.fig.axes[1].lines[1].get_xdata()) == [51]  # the figure shows it
    w.controls["m"].value, w.controls["n"].value = 10, 18
    assert math.isclose(w.last["score"], w.last["score_at_offset"], abs_tol=1e-12)
    w.controls["n"].value = 19
    assert not math.isclose(w.last["score"], first, abs_tol=1e-6)
    w.controls["pair"].value = 0
    assert w.last["theta"] == 1.0
    for off in range(-5, 6):
        diag = w.last["grid"].diagonal(off)
        assert torch.allclose(diag, diag[:1].expand_as(diag), atol=1e-12)


@pytest.mark.usefixtures("one_thread")  # tests/conftest.py
def test_depth_widget_placement_residual_depth_and_the_passes_it_computes_ahead():
    w = _w(block.DepthWidget, depth=12)
    assert len(w.last["grad"]) == 12 and len(w.last["diversity"]) == 13
    assert w.last["ratio"] > 1  # Post-LN: larger gradients near the output
    w.controls["placement"].value = "Pre-LN"
    assert w.last["norm_first"] and w.last["ratio"] < 1
    w.controls["residual"].value = False
    assert w.last["diversity"][-1] < 1e-4

    async def idle_then_step():  # in a running event loop (a kernel's) the passes one step away are done when idle
        w.controls["d_model"].value = 32
        [await asyncio.sleep(0) for _ in range(9)]
        misses = block._grad_norms.cache_info().misses
        w.controls["depth"].value = 14
        return block._grad_norms.cache_info().misses - misses

    assert asyncio.run(idle_then_step()) == 0 and len(w.last["rms"]) == 15 and w.last["d_model"] == 32


def test_param_calculator_presets_controls_and_impossible_models():
    w = _w(params.ParamCalculator)
    assert w.last["breakdown"]["total"] == w.last["numel"] == 124_439_808
    for name in ("bert-base", "transformer-base", "t5-base", "llama2-70b"):
        w.controls["preset"].value = name
        assert w.last["breakdown"] == param_breakdown(PRESETS[name]) and w.last["numel"] == w.last["breakdown"]["total"]
        assert w.last["published"] == PRESETS[name].published
    gqa = w.last["breakdown"]["attention"]
    w.controls["n_kv_heads"].value = 64
    assert w.last["breakdown"]["attention"] > gqa and w.last["published"] is None
    w.controls["n_heads"].value = 60
    assert "must divide d_model" in w.last["error"] and w.fig is not None
    w.controls["n_heads"].value = 64
    before = w.last["breakdown"]["total"]
    w.controls["tie"].value = True
    assert before - w.last["breakdown"]["total"] == 32000 * 8192
    w.controls["ffn_ratio"].value = 4.0
    assert w.last["d_ff"] == 4 * 8192


def test_variant_widget_shows_the_masks_the_models_used():
    w = _w(models.VariantWidget)
    names = ["blocks.layers.0.self_attn", "decoder.layers.0.self_attn", "decoder.layers.0.cross_attn"]
    assert w.last["sublayers"] == names
    assert [w.last["labels"][n] for n in names] == ["padding", "causal + padding", "padding"]
    cross = w.last["weights"][names[2]]
    assert cross.shape == (5, 7) and torch.equal(cross[:, 5:], torch.zeros(5, 2))  # padded keys: exactly 0
    assert w.last["max_weight_on_padding"] == 0.0
    assert all(type(m) is Transformer and not m.training for m in w.models.values())
    w.controls["variant"].value = "decoder-only"
    enc = names[0]
    assert w.last["sublayers"] == [enc] and w.controls["tgt_len"].disabled
    w.controls["src_pad"].value = 0
    assert w.last["labels"][enc] == "causal" and not w.last["masks"][enc].triu(1).any()
    w.controls["variant"].value = "encoder-only"
    assert w.last["labels"][enc] == "none"
    w.controls["src_pad"].value, w.controls["src_len"].value = 3, 2
    assert w.last["masks"][enc].shape == (5, 5) and w.last["labels"][enc] == "padding"
    w.controls["layer"].value = 2
    mean = w.last["weights"]["blocks.layers.1.self_attn"]
    w.controls["head"].value = 2
    one = w.last["weights"]["blocks.layers.1.self_attn"]
    assert not torch.allclose(one, mean) and torch.allclose(one.sum(-1), torch.ones(5), atol=1e-6)
