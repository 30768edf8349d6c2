"""Bad input to the architecture variants fails at once with a message that says what was expected
and what arrived -- never a silent wrong answer or a crash deep inside attention."""

from functools import partial

import model_helpers
import pytest
import torch
import torch.nn as nn

from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.stack import Decoder, Encoder
from transformer_nb.core.transformer import Transformer
from transformer_nb.interop import copy_from_torch, to_torch, to_torch_attn_mask, torch_masks
from transformer_nb.objectives import describe_objective, lm_batch, lm_loss, mlm_batch, span_corruption
from transformer_nb.probes import capture_masks, mask_kind, trace_shapes

V = 20
encoder_decoder = partial(model_helpers.encoder_decoder, V)


def cfg(d_model=16, n_heads=2, d_ff=32, n_layers=1, **fields) -> TransformerConfig:
    return TransformerConfig(d_model=d_model, n_heads=n_heads, d_ff=d_ff, n_layers=n_layers, **fields)


@pytest.fixture(scope="module")
def seq2seq():
    torch.manual_seed(0)
    return encoder_decoder(max_len=16).eval()


def _raises(exc, words, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    for w in words:
        assert w in str(info.value), str(info.value)


def test_ids_out_of_vocab_range(seq2seq):
    _raises(ValueError, ["ids must lie in", "[0, 20)", "[1, 25]"], seq2seq.encode, torch.tensor([[1, 25, 3]]))
    memory = seq2seq.encode(torch.tensor([[1, 2, 3]]))
    _raises(ValueError, ["tgt must lie in", "[0, 20)", "[-1, 2]"], seq2seq.decode, torch.tensor([[-1, 2]]), memory)
    two = encoder_decoder(tgt_vocab=8)  # the target side has its own, smaller vocabulary
    _raises(ValueError, ["tgt must lie in [0, 8)", "[1, 12]"], two.decode, torch.tensor([[1, 12]]), memory)
    _raises(ValueError, ["tgt must lie in [0, 8)"], two, torch.tensor([[1, 12]]), tgt=torch.tensor([[1, 12]]))
    _raises(
        ValueError, ["[0, 20)", "-1"], Transformer(vocab=V, d_model=32, n_layers=1, d_ff=64), torch.tensor([[-1, 2]])
    )


def test_ids_not_two_dimensional(seq2seq):
    _raises(ValueError, ["(B, T)", "(3,)"], seq2seq.encode, torch.tensor([1, 2, 3]))
    encoder_only = Transformer(vocab=V, d_model=32, n_heads=4, n_layers=1, d_ff=64, arch="encoder")
    _raises(ValueError, ["(B, T)", "(1, 2, 3)"], encoder_only, torch.ones(1, 2, 3, dtype=torch.long))


def test_ids_of_the_wrong_type(seq2seq):
    _raises(TypeError, ["integer tensor of word ids", "torch.float32"], seq2seq.encode, torch.tensor([[1.0, 2.0]]))
    _raises(TypeError, ["integer tensor", "list"], seq2seq.encode, [[1, 2]])
    memory = seq2seq.encode(torch.tensor([[1, 2]]))
    _raises(
        TypeError, ["tgt must be an integer tensor", "torch.float32"], seq2seq.decode, torch.tensor([[1.0]]), memory
    )
    _raises(ValueError, ["tgt must have shape (B, T)", "(2,)"], seq2seq.decode, torch.tensor([1, 2]), memory)


def test_memory_with_wrong_d_model(seq2seq):
    tgt = torch.tensor([[1, 2, 3]])
    _raises(ValueError, ["memory", "d_model=32", "(1, 4, 16)"], seq2seq.decode, tgt, torch.randn(1, 4, 16))
    _raises(ValueError, ["memory", "d_model=32", "(4, 32)"], seq2seq.decode, tgt, torch.randn(4, 32))
    _raises(ValueError, ["batch size 2", "has 1"], seq2seq.decode, tgt, torch.randn(2, 4, 32))
    _raises(TypeError, ["memory (the encoder output)", "torch.Tensor", "str"], seq2seq.decode, tgt, "memory")
    _raises(TypeError, ["memory", "floating-point", "torch.int64"], seq2seq.decode, tgt, torch.ones(1, 4, 32).long())


def test_src_and_src_keep_shapes_differ(seq2seq):
    src = torch.tensor([[1, 2, 3, 0]])
    _raises(ValueError, ["keep", "(1, 4)", "(1, 3)"], seq2seq.encode, src, torch.ones(1, 3, dtype=torch.bool))
    memory = seq2seq.encode(src)
    _raises(
        ValueError,
        ["source padding", "(1, 4)", "(1, 5)"],
        seq2seq.decode,
        torch.tensor([[1, 2]]),
        memory,
        torch.ones(1, 5, dtype=torch.bool),
    )
    _raises(
        ValueError,
        ["tgt_keep", "(1, 2)"],
        seq2seq.decode,
        torch.tensor([[1, 2]]),
        memory,
        None,
        torch.ones(2, 2, dtype=torch.bool),
    )
    _raises(
        ValueError,
        ["keep", "(2, 5)"],
        Encoder(cfg(32, 4, 64)),
        torch.randn(2, 5, 32),
        torch.ones(2, 6, dtype=torch.bool),
    )


def test_keep_must_be_bool(seq2seq):
    _raises(TypeError, ["keep", "bool", "torch.int64"], seq2seq.encode, torch.tensor([[1, 2]]), torch.tensor([[1, 0]]))
    ids = torch.tensor([[1, 2]])
    _raises(TypeError, ["tgt_keep", "bool", "torch.int64"], seq2seq, ids, tgt=ids, tgt_keep=torch.tensor([[1, 0]]))


def test_length_beyond_max_len(seq2seq):
    _raises(ValueError, ["max_len=16", "0..16"], seq2seq.encode, torch.ones(1, 17, dtype=torch.long))
    memory = seq2seq.encode(torch.ones(1, 3, dtype=torch.long))
    _raises(ValueError, ["max_len=16", "0..16"], seq2seq.decode, torch.ones(1, 17, dtype=torch.long), memory)
    _raises(
        ValueError,
        ["max_len=8"],
        Transformer(vocab=V, d_model=32, n_layers=1, max_len=8),
        torch.ones(2, 9, dtype=torch.long),
    )


def test_decoder_input_with_wrong_d_model():
    _raises(
        ValueError,
        ["decoder input", "d_model=32"],
        Decoder(cfg(32, 4, 64)),
        torch.randn(1, 3, 8),
        torch.randn(1, 4, 32),
    )


def test_shared_vocab_mismatch():
    _raises(
        ValueError,
        ["share_embeddings", "vocab=20", "tgt_vocab=30"],
        encoder_decoder,
        20,
        tgt_vocab=30,
        share_embeddings=True,
    )


def test_decode_and_the_target_belong_to_an_encoder_decoder(seq2seq):
    ids = torch.tensor([[1, 2]])
    for arch in ("decoder", "encoder"):
        m = Transformer(arch=arch, vocab=V, d_model=32, n_heads=4, n_layers=1, d_ff=64)
        _raises(
            ValueError, ["decode belongs to an encoder-decoder", f"arch={arch!r}"], m.decode, ids, torch.randn(1, 2, 32)
        )
        _raises(ValueError, ["encode belongs to an encoder-decoder", f"arch={arch!r}"], m.encode, ids)
        _raises(ValueError, [f"arch={arch!r} takes one sequence", "tgt is for an encoder-decoder"], m, ids, tgt=ids)
    _raises(ValueError, ["an encoder-decoder needs forward(src, tgt=...)"], seq2seq, ids)
    _raises(ValueError, ["n_dec_layers and tgt_vocab belong to an encoder-decoder"], Transformer, vocab=V, tgt_vocab=9)


def test_scaled_embeddings_are_refused_where_the_head_already_scales_them():
    _raises(
        ValueError,
        ["scale_embeddings", "already scaled by sqrt(d_model)"],
        Transformer,
        vocab=V,
        d_model=32,
        n_heads=4,
        n_layers=1,
        adaptive=True,
        cutoffs=(5, 10),
        scale_embeddings=True,
    )


def test_torch_interop_mismatches():
    post_ln = encoder_decoder(norm_first=False)
    _raises(ValueError, ["final LayerNorm", "norm_first=False"], to_torch, post_ln)
    gpt = Transformer(vocab=V, d_model=32, n_heads=4, n_layers=1, d_ff=64)
    _raises(
        TypeError, ["only an encoder-decoder Transformer pairs with nn.Transformer", "arch='decoder'"], to_torch, gpt
    )
    layer = nn.TransformerEncoderLayer(32, 4, 64, 0.0, batch_first=True, norm_first=True)
    theirs = nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(32), enable_nested_tensor=False)
    _raises(ValueError, ["layer counts differ", "2", "3"], copy_from_torch, Encoder(cfg(32, 4, 64, 2)), theirs)
    _raises(
        ValueError,
        ["final norms differ"],
        copy_from_torch,
        Encoder(cfg(32, 4, 64, 3)),
        nn.TransformerEncoder(layer, 3, enable_nested_tensor=False),
    )
    _raises(TypeError, ["nn.TransformerDecoder"], copy_from_torch, Decoder(cfg(32, 4, 64)), theirs)


