"""The package's stacks compute exactly what PyTorch's nn.TransformerEncoder / nn.TransformerDecoder /
nn.Transformer compute once the weights are copied (batch_first=True, dropout 0, Pre-LN and Post-LN),
with padding masks and the causal mask -- in both copying directions."""

import pytest
import torch
import torch.nn as nn

from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.masks import causal_mask, padding_mask
from transformer_nb.core.stack import Decoder, Encoder
from transformer_nb.core.transformer import Transformer
from transformer_nb.interop import copy_from_torch, to_torch, torch_masks

D, H, FF = 32, 4, 48


ATOL = 2e-5


def cfg(n_layers: int, norm_first: bool = True, activation: str = "relu") -> TransformerConfig:
    return TransformerConfig(
        d_model=D, n_heads=H, d_ff=FF, n_layers=n_layers, norm_first=norm_first, activation=activation
    )


def _perturb(module, seed=0):
    """Random weights everywhere (LayerNorm γ = 1, β = 0 would hide a missing norm copy)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=g))
    return module


def _batch(seed=1):
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(3, 7, D, generator=g), torch.randn(3, 5, D, generator=g)
    return x, padding_mask([7, 4, 2], 7), y, padding_mask([5, 3, 1], 5)


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_equals_nn_transformer_encoder_with_padding(norm_first, activation):
    torch.manual_seed(0)
    ours = _perturb(Encoder(cfg(3, norm_first, activation))).eval()
    theirs = to_torch(ours).eval()
    x, keep, _, _ = _batch()
    with torch.no_grad():
        assert torch.allclose(ours(x, keep), theirs(x, src_key_padding_mask=~keep), atol=ATOL)
    assert (theirs.norm is not None) == norm_first


@pytest.mark.parametrize("norm_first", [True, False])
def test_causal_stack_equals_nn_transformer_encoder_with_causal_mask(norm_first):
    """The decoder-only (GPT) stack is torch's *encoder* with a causal mask -- no TransformerDecoder needed."""
    torch.manual_seed(0)
    model = _perturb(Transformer(vocab=50, d_model=D, n_heads=H, n_layers=2, d_ff=FF, norm_first=norm_first)).eval()
    theirs = to_torch(model.blocks).eval()
    x, keep, _, _ = _batch(2)
    with torch.no_grad():
        b = theirs(x, mask=~causal_mask(x.shape[1]), src_key_padding_mask=~keep, is_causal=True)
        assert torch.allclose(model.blocks(x, keep), b, atol=ATOL)


@pytest.mark.parametrize("norm_first", [True, False])
def test_decoder_equals_nn_transformer_decoder_with_causal_and_padding(norm_first):
    torch.manual_seed(0)
    ours = _perturb(Decoder(cfg(2, norm_first))).eval()
    theirs = to_torch(ours).eval()
    memory, src_keep, y, tgt_keep = _batch(3)
    kw = torch_masks(src_keep, tgt_keep)
    del kw["src_key_padding_mask"]  # the decoder alone has no source self-attention
    with torch.no_grad():
        assert torch.allclose(ours(y, memory, tgt_keep, src_keep), theirs(y, memory, **kw), atol=ATOL)


@pytest.mark.parametrize("norm_first", [True, False])
def test_copy_from_torch_stacks(norm_first):
    torch.manual_seed(0)
    enc_layer = nn.TransformerEncoderLayer(D, H, FF, 0.0, batch_first=True, norm_first=norm_first)
    dec_layer = nn.TransformerDecoderLayer(D, H, FF, 0.0, batch_first=True, norm_first=norm_first)
    t_enc = _perturb(
        nn.TransformerEncoder(enc_layer, 2, norm=nn.LayerNorm(D) if norm_first else None, enable_nested_tensor=False), 5
    ).eval()
    t_dec = _perturb(nn.TransformerDecoder(dec_layer, 2, norm=nn.LayerNorm(D) if norm_first else None), 6).eval()
    enc = copy_from_torch(Encoder(cfg(2, norm_first)), t_enc).eval()
    dec = copy_from_torch(Decoder(cfg(2, norm_first)), t_dec).eval()
    x, src_keep, y, tgt_keep = _batch(4)
    kw = dict(tgt_mask=~causal_mask(5), tgt_key_padding_mask=~tgt_keep, memory_key_padding_mask=~src_keep)
    with torch.no_grad():
        mem_t, mem = t_enc(x, src_key_padding_mask=~src_keep), enc(x, src_keep)
        out_t, out = t_dec(y, mem_t, tgt_is_causal=True, **kw), dec(y, mem, tgt_keep, src_keep)
    assert torch.allclose(mem, mem_t, atol=ATOL) and torch.allclose(out, out_t, atol=ATOL)


def test_whole_pre_ln_encoder_decoder_equals_nn_transformer():
    torch.manual_seed(0)
    options = dict(pad_id=0, tie_output=False, share_embeddings=False, scale_embeddings=True, output_bias=True)
    shape = dict(vocab=30, d_model=D, n_heads=H, n_layers=2, n_dec_layers=3, d_ff=FF, norm_first=True)
    model = _perturb(Transformer(arch="encoder-decoder", **shape, **options)).eval()
    theirs = to_torch(model).eval()
    assert isinstance(theirs, nn.Transformer)
    src, tgt = torch.randint(1, 30, (3, 7)), torch.randint(1, 30, (3, 5))
    _, src_keep, _, tgt_keep = _batch()
    with torch.no_grad():
        x, y = model._embed(src), model._embed(tgt, target=True)
        ours = model.decoder(y, model.blocks(x, src_keep), tgt_keep, src_keep)
        out = theirs(x, y, **torch_masks(src_keep, tgt_keep))
        logits = model(src, keep=src_keep, tgt=tgt, tgt_keep=tgt_keep)[0]
    assert torch.allclose(ours, out, atol=ATOL)
    # the whole model is the embeddings, nn.Transformer's two stacks and the output layer
    assert torch.allclose(logits, model.head.proj(out), atol=ATOL)


def test_dropped_norm_copy_would_be_caught():
    """The comparison is sensitive: perturbing one copied LayerNorm breaks equality."""
    torch.manual_seed(0)
    ours = _perturb(Encoder(cfg(2))).eval()
    theirs = to_torch(ours).eval()
    with torch.no_grad():
        theirs.layers[1].norm2.bias.add_(0.5)
    x, keep, _, _ = _batch()
    with torch.no_grad():
        assert not torch.allclose(ours(x, keep), theirs(x, src_key_padding_mask=~keep), atol=ATOL)
