"""The catalogue of known mistakes, mutation-style: every mistake of every checker (the capstone's included),
submitted as an answer, is rejected with its OWN message and no other mistake's; the two mistakes that used
to get a generic message (8.6's heads made by reshaping alone, 8.9's step without the shift), written the
way a student writes them, get theirs; ``catalogue()`` lists every checker with its count."""

import contextlib
import io
import math

import pytest
import torch
import torch.nn.functional as F

from transformer_nb.exercises import all_exercises, catalogue, known_mistakes
from transformer_nb.exercises.lm_train import train_step_ex
from transformer_nb.exercises.multihead import mha_ex

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

EXERCISES = all_exercises()
MUTANTS = [(k, i) for k in sorted(EXERCISES) for i in range(len(EXERCISES[k].mistakes))]


@pytest.mark.parametrize("key,i", MUTANTS, ids=[f"{k}-{i}" for k, i in MUTANTS])
def test_each_mistake_gets_its_own_message_and_no_other(key, i):
    ex = EXERCISES[key]
    r = ex.check(ex.mistakes[i].fn, quiet=True)
    assert not r.passed
    assert ex.mistakes[i].hint in r.message, r.message
    others = [m.hint for j, m in enumerate(ex.mistakes) if j != i and m.hint not in ex.mistakes[i].hint]
    assert not [h for h in others if h in r.message], r.message


def test_messages_are_distinct_within_each_catalogue():
    for key, hints in known_mistakes().items():
        assert len(set(hints)) == len(hints), key


def mha_reshape_only(x, w_q, w_k, w_v, w_o, n_heads):  # a student's 8.6: heads by reshape, no transpose
    b, t, d = x.shape
    q, k, v = ((x @ w).reshape(b, n_heads, t, d // n_heads) for w in (w_q, w_k, w_v))
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // n_heads), dim=-1)
    return (w @ v).reshape(b, t, d) @ w_o, w


def train_step_without_shift(model, optimizer, x, y):  # a student's 8.9 step that predicts x itself
    model.train()
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x)[0].flatten(0, 1), x.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()


def test_heads_by_reshape_alone_get_their_own_message():
    r = mha_ex.check(mha_reshape_only, quiet=True)
    assert not r.passed and "reshaping alone" in r.message and "values differ" not in r.message, r.message


def test_a_training_step_without_the_shift_gets_its_own_message():
    r = train_step_ex.check(train_step_without_shift, quiet=True)
    assert not r.passed and "NEXT word" in r.message and "values differ" not in r.message, r.message


def test_catalogue_lists_every_checker_with_its_count_and_one_checkers_messages():
    with contextlib.redirect_stdout(io.StringIO()) as out:
        catalogue()
    table = out.getvalue()
    for key, hints in known_mistakes().items():
        assert any(key in line and f" {len(hints)} " in line for line in table.splitlines()), key
    with contextlib.redirect_stdout(io.StringIO()) as out:
        catalogue("train_step_ex")
    assert all(m.hint in out.getvalue() for m in train_step_ex.mistakes)
    with pytest.raises(ValueError, match="no checker"):
        catalogue("no_such_ex")
