"""Inputs that used to give a silent wrong result or an obscure crash: each now gets a clear error (naming
the argument) or the correct result. One test per case, named after what it proves."""

import math

import pytest
import torch
import torch.nn as nn

import transformer_nb.reversal as rv
from transformer_nb import checks
from transformer_nb.core.generation import top_k_filter
from transformer_nb.core.rope import RoPE
from transformer_nb.core.transformer import Transformer
from transformer_nb.lstm import LSTMLM
from transformer_nb.params import TransformerConfig, build_transformer
from transformer_nb.perplexity import evaluate

META_IDS = torch.zeros(1, 3, dtype=torch.long, device="meta")


class Liar(torch.Tensor):
    """A tensor subclass that answers every torch function on it with True."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return True


# --------------------------------------------------------------------------- meta ids into a CPU model


def test_meta_ids_into_a_cpu_encoder_decoder_are_refused():
    model = Transformer(
        arch="encoder-decoder", vocab=20, d_model=16, n_heads=2, n_layers=1, d_ff=32, pad_id=0, tie_output=False
    )
    ids = torch.zeros(1, 2, dtype=torch.long)
    with pytest.raises(ValueError, match="ids is on the meta device but the model is on cpu"):
        model(META_IDS, tgt=ids)
    with pytest.raises(ValueError, match="tgt is on the meta device but the model is on cpu"):
        model(ids, tgt=META_IDS)
    with pytest.raises(ValueError, match="ids is on the meta device but the model is on cpu"):
        model.encode(META_IDS)
    with pytest.raises(ValueError, match="tgt is on the meta device but the model is on cpu"):
        model.decode(META_IDS, model.encode(ids))


@pytest.mark.parametrize(
    "make",
    [
        lambda: Transformer(
            vocab=20, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=8, tie_output=False, output_bias=True
        ),
        lambda: LSTMLM(20, 16, head="full"),
    ],
)
def test_meta_ids_into_a_cpu_language_model_hidden_are_refused(make):
    with pytest.raises(ValueError, match="ids is on the meta device but the model is on cpu"):
        make().hidden(META_IDS)


def test_a_meta_model_still_traces_meta_ids():
    model = build_transformer(TransformerConfig(d_model=16, n_heads=2, n_layers=1, vocab=20))  # on meta
    assert model(META_IDS)[0].shape == (1, 3, 20)


# --------------------------------------------------------------------------- silent wrong results


def test_greedy_decode_refuses_bos_or_eos_inside_a_source():
    model = rv.build_model(rv.MODEL.with_(d_model=16, n_heads=2, n_layers=1, d_ff=32))
    for token in (rv.BOS, rv.EOS):
        with pytest.raises(ValueError, match=r"src must hold PAD \(0\) and ids in \[3, 13\)"):
            rv.greedy_decode(model, torch.tensor([[3, token, 4]]))


def test_top_k_filter_keeps_exactly_k_tied_logits_the_lowest_ids_first():
    logits = torch.tensor([[1.0, 3.0, 3.0, 3.0, 0.0], [5.0, 2.0, 2.0, 4.0, 2.0]])
    inf = -math.inf
    assert top_k_filter(logits, 1).tolist() == [[inf, 3.0, inf, inf, inf], [5.0, inf, inf, inf, inf]]
    assert top_k_filter(logits, 2).tolist() == [[inf, 3.0, 3.0, inf, inf], [5.0, inf, inf, 4.0, inf]]
    assert top_k_filter(logits, 3).tolist() == [[inf, 3.0, 3.0, 3.0, inf], [5.0, 2.0, inf, 4.0, inf]]


@pytest.mark.parametrize(
    "actual, expected",
    [(1, True), (0, False), ((1, 2), (True, 2)), ([True], [1]), (torch.tensor(1), torch.tensor(True))],
)
def test_check_equal_fails_when_a_bool_is_compared_with_an_int(actual, expected):
    with pytest.raises(AssertionError, match="got"):
        checks.check_equal("n", actual, expected)


def test_check_equal_still_passes_equal_bools_and_ints(capsys):
    checks.check_equal("b", True, True)
    checks.check_equal("n", (2, 3), (2, 3))
    checks.check_equal("t", torch.tensor([True, False]), torch.tensor([True, False]))
    assert capsys.readouterr().out.count("✓") == 3


def test_perplexity_scores_every_target_when_batch_size_exceeds_the_tokens():
    torch.manual_seed(0)
    model = Transformer(
        vocab=20, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16, tie_output=False, output_bias=True
    )
    ids = torch.randint(0, 20, (10,))
    res = evaluate(model, ids, seq_len=8, batch_size=16)
    assert res["tokens"] == 9
    # 9 streams of one target each: every target is predicted from the one word before it
    expected, _ = model.nll(ids[:-1, None], ids[1:, None], reduction="sum")
    assert res["nll_sum"] == pytest.approx(expected.item(), rel=1e-6)


@pytest.mark.parametrize("n, batch_size, seq_len, stride", [(103, 4, 8, None), (50, 16, 5, None), (61, 3, 8, 3)])
def test_perplexity_scores_every_target_of_any_split_exactly_once(n, batch_size, seq_len, stride):
    model = Transformer(
        vocab=20, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16, tie_output=False, output_bias=True
    )
    res = evaluate(model, torch.randint(0, 20, (n,)), seq_len=seq_len, batch_size=batch_size, stride=stride)
    assert res["tokens"] == n - 1


def test_perplexity_of_an_lstm_carries_the_state_across_windows_of_each_stream():
    torch.manual_seed(0)
    model = LSTMLM(20, 16, head="full")
    ids = torch.randint(0, 20, (41,))  # 40 targets in 4 streams of 10: no tail
    res = evaluate(model, ids, seq_len=3, batch_size=4)
    rows = ids[:41].unfold(0, 11, 10)
    expected, _ = model.nll(rows[:, :-1], rows[:, 1:], reduction="sum")  # one pass = windows with the state carried
    assert res["tokens"] == 40 and res["nll_sum"] == pytest.approx(expected.item(), rel=1e-5)


# --------------------------------------------------------------------------- obscure crashes


def test_rope_on_the_meta_device_has_no_memory_limit():
    with torch.device("meta"):
        assert RoPE(8, max_len=2**36).cos.shape == (2**36, 4)


# --------------------------------------------------------------------------- tensor subclasses


def test_a_tensor_subclass_that_fakes_comparisons_cannot_pass_a_check():
    liar = torch.zeros(3).as_subclass(Liar)
    for fn, args in (
        (checks.check_close, ("x", liar, torch.ones(3))),
        (checks.check_close, ("x", torch.ones(3), liar)),
        (checks.check_equal, ("x", liar, torch.ones(3))),
        (checks.check_equal, ("x", torch.ones(3), liar)),
        (checks.check_true, ("x", liar)),
    ):
        with pytest.raises(TypeError, match="a subclass of torch.Tensor"):
            fn(*args)


def test_a_parameter_still_passes_a_check(capsys):
    checks.check_close("w", nn.Parameter(torch.ones(2)), torch.ones(2))
    assert "✓ w" in capsys.readouterr().out
