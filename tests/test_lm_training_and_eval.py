"""Training, evaluation and the baselines compute what they claim (lm_training, perplexity, small_corpus)."""

import math

import pytest
import torch

from transformer_nb import lm_compute, lm_recipe, lm_training, perplexity, small_corpus
from transformer_nb.core import output_head
from transformer_nb.core.transformer import Transformer
from transformer_nb.params import numel


def tiny(vocab=50, **kw):
    torch.manual_seed(0)
    return Transformer(vocab=vocab, **{**dict(d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16), **kw})


def test_evaluate_is_exp_of_mean_token_nll():
    m = tiny(tie_output=False, output_bias=True).eval()
    ids = torch.randint(0, 50, (161,))
    res = perplexity.evaluate(m, ids, seq_len=16, batch_size=2)
    streams = ids.unfold(0, 81, 80)  # (2, 81): the second row starts with the first row's last word
    total = 0.0
    for i in range(0, 80, 16):
        x, y = streams[:, i : i + 16], streams[:, i + 1 : i + 17]
        x = x[:, : y.shape[1]]
        with torch.no_grad():
            total += m.nll(x, y, reduction="sum")[0].item()
    assert res["tokens"] == 160  # every target of the split once
    assert math.isclose(res["ppl"], math.exp(total / 160), rel_tol=1e-5)


@pytest.mark.parametrize("optimizer", lm_training.OPTIMIZERS)
@pytest.mark.parametrize("kind", ["transformer", "lstm"])
def test_a_tiny_model_learns_a_repeating_text(kind, optimizer):
    pattern = torch.arange(12).repeat(400)  # 0 1 2 ... 11 0 1 2 ...
    ranks = output_head.frequency_ranks(pattern, 12)
    sizes = dict(tie_output=False, d_ff=64, n_heads=2, max_len=32) if kind == "transformer" else dict(hidden_size=32)
    head = {} if kind == "transformer" else dict(head="adaptive")  # the LSTM's untied adaptive head
    m = lm_recipe.build_model(kind, 12, ranks, d_model=32, cutoffs=(4, 8), div_value=2.0, n_layers=1, **sizes, **head)
    cfg = lm_training.TrainConfig(
        steps=60, batch_size=8, seq_len=16, lr=1e-2, contiguous=kind == "lstm", eval_every=20, eval_tokens=500,
        optimizer=optimizer,
    )  # fmt: skip
    hist = lm_training.train_lm(m, pattern, cfg, valid_ids=pattern[:600], live=False, bar=False)
    assert hist["steps"] == 60 and hist["tokens_seen"] == 60 * 8 * 16
    assert hist["step"] == [20, 40, 60]
    assert hist["val_ppl"][-1] < 4.0  # from 12 (uniform) towards 1 (certain)
    assert perplexity.evaluate(m, pattern[:600], 16)["ppl"] < 4.0


def test_wall_clock_budget_stops_training():
    m = tiny(30, output_bias=True)
    cfg = lm_training.TrainConfig(budget_s=0.5, batch_size=4, seq_len=8)
    hist = lm_training.train_lm(m, torch.randint(0, 30, (1000,)), cfg, live=False, bar=False)
    assert 0.5 <= hist["train_seconds"] < 2.0 and hist["steps"] > 0


def test_lr_schedule_warms_up_then_decays():
    f = [lm_training._lr_factor(p / 100, 0.1) for p in range(101)]
    assert f[0] < 0.01 and math.isclose(f[10], 1.0) and f[100] < 1e-6
    assert all(a <= b for a, b in zip(f[:10], f[1:11])) and all(a >= b for a, b in zip(f[10:], f[11:]))


def test_sample_corpus_has_its_own_vocabulary():
    itos = ["<eos>", "a", "b", "c", "<unk>", "d"]
    ids, words = small_corpus.sample_corpus(torch.tensor([5, 1, 1, 3, 0, 5, 2, 2]), itos, 6)
    assert words == ["d", "a", "c", "<eos>", "<unk>"]
    assert ids.tolist() == [0, 1, 1, 2, 3, 0]


def test_train_epochs_and_matching_lstm():
    t = tiny(40, n_layers=2, max_len=32, tie_output=False, output_bias=True)
    l = small_corpus.lstm_matching(numel(t), 40, 16, 2, head="full")
    assert abs(numel(l) / numel(t) - 1) < 0.1
    h = small_corpus.train_epochs(t, torch.randint(0, 40, (500,)), epochs=2, batch_size=4, seq_len=32, live=False)
    assert len(h["train_ppl"]) == 2 and len(h["seconds"]) == 2
    assert h["steps"] == 2 * 4  # 15 windows of 33 tokens, batches of 4: 4 steps an epoch
    assert math.isclose(h["train_ppl"][0], math.exp((sum(h["loss"][:3]) * 4 + h["loss"][3] * 3) / 15))


def test_flops_per_token_splits_body_and_head():
    V, d = 1000, 32
    m = tiny(V, d_model=d, d_ff=64, output_bias=True)
    x, y = torch.randint(0, V, (2, 16)), torch.randint(0, V, (2, 16))
    f = lm_compute.flops_per_token(m, x, y)
    assert math.isclose(f["head"], 6 * V * d, rel_tol=1e-6)  # forward 2Vd, backward 4Vd per token
    assert 0 < f["head_share"] < 1


@pytest.mark.parametrize("stride", [1, 5, 16, 32])
def test_sliding_evaluation_scores_every_target_once_with_more_context(stride):
    m = tiny(tie_output=False, output_bias=True).eval()
    ids = torch.randint(0, 50, (201,))
    plain = perplexity.evaluate(m, ids, seq_len=16, batch_size=2)
    slid = perplexity.evaluate(m, ids, seq_len=16, batch_size=2, stride=stride)
    assert slid["tokens"] == plain["tokens"] == 200
    if stride >= 16:
        assert math.isclose(slid["ppl"], plain["ppl"], rel_tol=1e-9)
    # stride 1: every target is predicted from the full 16-token window ending at it
    if stride == 1:
        streams = ids.unfold(0, 101, 100)  # (2, 101): the rows share a word
        total = 0.0
        with torch.no_grad():
            total += m.nll(streams[:, :16], streams[:, 1:17], reduction="sum")[0].item()
            for end in range(17, 101):
                lp = m.log_probs(streams[:, end - 16 : end])[:, -1]
                total -= lp.gather(1, streams[:, end : end + 1]).sum().item()
        assert math.isclose(slid["nll_sum"], total, rel_tol=1e-5)
