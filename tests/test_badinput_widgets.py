"""Bad input to the widgets: a starting value the controls cannot show is refused by name (``Widget``'s
``start``), instead of traitlets' bare "Invalid selection: value not found" or a slider silently clamping it;
the generic rule is proved control by control in ``test_widget_base.py`` (``tests/badinput.py``)."""

import torch
from badinput import Case, parametrize

from transformer_nb.widgets import (
    attention,
    base,
    block,
    catalog,
    masks,
    models,
    multihead,
    params,
    positional,
    reversal,
    rope,
    timing,
)

W = "transformer_nb.widgets."

CASES = {
    "ScalingWidget_refuses_a_d_k_the_slider_does_not_offer": Case(
        W + "attention.ScalingWidget", lambda: attention.ScalingWidget(d_k=100), ValueError, "d_k must be one of"
    ),
    "ScalingWidget_refuses_n_keys_the_slider_would_clamp": Case(
        W + "attention.ScalingWidget", lambda: attention.ScalingWidget(n_keys=0), ValueError, "lie in [2, 32]"
    ),
    "softmax_stats_refuses_an_empty_tensor": Case(
        W + "attention.softmax_stats", lambda: attention.softmax_stats(torch.zeros(0)), TypeError, "non-empty float"
    ),
    "Widget_refuses_a_str_for_an_int_slider": Case(
        W + "base.Widget", lambda: base.Widget({"n": "5"}, n=base.W.IntSlider()), TypeError, "n must be an int"
    ),
    "DepthWidget_refuses_a_str_d_model": Case(
        W + "block.DepthWidget", lambda: block.DepthWidget(d_model="64"), ValueError, "d_model must be one of"
    ),
    "build_needs_the_model_of_a_trained_widget": Case(
        W + "catalog.build", lambda: catalog.build(catalog.WIDGETS[-1]), ValueError, "needs a trained lm model"
    ),
    "make_batch_refuses_an_unknown_side": Case(
        W + "masks.make_batch", lambda: masks.make_batch([2], "middle"), ValueError, "pad_side must be"
    ),
    "MaskExplorer_refuses_no_lengths": Case(
        W + "masks.MaskExplorer", lambda: masks.MaskExplorer(lengths=()), ValueError, "lengths must be a non-empty"
    ),
    "MaskExplorer_refuses_a_length_beyond_the_slider": Case(
        W + "masks.MaskExplorer", lambda: masks.MaskExplorer(lengths=(5, 9)), ValueError, "len_2 must lie in [0, 8]"
    ),
    "HeadsWidget_refuses_a_sentence_that_is_not_a_str": Case(
        W + "multihead.HeadsWidget", lambda: multihead.HeadsWidget(sentence=3), TypeError, "sentence must be a str"
    ),
    "AlibiExplorer_refuses_0_heads": Case(
        W + "positional.AlibiExplorer", lambda: positional.AlibiExplorer(n_heads=0), ValueError, "n_heads must lie in"
    ),
    "SinusoidFingerprint_refuses_a_position_beyond_the_table": Case(
        W + "positional.SinusoidFingerprint",
        lambda: positional.SinusoidFingerprint(position=500),
        ValueError,
        "position must lie in [0, 127]",
    ),
    "ReversalWidget_refuses_a_model_that_is_not_a_module": Case(
        W + "reversal.ReversalWidget", lambda: reversal.ReversalWidget("model"), TypeError, "model must be"
    ),
    "RotatePair_refuses_a_float_position": Case(
        W + "rope.RotatePair", lambda: rope.RotatePair(m=1.5), TypeError, "m must be an int"
    ),
    "timing_main_refuses_an_unknown_widget": Case(
        W + "timing.main", lambda: timing.main(["NoSuchWidget"]), SystemExit, "unknown widget(s) ['NoSuchWidget']"
    ),
    "VariantWidget_refuses_an_unknown_variant": Case(
        W + "models.VariantWidget", lambda: models.VariantWidget("gpt"), ValueError, "variant must be one of"
    ),
    "ParamCalculator_refuses_an_unknown_preset": Case(
        W + "params.ParamCalculator", lambda: params.ParamCalculator("gpt5"), ValueError, "preset must be"
    ),
}


@parametrize(CASES)
def test_widgets_refuse_bad_input_by_name(name):
    CASES[name].check()
