"""One Transformer, one configuration, one contract: ``forward(ids, targets=None) -> (logits, loss)``; the
three variants from one class; the model that is counted on meta is the model that trains."""

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from transformer_nb import lm_recipe
from transformer_nb.core.block import DecoderLayer, EncoderLayer
from transformer_nb.core.output_head import frequency_ranks
from transformer_nb.core.transformer import Transformer, TransformerConfig
from transformer_nb.params import build_transformer, numel

V = 40
SMALL = dict(vocab=V, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=16)


def test_logits_without_targets_and_with_them_the_cross_entropy_of_the_logits():
    m = Transformer(**SMALL, tie_output=False).eval()
    ids, y = torch.randint(0, V, (2, 7)), torch.randint(0, V, (2, 7))
    logits, loss = m(ids)
    assert logits.shape == (2, 7, V) and loss is None
    logits, loss = m(ids, y)
    assert torch.allclose(loss, F.cross_entropy(logits.flatten(0, 1), y.flatten()))
    assert torch.allclose(loss, m.nll(ids, y)[0])


def test_an_adaptive_head_gives_log_probabilities_and_its_loss():
    ids = torch.randint(0, V, (2, 7))
    m = Transformer(**SMALL, adaptive=True, cutoffs=(8, 20), ranks=frequency_ranks(ids, V)).eval()
    scores, none = m(ids)
    assert none is None and torch.allclose(scores.exp().sum(-1), torch.ones(2, 7), atol=1e-5)
    nothing, loss = m(ids[:, :-1], ids[:, 1:])
    assert nothing is None and torch.allclose(loss, -scores[:, :-1].gather(-1, ids[:, 1:, None]).mean(), atol=1e-5)


def test_one_class_gives_the_three_variants_from_the_same_blocks():
    ids = torch.randint(0, V, (1, 6))
    changed = ids.clone()
    changed[0, 4] = (changed[0, 4] + 1) % V
    for arch, causal in (("decoder", True), ("encoder", False)):
        m = Transformer(**SMALL, arch=arch).eval()
        assert {type(b) for b in m.blocks.layers} == {EncoderLayer} and m.decoder is None
        moved = (m(ids)[0] - m(changed)[0]).abs().amax(-1)[0] > 1e-5
        assert moved[:4].any().item() is not causal  # earlier positions see position 4 only without the causal mask
    assert numel(Transformer(**SMALL, arch="decoder")) == numel(Transformer(**SMALL, arch="encoder"))  # mask is free
    ed = Transformer(**SMALL, arch="encoder-decoder").eval()
    assert {type(b) for b in ed.decoder.layers} == {DecoderLayer}
    assert ed(ids, tgt=ids[:, :3])[0].shape == (1, 3, V)


def test_the_counted_model_is_the_trained_model():
    cfg = TransformerConfig(**SMALL, activation="gelu", positions="rope")
    assert type(build_transformer(cfg)) is Transformer and numel(build_transformer(cfg)) == numel(Transformer(cfg))


def test_the_configuration_is_frozen_and_validated_once():
    cfg = TransformerConfig(**SMALL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.d_model = 32
    with pytest.raises(ValueError, match="n_heads=3 must divide d_model=16"):
        cfg.with_(n_heads=3)
    with pytest.raises(ValueError, match="n_heads=3 must divide d_model=16"):
        Transformer(cfg, n_heads=3)


def test_the_recipe_is_a_transformer_with_its_activation_stated():
    m = lm_recipe.build_model("transformer", V, torch.arange(V), cutoffs=(8, 20), d_model=16, n_heads=2)
    assert type(m) is Transformer and m.cfg.activation == lm_recipe.RECIPE_MODEL.activation == "gelu"


def test_the_plain_the_padded_and_the_cached_pass_all_run_through_the_one_stack():
    m = Transformer(**SMALL).eval()
    seen = []
    m.blocks.register_forward_hook(lambda mod, args, out: seen.append(tuple(out.shape)))
    ids = torch.randint(0, V, (1, 5))
    with torch.no_grad():
        full = m.hidden(ids)[0]
        m.hidden(ids, keep=torch.ones(1, 5, dtype=torch.bool))
        state = m.init_state()
        parts = [m.hidden(ids[:, a:b], state)[0] for a, b in ((0, 3), (3, 4), (4, 5))]
    assert seen == [(1, 5, 16), (1, 5, 16), (1, 3, 16), (1, 1, 16), (1, 1, 16)]
    assert torch.allclose(torch.cat(parts, 1), full, atol=1e-5)