def test_helpers_reject_bad_input():
    _raises(ValueError, ["T >= 2"], lm_batch, torch.tensor([[3]]))
    _raises(ValueError, ["(0, 1)", "1.5"], mlm_batch, torch.tensor([[3, 4]]), None, 1, V, p=1.5)
    _raises(ValueError, ["bool (B, T_q, T_k)"], mask_kind, torch.ones(3, 3))
    _raises(TypeError, ["nn.Module"], capture_masks, "model")
    _raises(TypeError, ["nn.Module"], trace_shapes, lambda x: x)


def test_embedding_sizes_and_pad_id():
    _raises(ValueError, ["vocab must be >= 1", "0"], model_helpers.encoder_decoder, 0, tgt_vocab=10)
    _raises(ValueError, ["tgt_vocab must be >= 1", "0"], model_helpers.encoder_decoder, 10, tgt_vocab=0)
    _raises(ValueError, ["d_model must be >= 1"], model_helpers.encoder_decoder, 10, d_model=0)
    _raises(
        ValueError,
        ["pad_id must be an id of the vocabulary, in [0, 10)", "12"],
        model_helpers.encoder_decoder,
        10,
        pad_id=12,
    )
    _raises(
        ValueError,
        ["pad_id must be an id of the vocabulary, in [0, 5)", "7"],
        model_helpers.encoder_decoder,
        10,
        tgt_vocab=5,
        pad_id=7,
    )
    _raises(ValueError, ["pad_id must be >= 0", "-1"], model_helpers.encoder_decoder, 10, pad_id=-1)
    _raises(TypeError, ["pad_id must be an int", "True"], model_helpers.encoder_decoder, 10, pad_id=True)
    _raises(TypeError, ["pad_id must be an int", "1.0"], model_helpers.encoder_decoder, 10, pad_id=1.0)
    _raises(
        ValueError,
        ["pad_id needs the model's own token tables", "tie_output=True", "set tie_output=False"],
        model_helpers.encoder_decoder,
        10,
        tie_output=True,
        pad_id=0,
    )
    _raises(ValueError, ["set tie_output=False"], TransformerConfig, vocab=10, pad_id=0)  # decoder-only, tied default
    _raises(
        ValueError, ["pad_id must be an id of the vocabulary, in [0, 10)"], cfg, vocab=10, pad_id=10, tie_output=False
    )
    _raises(ValueError, ["d_model must be >= 1", "0"], Transformer, vocab=10, d_model=0)


