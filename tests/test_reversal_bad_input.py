# ruff: noqa: E501  (a table: one bad call per line)
"""Bad input to the reversal task fails at once with a ValueError/TypeError naming the argument (issue 18),
never a silent wrong answer: each case here was probed against the public API."""

from dataclasses import replace

import pytest
import torch
import torch.nn as nn

from transformer_nb import reversal as rv
from transformer_nb.core.transformer import Transformer

MODEL = rv.build_model(rv.IMPROVED.model, rv.IMPROVED.init, device="cpu").eval()
GPT = Transformer(vocab=rv.VOCAB_SIZE, d_model=16, n_heads=2, n_layers=1, d_ff=32)
SRC, R1, L, T = torch.tensor([[3, 4, 5]]), replace(rv.IMPROVED, steps=1), torch.long, torch.tensor

#: (the exception, what its message says (each of a tuple), the function, its arguments)
CASES = [
    # the two findings of issue 18: paper_lr divided by warmup**1.5 and crashed with ZeroDivisionError
    (ValueError, ("warmup must be an integer >= 1", "warmup_factor(0)"), rv.paper_lr, 10, 64, 0),
    (ValueError, "warmup", rv.paper_lr, 10, 64, 2.5),
    (ValueError, "step must be an integer >= 1", rv.paper_lr, 1.5, 64, 10),
    (ValueError, "d_model", rv.paper_lr, 1, 0, 10),
    # data
    (ValueError, "batch_size must be >= 1, got 0", rv.random_batch, 0),
    (TypeError, ("batch_size must be an int", "2.0"), rv.random_batch, 2.0),
    (ValueError, "n must be >= 0, got -1", rv.make_pairs, -1),
    (ValueError, "batch_size", rv.heldout_set, 0),
    (ValueError, "batch_size=1000000000000", rv.random_batch, 10**12),
    (ValueError, "exclude works for sequences of at most 16", lambda: rv.random_batch(4, 3, 20, exclude=torch.ones(1))),
    (ValueError, "at least one", rv.collate, []),
    (ValueError, "min_len must be <= max_len", rv.random_batch, 4, 5, 3),
    (ValueError, "min_len must be >= 1, got 0", rv.make_pairs, 4, 0),
    (ValueError, ("PAD (0) and ids in [3, 13)", "[1, 2]"), rv.collate, [([1, 2], [2, 1])]),
    (ValueError, "[99]", rv.collate, [([3, 99], [99, 3])]),
    # token tensors
    (TypeError, ("integer token ids", "float32"), rv.reverse_padded, torch.ones(2, 3)),
    (ValueError, "right-padded", rv.reverse_padded, T([[0, 3, 4]])),
    (ValueError, "(B, T)", rv.reverse_padded, T([3, 4])),
    (TypeError, "torch.Tensor", rv.shift_for_teacher_forcing, [[3, 4]]),
    (ValueError, "at most 16 tokens", rv.sequence_codes, torch.ones(2, 20, dtype=L)),
    (ValueError, "[40]", rv.sequence_codes, T([[3, 40]])),  # would collide with other codes
    (ValueError, "[-1]", rv.sequence_codes, T([[3, -1]])),
    (ValueError, "PAD (0) and ids in [3, 13)", rv.shift_for_teacher_forcing, T([[4, rv.EOS]])),
    # typed tokens
    (ValueError, "integers", rv.parse_tokens, "3 x"),
    (ValueError, "at least one token", rv.parse_tokens, " , "),
    (ValueError, ("3..12", "[2, 13]"), rv.parse_tokens, "2 5 13"),
    *[(ValueError, "integers", rv.parse_tokens, text) for text in ("3.5", "-4", "3;4")],
    (TypeError, "string", rv.parse_tokens, None),
    # the model
    (TypeError, "expected a TransformerConfig", rv.build_model, "improved"),
    (TypeError, "expected a TransformerConfig", lambda: replace(rv.IMPROVED, model="improved")),
    (ValueError, "init must be one of", rv.build_model, rv.MODEL, "he"),
    # training
    (ValueError, "eval_every must be >= 1, got 0", lambda: rv.train(MODEL, R1, eval_every=0)),
    (ValueError, ("target is an exact-match rate in [0, 1]", "2.0"), lambda: rv.train(MODEL, R1, target=2.0)),
    (TypeError, "eval_batch must be a reversal Batch", rv.train, MODEL, R1, torch.ones(2, 3)),
    (TypeError, "recipe must be a reversal Recipe", rv.train, MODEL, "improved"),
    (TypeError, "recipe must be a reversal Recipe", rv.run, "small"),
    (ValueError, "Expected input batch_size (6)", rv.loss_fn, torch.randn(2, 3, 5), torch.ones(2, 4, dtype=L)),
    # decoding and scoring
    (TypeError, "integer token ids", rv.greedy_decode, MODEL, SRC.float()),
    (ValueError, "(B, T)", rv.greedy_decode, MODEL, T([3, 4])),
    (ValueError, "max_new must be >= 1, got 0", rv.greedy_decode, MODEL, SRC, 0),
    (ValueError, "[20]", rv.greedy_decode, MODEL, T([[3, 20]])),
    (ValueError, "max_len=64", rv.greedy_decode, MODEL, torch.full((1, 70), 3)),
    (ValueError, "no labels", rv.score, torch.ones(2, 3, dtype=L), torch.zeros(2, 3, dtype=L)),
    (ValueError, "pred has 2 rows but tgt_out has 3", rv.score, torch.ones(2, 3, dtype=L), torch.ones(3, 3, dtype=L)),
    (TypeError, "reversal Batch", rv.evaluate, MODEL, torch.ones(2, 3)),
    (TypeError, "reversal Batch", rv.forced_match, MODEL, torch.ones(2, 3)),
    (ValueError, "the dict evaluate() returns", rv.failure_table, {}),
    (ValueError, "n must be >= 1, got 0", rv.length_sweep, MODEL, [3], 0),
    (ValueError, "min_len must be >= 1, got 0", rv.length_sweep, MODEL, [0], 2),
    (TypeError, "needs an encoder-decoder Transformer, got Linear", rv.attention_maps, nn.Linear(2, 2), SRC),
    (TypeError, "arch='decoder'", rv.attention_maps, GPT, SRC),
    (ValueError, "tgt_in has 2 rows but src has 1", rv.attention_maps, MODEL, SRC, torch.ones(2, 1, dtype=L)),
    (ValueError, "src_keep must be (B, S)", rv.anti_diagonal_share, torch.rand(1, 2, 3, 4), SRC.bool(), SRC[0]),
    (ValueError, "no output position", rv.anti_diagonal_share, torch.rand(1, 2, 3, 4), torch.ones(1, 4).bool(), T([0])),
]  # fmt: skip
#: a model config or recipe field the task cannot use -> what the error says
MODELS = [({"max_len": 5}, "max_len must be >= 9, got 5"), ({"vocab": 20}, "make it from rv.MODEL"), ({"arch": "decoder", "share_embeddings": True}, "make it from rv.MODEL")]  # fmt: skip
RECIPES = [
    ({"lr": float("nan")}, "lr must be a finite number"), ({"lr": -1e-3}, "lr"), ({"lr": float("inf")}, "lr"),
    ({"warmup": -1}, "warmup must be >= 0, got -1"), ({"steps": 0}, "steps must be >= 1, got 0"),
    ({"batch_size": 0}, "batch_size"), ({"label_smoothing": 1.0}, "label_smoothing"), ({"clip": 0.0}, "clip"),
    ({"betas": (0.9,)}, "betas must be two numbers"), ({"betas": (0.9, 1.5)}, "betas"), ({"eps": 0.0}, "eps"),
    ({"schedule": "cosine"}, "schedule must be"), ({"data": "stream"}, "data must be"), ({"init": "he"}, "init must be one of"),
]  # fmt: skip
CASES += [(ValueError, words, rv.build_model, rv.MODEL.with_(**kw)) for kw, words in MODELS]
CASES += [(ValueError, words, lambda kw=kw: replace(rv.IMPROVED, model=rv.MODEL.with_(**kw))) for kw, words in MODELS]
CASES += [(ValueError, words, lambda kw=kw: replace(rv.IMPROVED, **kw)) for kw, words in RECIPES]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{getattr(c[2], '__name__', '?')}-{c[1]}"[:60])
def test_bad_input_is_refused_naming_the_argument(case):
    exc, words, fn, *args = case
    with pytest.raises(exc) as info:
        fn(*args)
    assert all(w in str(info.value) for w in ((words,) if isinstance(words, str) else words)), str(info.value)


def test_decoding_nothing_gives_nothing():
    assert rv.greedy_decode(MODEL, torch.ones(0, 3, dtype=torch.long)).shape == (0, 4)
