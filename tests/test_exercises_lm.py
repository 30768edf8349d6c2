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


def evaluate_without_eval(model, batches):
    total = sum(F.cross_entropy(model(x)[0].flatten(0, 1), y.flatten(), reduction="sum").item() for x, y in batches)
    return math.exp(total / sum(y.numel() for _, y in batches))


def evaluate_mean_of_perplexities(model, batches):  # notebook 10's former demo, on batches
    model.eval()
    with torch.no_grad():
        return sum(math.exp(F.cross_entropy(model(x)[0].flatten(0, 1), y.flatten()).item()) for x, y in batches) / len(
            batches
        )


def step_without_zero_grad(model, optimizer, x, y):
    loss = F.cross_entropy(model(x)[0].flatten(0, 1), y.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()


def step_without_step(model, optimizer, x, y):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x)[0].flatten(0, 1), y.flatten())
    loss.backward()
    return loss.item()


def greedy_from_first_position(model, ids, n_new):
    model.eval()
    with torch.no_grad():
        for _ in range(n_new):
            ids = torch.cat([ids, model(ids)[0][:, 0].argmax(-1, keepdim=True)], dim=1)
    return ids


def kv_without_scale(q, k_new, v_new, k_cache, v_cache):
    k_all, v_all = torch.cat([k_cache, k_new], 2), torch.cat([v_cache, v_new], 2)
    return torch.softmax(q @ k_all.transpose(-2, -1), -1) @ v_all, k_all, v_all


def with_is_causal(q, k_new, v_new, k_cache, v_cache):  # notebook 10's former demo cell
    k_all, v_all = torch.cat([k_cache, k_new], 2), torch.cat([v_cache, v_new], 2)
    return F.scaled_dot_product_attention(q, k_all, v_all, is_causal=True), k_all, v_all


def zero_after_softmax(logits, k, temperature):  # notebook 10's former demo cell
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return torch.softmax(logits / temperature, dim=-1).masked_fill(logits < kth, 0.0)


def test_other_correct_answers_pass():
    assert evaluate_ex.check(evaluate_per_batch_mean, quiet=True).passed
    sdpa = lambda q, kn, vn, kc, vc: (
        F.scaled_dot_product_attention(q, torch.cat([kc, kn], 2), torch.cat([vc, vn], 2)),
        torch.cat([kc, kn], 2),
        torch.cat([vc, vn], 2),
    )
    assert kv_step_ex.check(sdpa, quiet=True).passed


@pytest.mark.parametrize(
    "ex, wrong, words",
    [
        (evaluate_ex, evaluate_without_eval, "dropout is still on"),
        (evaluate_ex, evaluate_mean_of_perplexities, "mean of exps"),
        (train_step_ex, step_without_zero_grad, "first step's gradients"),
        (train_step_ex, step_without_step, "never change"),
        (greedy_lm_ex, greedy_from_first_position, "LAST"),
        (kv_step_ex, kv_without_scale, "1/√d_head"),
        (kv_step_ex, with_is_causal, "top-left"),
        (top_k_ex, zero_after_softmax, "no longer sums to 1"),
        (top_k_ex, lambda logits, k, t: torch.softmax(logits / t, -1), "exactly k words"),
    ],
)
def test_mistakes_get_specific_hints(ex, wrong, words):
    r = ex.check(wrong, quiet=True)
    assert not r.passed and words in r.message, r.message


def test_train_step_cross_entropy_on_unflattened_logits_gets_a_crash_hint():
    def unflattened(model, optimizer, x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x)[0], y)
        loss.backward()
        optimizer.step()
        return loss.item()

    r = train_step_ex.check(unflattened, quiet=True)
    assert not r.passed and "flatten B and T" in r.message


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


def _evaluate_forgot(model, batches):
    total, n = 0.0, 0
    for x, y in batches:
        logits = model(x)  # the model returns (logits, None)
        total += F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum").item()
        n += y.numel()
    return math.exp(total / n)


def _train_step_forgot(model, optimizer, x, y):
    optimizer.zero_grad()
    logits = model(x)
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()


def _greedy_forgot(model, ids, n_new):
    for _ in range(n_new):
        logits = model(ids)
        ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return ids


@pytest.mark.parametrize(
    "ex, answer",
    [(evaluate_ex, _evaluate_forgot), (train_step_ex, _train_step_forgot), (greedy_lm_ex, _greedy_forgot)],
    ids=["evaluate", "train_step", "greedy"],
)
def test_forgetting_that_the_model_returns_a_pair_gets_a_hint(ex, answer):
    r = ex.check(answer, quiet=True)
    assert not r.passed and "logits, _ = model(x)" in r.message, r.message
