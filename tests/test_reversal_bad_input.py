"""Bad input to the reversal task fails at once with a ValueError/TypeError naming the argument (issue 18),
never a silent wrong answer: each case here was probed against the public API."""

from dataclasses import replace

import pytest
import torch
import torch.nn as nn

from transformer_nb import reversal as rv
from transformer_nb.core.transformer import Transformer


def _raises(exc, words, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    for w in words:
        assert w in str(info.value), str(info.value)


@pytest.fixture(scope="module")
def model():
    return rv.build_model(rv.IMPROVED.model, rv.IMPROVED.init, device="cpu").eval()


# ----------------------------------------------------------------------------- the two findings of issue 18


def test_paper_lr_without_warmup_says_so():
    """It divided by warmup**1.5 and crashed with ZeroDivisionError."""
    _raises(ValueError, ["warmup must be an integer >= 1", "warmup_factor(0)"], rv.paper_lr, 10, 64, 0)
    _raises(ValueError, ["warmup"], rv.paper_lr, 10, 64, 2.5)
    _raises(ValueError, ["step must be an integer >= 1"], rv.paper_lr, 1.5, 64, 10)
    _raises(ValueError, ["d_model"], rv.paper_lr, 1, 0, 10)


# ----------------------------------------------------------------------------- data


def test_data_arguments():
    _raises(ValueError, ["batch_size must be >= 1, got 0"], rv.random_batch, 0)
    _raises(TypeError, ["batch_size must be an int", "2.0"], rv.random_batch, 2.0)
    _raises(ValueError, ["n must be >= 0, got -1"], rv.make_pairs, -1)
    _raises(ValueError, ["batch_size"], rv.heldout_set, 0)
    _raises(ValueError, ["batch_size=1000000000000"], rv.random_batch, 10**12)
    _raises(ValueError, ["exclude works for sequences of at most 16"], rv.random_batch, 4, 3, 20, exclude=torch.ones(1))
    _raises(ValueError, ["at least one"], rv.collate, [])
    _raises(ValueError, ["min_len must be <= max_len"], rv.random_batch, 4, 5, 3)
    _raises(ValueError, ["min_len must be >= 1, got 0"], rv.make_pairs, 4, 0)
    _raises(ValueError, ["PAD (0) and ids in [3, 13)", "[1, 2]"], rv.collate, [([1, 2], [2, 1])])
    _raises(ValueError, ["[99]"], rv.collate, [([3, 99], [99, 3])])


def test_token_tensors():
    _raises(TypeError, ["integer token ids", "float32"], rv.reverse_padded, torch.ones(2, 3))
    _raises(ValueError, ["right-padded"], rv.reverse_padded, torch.tensor([[0, 3, 4]]))
    _raises(ValueError, ["(B, T)"], rv.reverse_padded, torch.tensor([3, 4]))
    _raises(TypeError, ["torch.Tensor"], rv.shift_for_teacher_forcing, [[3, 4]])
    _raises(ValueError, ["at most 16 tokens"], rv.sequence_codes, torch.ones(2, 20, dtype=torch.long))
    _raises(ValueError, ["[40]"], rv.sequence_codes, torch.tensor([[3, 40]]))  # would collide with other codes
    _raises(ValueError, ["[-1]"], rv.sequence_codes, torch.tensor([[3, -1]]))
    _raises(ValueError, ["PAD (0) and ids in [3, 13)"], rv.shift_for_teacher_forcing, torch.tensor([[4, rv.EOS]]))


def test_parse_tokens():
    _raises(ValueError, ["integers"], rv.parse_tokens, "3 x")
    _raises(ValueError, ["at least one token"], rv.parse_tokens, " , ")
    _raises(ValueError, ["3..12", "[2, 13]"], rv.parse_tokens, "2 5 13")
    for text in ("3.5", "-4", "3;4"):
        _raises(ValueError, ["integers"], rv.parse_tokens, text)
    _raises(TypeError, ["string"], rv.parse_tokens, None)


# ----------------------------------------------------------------------------- model and recipes


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        ({"max_len": 5}, ValueError, "max_len must be >= 9, got 5"),
        ({"vocab": 20}, ValueError, "make it from rv.MODEL"),
        ({"arch": "decoder", "share_embeddings": True}, ValueError, "make it from rv.MODEL"),
    ],
)
def test_model_must_suit_the_task(kwargs, exc, words):
    _raises(exc, [words], rv.build_model, rv.MODEL.with_(**kwargs))
    _raises(exc, [words], replace, rv.IMPROVED, model=rv.MODEL.with_(**kwargs))


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"lr": float("nan")}, "lr must be a finite number"),
        ({"lr": -1e-3}, "lr"),
        ({"lr": float("inf")}, "lr"),
        ({"warmup": -1}, "warmup must be >= 0, got -1"),
        ({"steps": 0}, "steps must be >= 1, got 0"),
        ({"batch_size": 0}, "batch_size"),
        ({"label_smoothing": 1.0}, "label_smoothing"),
        ({"clip": 0.0}, "clip"),
        ({"betas": (0.9,)}, "betas must be two numbers"),
        ({"betas": (0.9, 1.5)}, "betas"),
        ({"eps": 0.0}, "eps"),
        ({"schedule": "cosine"}, "schedule must be"),
        ({"data": "stream"}, "data must be"),
        ({"init": "he"}, "init must be one of"),
    ],
)
def test_recipe_fields(kwargs, words):
    _raises(ValueError, [words], replace, rv.IMPROVED, **kwargs)


