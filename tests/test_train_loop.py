"""The one training loop (``transformer_nb.train``) does what its docstring says."""

import itertools
import json
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.train import Progress, train, unwrap


def regression(seed=0, n_batches=64):
    """A linear model, its loss and an endless stream of (x, y) batches of y = x @ w_true."""
    g = torch.Generator().manual_seed(seed)
    w_true = torch.randn(4, 1, generator=g)
    data = [(x, x @ w_true) for x in torch.randn(n_batches, 16, 4, generator=g)]
    torch.manual_seed(seed)
    model = nn.Linear(4, 1)
    return model, (lambda m, b: F.mse_loss(m(b[0]), b[1])), itertools.cycle(data)


def sgd_train(loss_fn=None, **kw):
    """``train`` on ``regression()`` with SGD at lr 0.01, no bar: (model, history)."""
    model, mse, batches = regression()
    return model, train(model, loss_fn or mse, batches, torch.optim.SGD(model.parameters(), lr=0.01), bar=False, **kw)


class FakeClock:
    """Each call advances one second: a step (timed by two calls) lasts exactly 1 s."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        self.t += 1.0
        return self.t


def test_steps_losses_and_schedules_are_recorded_per_step():
    model, loss_fn, batches = regression()
    ref_model, _, ref_batches = regression()
    opts = [torch.optim.SGD([model.weight], lr=0.3), torch.optim.SGD([model.bias], lr=0.2)]
    scheds = [torch.optim.lr_scheduler.LambdaLR(o, lambda s: 0.9**s) for o in opts]
    hist = train(model, loss_fn, batches, opts, scheds, steps=40, log_every=7, bar=False)
    assert hist["steps"] == 40 and len(hist["loss"]) == 40 and len(hist["lr"]) == 40
    assert hist["lr"][:3] == pytest.approx([0.3, 0.27, 0.243])  # the rate each step used
    assert opts[1].param_groups[0]["lr"] == pytest.approx(0.2 * 0.9**40)  # every scheduler stepped
    assert not model.training  # left in eval mode
    json.dumps(hist)  # plain lists and numbers: cacheable
    ref_opts = [torch.optim.SGD([ref_model.weight], lr=0.3), torch.optim.SGD([ref_model.bias], lr=0.2)]
    for step in range(9):  # the logged loss of each step is that step's loss
        loss = loss_fn(ref_model, next(ref_batches))
        for o in ref_opts:
            o.zero_grad()
        loss.backward()
        for o in ref_opts:
            o.step()
            o.param_groups[0]["lr"] *= 0.9
        assert hist["loss"][step] == pytest.approx(loss.item(), rel=1e-6)


def test_clipping_records_the_norm_before_clipping_and_clips():
    model, loss_fn, batches = regression()
    ref, _, ref_batches = regression()
    hist = train(model, loss_fn, batches, torch.optim.SGD(model.parameters(), lr=0.1), steps=1, clip=0.01, bar=False)
    loss = loss_fn(ref, next(ref_batches))
    loss.backward()
    norm = torch.cat([p.grad.flatten() for p in ref.parameters()]).norm()
    assert hist["grad_norm"] == pytest.approx([norm.item()], rel=1e-5)
    with torch.no_grad():  # the step moved the weights by lr * clipped gradient: norm 0.1 * 0.01
        moved = torch.cat([(p - q).flatten() for p, q in zip(model.parameters(), ref.parameters())]).norm()
    assert moved.item() == pytest.approx(0.1 * 0.01, rel=1e-4)


def test_a_wall_clock_budget_counts_training_only():
    clock = FakeClock()

    def slow_eval(m, hist):
        clock.t += 100.0  # evaluating takes long; it must not count towards the budget
        return {"metric": len(hist["loss"])}

    _, hist = sgd_train(budget_s=5, clock=clock, evaluate=slow_eval, eval_every_s=2)
    assert hist["steps"] == 5 and hist["train_seconds"] == 5.0
    assert hist["eval_step"] == [2, 4, 5] and hist["metric"] == [2.0, 4.0, 5.0]
    assert hist["eval_seconds"] >= 300


def test_progress_follows_the_budget_for_a_lambda_schedule():
    model, loss_fn, batches = regression()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    progress = Progress()
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda _: 1.0 - progress.value)
    hist = train(model, loss_fn, batches, opt, sched, budget_s=4, clock=FakeClock(), progress=progress, bar=False)
    assert hist["lr"] == pytest.approx([1.0, 0.75, 0.5, 0.25])
    assert progress.value == 1.0


def test_evaluation_points_early_stop_and_skips():
    calls = []

    def ev(m, hist):
        calls.append(hist["steps"])
        if hist["steps"] == 6:
            return None  # skipped: not recorded
        return {"steps_seen": hist["steps"]}

    stop = lambda metrics: metrics["steps_seen"] >= 12
    _, hist = sgd_train(steps=20, evaluate=ev, eval_every=3, eval_at=[0, 5], stop=stop)
    assert calls == [0, 3, 5, 6, 9, 12]
    assert hist["eval_step"] == [0, 3, 5, 9, 12] and hist["stopped"] and hist["steps"] == 12
    _, hist = sgd_train(steps=7, evaluate=ev)
    assert hist["eval_step"] == [7]  # always once at the end


def test_bf16_autocast_on_cpu():
    seen = []

    def loss_bf16(m, b):
        out = m(b[0])
        seen.append(out.dtype)
        return F.mse_loss(out.float(), b[1])

    model, _ = sgd_train(loss_bf16, steps=2, bf16=True)
    assert seen == [torch.bfloat16] * 2 and model.weight.dtype == torch.float32


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({}, "exactly one of steps= or budget_s="),
        ({"steps": 3, "budget_s": 1.0}, "exactly one of steps= or budget_s="),
        ({"steps": -1}, "steps must be"),
        ({"budget_s": math.inf}, "budget_s must be"),
        ({"steps": 3, "log_every": 0}, "log_every"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, words):
    with pytest.raises(ValueError, match=words):
        sgd_train(**kwargs)
    with pytest.raises(ValueError, match="optimizers"):
        train(*regression(), [], steps=3)


def test_zero_steps_and_unwrap():
    model, hist = sgd_train(steps=0)
    assert hist["steps"] == 0 and hist["loss"] == []
    assert unwrap(model) is model