def test_stacks_check_masks_and_inputs():
    enc = Encoder(cfg())
    x = torch.randn(2, 5, 16)
    _raises(TypeError, ["mask must be a torch.Tensor"], enc, x, None, [[True]])
    _raises(TypeError, ["floating-point", "torch.int64"], enc, torch.ones(2, 5, 16, dtype=torch.long))
    _raises(ValueError, ["n_layers must be >= 1, got 0"], cfg, n_layers=0)
    _raises(
        TypeError,
        ["memory (the encoder output)", "floating-point"],
        Decoder(cfg()),
        x,
        torch.ones(2, 3, 16, dtype=torch.long),
    )


def test_an_additive_mask_and_padding_combine():
    """ALiBi-style float bias plus a padding mask: padded keys get -inf on top of the bias."""
    torch.manual_seed(0)
    enc = Encoder(cfg()).eval()
    x, keep = torch.randn(2, 5, 16), torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    bias = -torch.rand(2, 5, 5)  # (h, T, T)
    with torch.no_grad():
        both = enc(x, keep, mask=bias)
        by_hand = enc(x, None, mask=torch.where(keep[:, None, None, :], bias, float("-inf")))
    assert torch.allclose(both, by_hand, atol=1e-6)


def test_objectives_refuse_what_would_be_silently_wrong():
    ids = torch.tensor([[3, 4, 5], [6, 7, 0]])
    _raises(ValueError, ["protect=3 leaves a row with no real token"], mlm_batch, ids, None, 1, V, protect=3)
    _raises(ValueError, ["vocab must be >= 1, got 0"], mlm_batch, ids, None, 1, 0)
    _raises(ValueError, ["p is the fraction", "nan"], mlm_batch, ids, None, 1, V, p=float("nan"))
    _raises(TypeError, ["integer token ids", "float32"], lm_batch, ids.float())
    logits = torch.randn(2, 3, 5)
    _raises(ValueError, ["every target is ignore_index=-100"], lm_loss, logits, torch.full((2, 3), -100))
    _raises(ValueError, ["targets must be ids in [0, V=5)"], lm_loss, logits, torch.full((2, 3), 7))
    _raises(TypeError, ["integer token ids"], lm_loss, logits, torch.ones(2, 3))
    _raises(ValueError, ["logits must be (B, T, V)"], lm_loss, logits, torch.ones(2, 4, dtype=torch.long))
    _raises(ValueError, ["noise is the fraction"], span_corruption, ids, None, 20, noise=0.0)
    _raises(ValueError, ["all-False row"], span_corruption, ids, torch.zeros(2, 3, dtype=torch.bool), 20)
    _raises(ValueError, ["one shape"], describe_objective, ids, ids[:, :2])


def test_probes_and_torch_masks_check_their_arguments():
    _raises(ValueError, ["kind must be 'self' or 'cross'"], mask_kind, torch.ones(1, 2, 2, dtype=torch.bool), "selff")
    _raises(TypeError, ["mask must be bool", "torch.int64"], to_torch_attn_mask, torch.ones(2, 2, dtype=torch.long), 2)
    _raises(
        ValueError, ["n_heads must be a positive integer"], to_torch_attn_mask, torch.ones(2, 2, dtype=torch.bool), 0
    )
    _raises(TypeError, ["src_keep must be a (B, T) bool tensor"], torch_masks, torch.ones(2, 3, dtype=torch.long))
    layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)
    _raises(TypeError, ["expected one of MultiHeadAttention"], copy_from_torch, layer, Encoder(cfg()))
