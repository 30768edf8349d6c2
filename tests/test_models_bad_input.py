"""Bad input to the architecture variants fails at once with a message that says what was expected
and what arrived -- never a silent wrong answer or a crash deep inside attention."""

import pytest
import torch
import torch.nn as nn

from transformer_nb.interop import copy_from_torch, to_torch
from transformer_nb.models import Decoder, DecoderOnly, Encoder, EncoderDecoder, EncoderOnly
from transformer_nb.objectives import lm_batch, mlm_batch
from transformer_nb.probes import capture_masks, mask_kind, trace_shapes

V = 20


@pytest.fixture(scope="module")
def seq2seq():
    torch.manual_seed(0)
    return EncoderDecoder(V, V, 32, 4, 1, 1, 64, max_len=16).eval()


def _raises(exc, words, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    for w in words:
        assert w in str(info.value), str(info.value)


def test_ids_out_of_vocab_range(seq2seq):
    _raises(ValueError, ["[0, 20)", "[1, 25]"], seq2seq.encode, torch.tensor([[1, 25, 3]]))
    _raises(ValueError, ["[0, 20)", "-1"], DecoderOnly(V, 32, 4, 1, 64), torch.tensor([[-1, 2]]))


def test_ids_not_two_dimensional(seq2seq):
    _raises(ValueError, ["(B, T)", "(3,)"], seq2seq.encode, torch.tensor([1, 2, 3]))
    _raises(ValueError, ["(B, T)", "(1, 2, 3)"], EncoderOnly(V, 32, 4, 1, 64), torch.ones(1, 2, 3, dtype=torch.long))


def test_ids_of_the_wrong_type(seq2seq):
    _raises(TypeError, ["integers", "torch.float32"], seq2seq.encode, torch.tensor([[1.0, 2.0]]))
    _raises(TypeError, ["torch.Tensor", "list"], seq2seq.encode, [[1, 2]])


def test_memory_with_wrong_d_model(seq2seq):
    tgt = torch.tensor([[1, 2, 3]])
    _raises(ValueError, ["memory", "d_model=32", "(1, 4, 16)"], seq2seq.decode, tgt, torch.randn(1, 4, 16))
    _raises(ValueError, ["memory", "d_model=32", "(4, 32)"], seq2seq.decode, tgt, torch.randn(4, 32))
    _raises(ValueError, ["batch size 2", "has 1"], seq2seq.decode, tgt, torch.randn(2, 4, 32))


def test_src_and_src_keep_shapes_differ(seq2seq):
    src = torch.tensor([[1, 2, 3, 0]])
    _raises(ValueError, ["src_keep", "(1, 4)", "(1, 3)"], seq2seq.encode, src, torch.ones(1, 3, dtype=torch.bool))
    memory = seq2seq.encode(src)
    _raises(
        ValueError,
        ["src_keep", "(1, 4)", "(1, 5)"],
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
        ValueError, ["keep", "(2, 5)"], Encoder(32, 4, 64, 1), torch.randn(2, 5, 32), torch.ones(2, 6, dtype=torch.bool)
    )


def test_keep_must_be_bool(seq2seq):
    _raises(
        TypeError, ["src_keep", "bool", "torch.int64"], seq2seq.encode, torch.tensor([[1, 2]]), torch.tensor([[1, 0]])
    )


def test_length_beyond_max_len(seq2seq):
    _raises(ValueError, ["max_len=16", "0..16"], seq2seq.encode, torch.ones(1, 17, dtype=torch.long))
    _raises(ValueError, ["max_len=8"], DecoderOnly(V, 32, 4, 1, 64, max_len=8), torch.ones(2, 9, dtype=torch.long))


def test_decoder_input_with_wrong_d_model():
    _raises(
        ValueError, ["decoder input", "d_model=32"], Decoder(32, 4, 64, 1), torch.randn(1, 3, 8), torch.randn(1, 4, 32)
    )


def test_classify_without_a_classifier_and_shared_vocab_mismatch():
    _raises(ValueError, ["n_classes"], EncoderOnly(V, 32, 4, 1, 64).classify, torch.tensor([[1, 2]]))
    _raises(
        ValueError, ["share_embeddings", "src_vocab=20", "tgt_vocab=30"], EncoderDecoder, 20, 30, share_embeddings=True
    )


def test_torch_interop_mismatches():
    post_ln = EncoderDecoder(V, V, 32, 4, 1, 1, 64, norm_first=False)
    _raises(ValueError, ["final LayerNorm", "norm_first=False"], to_torch, post_ln)
    layer = nn.TransformerEncoderLayer(32, 4, 64, 0.0, batch_first=True, norm_first=True)
    theirs = nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(32), enable_nested_tensor=False)
    _raises(ValueError, ["layer counts differ", "2", "3"], copy_from_torch, Encoder(32, 4, 64, 2), theirs)
    _raises(
        ValueError,
        ["final norms differ"],
        copy_from_torch,
        Encoder(32, 4, 64, 3, norm_first=True),
        nn.TransformerEncoder(layer, 3, enable_nested_tensor=False),
    )
    _raises(TypeError, ["nn.TransformerDecoder"], copy_from_torch, Decoder(32, 4, 64, 1), theirs)


def test_helpers_reject_bad_input():
    _raises(ValueError, ["T >= 2"], lm_batch, torch.tensor([[3]]))
    _raises(ValueError, ["(0, 1)", "1.5"], mlm_batch, torch.tensor([[3, 4]]), None, 1, V, p=1.5)
    _raises(ValueError, ["bool (B, T_q, T_k)"], mask_kind, torch.ones(3, 3))
    _raises(TypeError, ["nn.Module"], capture_masks, "model")
    _raises(TypeError, ["nn.Module"], trace_shapes, lambda x: x)
