"""Bad input to the widgets: a starting value the controls cannot show is refused by name, instead of
traitlets' bare "Invalid selection: value not found" or a slider silently clamping it (``tests/badinput.py``)."""

import ipywidgets
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
    warmup,
)

W = "transformer_nb.widgets."

CASES = {
    "ScalingWidget_refuses_a_d_k_the_slider_does_not_offer": Case(
        W + "attention.ScalingWidget", lambda: attention.ScalingWidget(d_k=100), ValueError, "d_k must be one of"
    ),
    "ScalingWidget_refuses_n_keys_the_slider_would_clamp": Case(
        W + "attention.ScalingWidget",
        lambda: attention.ScalingWidget(n_keys=0),
        ValueError,
        "n_keys must lie in [2, 32]",
    ),
    "ScalingWidget_refuses_a_str_for_scaled": Case(
        W + "attention.ScalingWidget", lambda: attention.ScalingWidget(scaled="no"), ValueError, "scaled must be one of"
    ),
    "softmax_stats_refuses_a_list": Case(
        W + "attention.softmax_stats", lambda: attention.softmax_stats([1.0, 2.0]), TypeError, "logits must be"
    ),
    "softmax_stats_refuses_an_empty_tensor": Case(
        W + "attention.softmax_stats", lambda: attention.softmax_stats(torch.zeros(0)), TypeError, "non-empty float"
    ),
    "check_choice_names_the_argument_and_its_choices": Case(
        W + "base.check_choice",
        lambda: base.check_choice("d_k", 100, (64, 128)),
        ValueError,
        "d_k must be one of 64, 128",
    ),
    "check_choice_refuses_true_for_the_choice_1": Case(
        W + "base.check_choice",
        lambda: base.check_choice("n", True, (1, 2)),
        ValueError,
        "n must be one of 1, 2, got True",
    ),
    "check_ints_refuses_a_float_seed": Case(
        W + "base.check_ints", lambda: base.check_ints(seed=1.5), TypeError, "seed must be an int"
    ),
    "Message_refuses_a_number": Case(W + "base.Message", lambda: base.Message(3), TypeError, "text must be a str"),
    "Widget_refuses_a_control_that_is_not_a_widget": Case(
        W + "base.Widget", lambda: base.Widget(x=3), TypeError, "controls must be ipywidgets"
    ),
    "error_message_refuses_a_str": Case(
        W + "base.error_message", lambda: base.error_message("oops"), TypeError, "err must be an exception"
    ),
    "DepthWidget_refuses_depth_the_slider_would_clamp": Case(
        W + "block.DepthWidget", lambda: block.DepthWidget(depth=0), ValueError, "depth must lie in [2, 48]"
    ),
    "DepthWidget_refuses_an_unknown_placement": Case(
        W + "block.DepthWidget", lambda: block.DepthWidget(placement="mid"), ValueError, "placement must be one of"
    ),
    "DepthWidget_refuses_a_str_d_model": Case(
        W + "block.DepthWidget", lambda: block.DepthWidget(d_model="64"), ValueError, "d_model must be one of"
    ),
    "Entry_refuses_a_notebook_that_is_not_a_str": Case(
        W + "catalog.Entry", lambda: catalog.Entry(3, "warmup", "SoftmaxTemperature"), TypeError, "notebook must be"
    ),
    "Entry_refuses_an_unknown_need": Case(
        W + "catalog.Entry", lambda: catalog.Entry("00", "warmup", "X", needs="gpt"), ValueError, "needs must be"
    ),
    "build_refuses_a_str_entry": Case(
        W + "catalog.build", lambda: catalog.build("warmup"), TypeError, "entry must be a catalog Entry"
    ),
    "MaskExplorer_refuses_no_lengths": Case(
        W + "masks.MaskExplorer", lambda: masks.MaskExplorer(lengths=()), ValueError, "lengths must be a non-empty"
    ),
    "MaskExplorer_refuses_a_negative_length": Case(
        W + "masks.MaskExplorer", lambda: masks.MaskExplorer(lengths=(5, -1)), ValueError, "lengths[1] must lie in"
    ),
    "MaskExplorer_refuses_an_unknown_pad_side": Case(
        W + "masks.MaskExplorer", lambda: masks.MaskExplorer(pad_side="middle"), ValueError, "pad_side must be one of"
    ),
    "MaskExplorer_refuses_d_k_0": Case(
        W + "masks.MaskExplorer", lambda: masks.MaskExplorer(d_k=0), ValueError, "d_k must be >= 1"
    ),
    "AttentionStack_refuses_a_nan_sharpness": Case(
        W + "multihead.AttentionStack",
        lambda: multihead.AttentionStack(32, 4, 2, sharpness=float("nan")),
        ValueError,
        "sharpness must be a finite positive",
    ),
    "HeadsWidget_refuses_a_layer_beyond_n_layers": Case(
        W + "multihead.HeadsWidget", lambda: multihead.HeadsWidget(layer=5), ValueError, "layer must be one of"
    ),
    "HeadsWidget_refuses_a_sentence_that_is_not_a_str": Case(
        W + "multihead.HeadsWidget", lambda: multihead.HeadsWidget(sentence=3), TypeError, "sentence must be a str"
    ),
    "reorder_refuses_an_unknown_order": Case(
        W + "multihead.reorder", lambda: multihead.reorder(["a", "b"], "sideways"), ValueError, "order must be one of"
    ),
    "tokenize_refuses_a_number": Case(
        W + "multihead.tokenize", lambda: multihead.tokenize(3), TypeError, "sentence must be a str"
    ),
    "word_embedding_refuses_d_model_0": Case(
        W + "multihead.word_embedding", lambda: multihead.word_embedding("a", 0), ValueError, "d_model must be >= 1"
    ),
    "word_embedding_refuses_a_number_for_word": Case(
        W + "multihead.word_embedding", lambda: multihead.word_embedding(3, 8), TypeError, "word must be a str"
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
    "max_source_len_refuses_a_str": Case(
        W + "reversal.max_source_len", lambda: reversal.max_source_len("model"), TypeError, "model must be"
    ),
    "RotatePair_refuses_a_three_number_query": Case(
        W + "rope.RotatePair", lambda: rope.RotatePair(q=(1, 2, 3)), ValueError, "q must be two finite numbers"
    ),
    "RotatePair_refuses_m_beyond_max_pos": Case(
        W + "rope.RotatePair", lambda: rope.RotatePair(m=50), ValueError, "m must lie in [0, 40]"
    ),
    "timing_main_refuses_an_unknown_widget": Case(
        W + "timing.main", lambda: timing.main(["NoSuchWidget"]), SystemExit, "no widget named NoSuchWidget"
    ),
    "timing_main_refuses_0_repeats": Case(
        W + "timing.main", lambda: timing.main(["--repeats", "0"]), SystemExit, "--repeats must be >= 1"
    ),
    "neighbours_refuses_a_str": Case(
        W + "timing.neighbours", lambda: timing.neighbours("x"), TypeError, "control must be an ipywidgets"
    ),
    "time_widget_refuses_0_repeats": Case(
        W + "timing.time_widget",
        lambda: timing.time_widget(warmup.SoftmaxTemperature(), repeats=0),
        ValueError,
        "repeats must be >= 1",
    ),
    "SoftmaxTemperature_refuses_a_str_seed": Case(
        W + "warmup.SoftmaxTemperature", lambda: warmup.SoftmaxTemperature(seed="x"), TypeError, "seed must be an int"
    ),
    "VariantWidget_refuses_an_unknown_variant": Case(
        W + "models.VariantWidget", lambda: models.VariantWidget("gpt"), ValueError, "variant must be one of"
    ),
    "build_variant_refuses_an_unknown_variant": Case(
        W + "models.build_variant", lambda: models.build_variant("gpt"), ValueError, "variant must be one of"
    ),
    "toy_batch_refuses_a_row_without_real_tokens": Case(
        W + "models.toy_batch", lambda: models.toy_batch(0, 2, 0), ValueError, "real must be >= 1"
    ),
    "ParamCalculator_refuses_an_unknown_preset": Case(
        W + "params.ParamCalculator", lambda: params.ParamCalculator("gpt5"), ValueError, "preset must be"
    ),
}


@parametrize(CASES)
def test_widgets_refuse_bad_input_by_name(name):
    CASES[name].check()


def test_neighbours_of_a_control_still_step_once():
    """The check in ``neighbours`` lets every control through: a slider steps by its step."""
    assert timing.neighbours(ipywidgets.IntSlider(value=3, min=0, max=10)) == [4, 3]
