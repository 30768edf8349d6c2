"""The architecture-variant widget recomputes headlessly when a control changes: the masks it shows are
the ones the models used, and padded keys get exactly zero weight."""

import torch

from transformer_nb.core.transformer import Transformer
from transformer_nb.widgets.models import VariantWidget, build_variant


def test_encoder_decoder_shows_three_sublayers_with_their_masks():
    w = VariantWidget()
    w.refresh()
    assert w.last["sublayers"] == [
        "blocks.layers.0.self_attn",  # the encoder stack of the one Transformer
        "decoder.layers.0.self_attn",
        "decoder.layers.0.cross_attn",
    ]
    assert [w.last["labels"][n] for n in w.last["sublayers"]] == ["padding", "causal + padding", "padding"]
    cross = w.last["weights"]["decoder.layers.0.cross_attn"]
    assert cross.shape == (5, 7)  # target 4 + 1 pad, source 5 + 2 pad
    assert torch.equal(cross[:, 5:], torch.zeros(5, 2))
    assert w.last["max_weight_on_padding"] == 0.0 and w.fig is not None
    assert not w.controls["tgt_len"].disabled


def test_controls_switch_variant_lengths_layer_and_head():
    w = VariantWidget()
    w.refresh()
    w.controls["variant"].value = "decoder-only"
    assert w.last["sublayers"] == ["blocks.layers.0.self_attn"]
    assert w.last["labels"]["blocks.layers.0.self_attn"] == "causal + padding"
    assert w.controls["tgt_len"].disabled
    m = w.last["masks"]["blocks.layers.0.self_attn"]
    assert not m.triu(1).any()
    w.controls["src_pad"].value = 0
    assert w.last["labels"]["blocks.layers.0.self_attn"] == "causal"
    w.controls["variant"].value = "encoder-only"
    assert w.last["labels"]["blocks.layers.0.self_attn"] == "none"
    w.controls["src_pad"].value = 3
    w.controls["src_len"].value = 2
    assert w.last["masks"]["blocks.layers.0.self_attn"].shape == (5, 5)
    assert w.last["labels"]["blocks.layers.0.self_attn"] == "padding"
    w.controls["layer"].value = 2
    assert w.last["sublayers"] == ["blocks.layers.1.self_attn"]
    mean = w.last["weights"]["blocks.layers.1.self_attn"]
    w.controls["head"].value = 2
    one = w.last["weights"]["blocks.layers.1.self_attn"]
    assert one.shape == mean.shape and not torch.allclose(one, mean)
    assert torch.allclose(one.sum(-1), torch.ones(5), atol=1e-6)
    assert w.updates >= 8


def test_every_variant_is_the_one_transformer():
    for variant, arch in (
        ("encoder-only", "encoder"),
        ("decoder-only", "decoder"),
        ("encoder-decoder", "encoder-decoder"),
    ):
        m = build_variant(variant)
        assert type(m) is Transformer and m.cfg.arch == arch and not m.training
        assert (m.decoder is not None) == (arch == "encoder-decoder")


def test_build_variant_rejects_unknown_names():
    try:
        build_variant("bert")
    except ValueError as err:
        assert "encoder-only" in str(err)
    else:
        raise AssertionError("no error")