def test_build_model_needs_a_model_config():
    _raises(TypeError, ["expected a TransformerConfig"], rv.build_model, "improved")
    _raises(TypeError, ["expected a TransformerConfig"], replace, rv.IMPROVED, model="improved")
    _raises(ValueError, ["init must be one of"], rv.build_model, rv.MODEL, "he")


# ----------------------------------------------------------------------------- training


def test_train_arguments(model):
    r = replace(rv.IMPROVED, steps=1)
    _raises(ValueError, ["eval_every must be >= 1, got 0"], rv.train, model, r, eval_every=0)
    _raises(ValueError, ["target is an exact-match rate in [0, 1]", "2.0"], rv.train, model, r, target=2.0)
    _raises(TypeError, ["eval_batch must be a reversal Batch"], rv.train, model, r, torch.ones(2, 3))
    _raises(TypeError, ["recipe must be a reversal Recipe"], rv.train, model, "improved")
    _raises(TypeError, ["recipe must be a reversal Recipe"], rv.run, "small")
    _raises(ValueError, ["Expected input batch_size (6)"], rv.loss_fn, torch.randn(2, 3, 5), torch.ones(2, 4).long())


# ----------------------------------------------------------------------------- decoding and scoring


def test_decoding_and_scoring_arguments(model):
    src, gpt = torch.tensor([[3, 4, 5]]), Transformer(vocab=rv.VOCAB_SIZE, d_model=16, n_heads=2, n_layers=1, d_ff=32)
    cases = [
        (TypeError, "integer token ids", rv.greedy_decode, model, src.float()),
        (ValueError, "(B, T)", rv.greedy_decode, model, torch.tensor([3, 4])),
        (ValueError, "max_new must be >= 1, got 0", rv.greedy_decode, model, src, 0),
        (ValueError, "[20]", rv.greedy_decode, model, torch.tensor([[3, 20]])),
        (ValueError, "max_len=64", rv.greedy_decode, model, torch.full((1, 70), 3)),
        (ValueError, "no labels", rv.score, torch.ones(2, 3).long(), torch.zeros(2, 3).long()),
        (ValueError, "pred has 2 rows but tgt_out has 3", rv.score, torch.ones(2, 3).long(), torch.ones(3, 3).long()),
        (TypeError, "reversal Batch", rv.evaluate, model, torch.ones(2, 3)),
        (TypeError, "reversal Batch", rv.forced_match, model, torch.ones(2, 3)),
        (ValueError, "the dict evaluate() returns", rv.failure_table, {}),
        (ValueError, "n must be >= 1, got 0", rv.length_sweep, model, [3], 0),
        (ValueError, "min_len must be >= 1, got 0", rv.length_sweep, model, [0], 2),
        (TypeError, "needs an encoder-decoder Transformer, got Linear", rv.attention_maps, nn.Linear(2, 2), src),
        (TypeError, "arch='decoder'", rv.attention_maps, gpt, src),
        (ValueError, "tgt_in has 2 rows but src has 1", rv.attention_maps, model, src, torch.ones(2, 1).long()),
        (ValueError, "src_keep must be (B, S)", rv.anti_diagonal_share, torch.rand(1, 2, 3, 4), src.bool(), src[0]),
        (
            ValueError,
            "no output position",
            rv.anti_diagonal_share,
            torch.rand(1, 2, 3, 4),
            torch.ones(1, 4).bool(),
            torch.tensor([0]),
        ),
    ]
    for exc, words, fn, *args in cases:
        _raises(exc, [words], fn, *args)
    assert rv.greedy_decode(model, torch.ones(0, 3, dtype=torch.long)).shape == (0, 4)  # empty in, empty out
