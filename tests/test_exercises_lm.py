"""Notebook 10's checkers. Exercise 8.9 in full: the student's perplexity evaluation, training step (two steps
on fixed batches) and greedy continuation are run on a tiny seeded model, and the stated verdict is checked
against the run's numbers. Sampling and the KV cache: a decoding step without 1/√d has its own hint, and
notebook 10's former demo cells (zeroing after the softmax, is_causal=True) are named."""

import math

import pytest
import torch
import torch.nn.functional as F

from transformer_nb.exercises.lm import kv_step_ex, top_k_ex
from transformer_nb.exercises.lm_train import evaluate_ex, greedy_lm_ex, train_step_ex, verdict_ex
from transformer_nb.exercises.solutions.lm import verdict

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def evaluate_per_batch_mean(model, batches):  # a correct answer written differently: mean loss × count
    model.eval()
    with torch.no_grad():
        total = sum(F.cross_entropy(model(x)[0].transpose(1, 2), y).item() * y.numel() for x, y in batches)
    return math.exp(total / sum(y.numel() for _, y in batches))


def test_other_correct_answers_pass():
    assert evaluate_ex.check(evaluate_per_batch_mean, quiet=True).passed
    sdpa = lambda q, kn, vn, kc, vc: (
        F.scaled_dot_product_attention(q, torch.cat([kc, kn], 2), torch.cat([vc, vn], 2)),
        torch.cat([kc, kn], 2),
        torch.cat([vc, vn], 2),
    )
    assert kv_step_ex.check(sdpa, quiet=True).passed


RUN = {
    "Transformer": {"perplexity": 180.0, "seconds_per_epoch": 9.0, "parameters": 2_570_628},
    "LSTM": {"perplexity": 240.0, "seconds_per_epoch": 4.0, "parameters": 2_561_000},
}


def test_verdict_is_checked_against_the_runs_own_numbers():
    stated = {"lower_perplexity": "Transformer", "faster_per_epoch": "LSTM", "comparable_size": True}
    assert verdict_ex.check(stated, RUN, quiet=True).passed
    assert verdict_ex.check(verdict, RUN, quiet=True).passed
    r = verdict_ex.check(
        {**stated, "faster_per_epoch": "Transformer"}, RUN, quiet=True
    )  # the hint's claim, not the run
    assert not r.passed and "seconds per epoch" in r.message
    other = {**RUN, "LSTM": {**RUN["LSTM"], "seconds_per_epoch": 20.0}}
    assert not verdict_ex.check(stated, other, quiet=True).passed  # the same statement, other numbers
    r = verdict_ex.check({**stated, "comparable_size": "yes"}, RUN, quiet=True)
    assert not r.passed and "'comparable_size': comparable means" in r.message


def _unflattened(model, optimizer, x, y):  # cross_entropy on (B, T, V) logits
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x)[0], y)
    loss.backward()
    optimizer.step()
    return loss.item()


def _greedy_forgot(model, ids, n_new):  # the model returns (logits, None); the three exercises share the hint
    for _ in range(n_new):
        logits = model(ids)
        ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return ids


@pytest.mark.parametrize(
    "ex, answer, words",
    [
        (top_k_ex, lambda logits, k, t: torch.softmax(logits / t, -1), "exactly k words"),  # a property's hint
        (train_step_ex, _unflattened, "flatten B and T"),
        (greedy_lm_ex, _greedy_forgot, "logits, _ = model(x)"),
    ],
)
def test_wrong_answers_beyond_the_declared_mistakes_get_a_hint(ex, answer, words):
    r = ex.check(answer, quiet=True)
    assert not r.passed and words in r.message, r.message
