"""Exercise 8.9 (000) for notebook 10: what the student produces, checked.

- :data:`evaluate_ex` -- ``evaluate_perplexity(model, batches)``: perplexity over batches of unequal size.
- :data:`train_step_ex` -- ``train_step(model, optimizer, x, y)``: one causal-LM step on a fixed batch; the
  checker runs two steps and compares the losses returned and the parameters reached.
- :data:`greedy_lm_ex` -- ``greedy_continue(model, ids, n_new)``: greedy decoding of a continuation.
- :data:`verdict_ex` -- ``verdict(results)`` (or the dict itself): the comparison with the LSTM, checked
  against the run's own numbers, ``{"Transformer": {...}, "LSTM": {...}}`` with ``perplexity``,
  ``seconds_per_epoch`` and ``parameters``.

The checkers run on :func:`tiny_lm`, a seeded one-block decoder of the package with dropout.
"""

__all__ = ["evaluate_ex", "greedy_lm_ex", "train_step_ex", "verdict_ex"]  # what a notebook uses

import math

import torch
import torch.nn.functional as F

from transformer_nb.core.config import TransformerConfig
from transformer_nb.core.transformer import Transformer
from transformer_nb.exercises import Exercise, answer_hints, gen, seeded
from transformer_nb.exercises.compare import allclose, is_number, same_answers
from transformer_nb.exercises.solutions import lm as sol

NOTEBOOK = "10_wikitext_lm"  # the notebook whose exercise cells use this module

VOCAB = 11
TINY = TransformerConfig(vocab=VOCAB, d_model=8, n_heads=2, d_ff=16, n_layers=1, max_len=16, dropout=0.25)


def tiny_lm(seed: int = 0) -> Transformer:
    """A seeded decoder of the package with dropout (the mistakes that leave it on show), in milliseconds:
    ``forward(ids (B, T)) -> (logits (B, T, VOCAB), None)``."""
    return seeded(Transformer, seed)(TINY)


def _stream(seed, n):
    return torch.randint(0, VOCAB, (n,), generator=gen(seed))


def _batches(seed, shapes):
    out, ids = [], _stream(seed, sum(b * (t + 1) for b, t in shapes))
    for b, t in shapes:
        chunk, ids = ids[: b * (t + 1)].view(b, t + 1), ids[b * (t + 1) :]
        out.append((chunk[:, :-1], chunk[:, 1:]))
    return out


def _eval(combine, eval_mode=True):
    def fn(model, batches):
        if eval_mode:
            model.eval()
        sums, counts = [], []
        with torch.no_grad():
            for x, y in batches:
                sums.append(F.cross_entropy(model(x)[0].flatten(0, 1), y.flatten(), reduction="sum").item())
                counts.append(y.numel())
        return combine(sums, counts)

    return fn


_CRASHES = {
    "Expected target size": "F.cross_entropy wants logits (N, V) and targets (N,): flatten B and T.",
    "tuple": "The model returns a pair (logits, None), not the logits: write `logits, _ = model(x)`.",
}
_EXACT = lambda s, c: math.exp(sum(s) / sum(c))

evaluate_ex = Exercise(
    "Exercise 8.9: perplexity of a model over batches",
    sol.evaluate_perplexity,
    name="evaluate_ex",
    harness=seeded,
    fresh_args=True,
    cases=[
        ("2 equal batches", lambda: (tiny_lm(1), _batches(1, [(2, 6), (2, 6)]))),
        ("batches of 2×8, 3×5 and 1×2 targets", lambda: (tiny_lm(2), _batches(2, [(2, 8), (3, 5), (1, 2)]))),
    ],
    mistakes=[
        _eval(_EXACT, eval_mode=False),
        _eval(lambda s, c: sum(math.exp(a / b) for a, b in zip(s, c)) / len(s)),
        _eval(lambda s, c: math.exp(sum(a / b for a, b in zip(s, c)) / len(s))),
        _eval(lambda s, c: sum(s) / sum(c)),
        _eval(lambda s, c: math.exp(sum(s) / len(s))),
        _eval(lambda s, c: 2 ** (sum(s) / sum(c))),
    ],
    compare=lambda out, ref: allclose(out, ref, atol=1e-9, rtol=1e-6),
    crash_hints=_CRASHES,
)


def _step(zero=True, step=True, train=True, reduction="mean", double_shift=False, targets="y"):
    def fn(model, optimizer, x, y):
        model.train(train)
        if zero:
            optimizer.zero_grad()
        logits, _ = model(x)
        if double_shift:
            logits, y = logits[:, :-1], y[:, 1:]
        if targets == "x":  # no shift at all: each position's own word is its target
            y = x
        elif targets == "x shifted":  # the shift rebuilt from x, dropping the last position
            logits, y = logits[:, :-1], x[:, 1:]
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction=reduction)
        loss.backward()
        if step:
            optimizer.step()
        return loss.item()

    return fn


def _two_steps(fn):
    def run(model, optimizer, batches):
        losses = seeded(lambda: tuple(fn(model, optimizer, x, y) for x, y in batches))()
        return losses, torch.cat([p.detach().flatten() for p in model.parameters()])

    return run


def _train_case(seed):
    model = tiny_lm(seed)
    return model, torch.optim.AdamW(model.parameters(), lr=0.05), _batches(seed, [(2, 6), (2, 6)])


class _StepExercise(Exercise):
    def type_problem(self, out, ref):
        if not all(is_number(v) or (isinstance(v, torch.Tensor) and v.numel() == 1) for v in out[0]):
            return "train_step should return the batch's loss as one number (loss.item())."
        return None


train_step_ex = _StepExercise(
    "Exercise 8.9: one training step",
    sol.train_step,
    name="train_step_ex",
    harness=_two_steps,
    fresh_args=True,
    cases=[
        ("two steps of AdamW on fixed batches", lambda: _train_case(3)),
        ("another model and batches", lambda: _train_case(4)),
    ],
    mistakes=[
        _step(zero=False),
        _step(step=False),
        _step(train=False),
        _step(reduction="sum"),
        _step(double_shift=True),
        _step(targets="x"),
        _step(targets="x shifted"),
    ],
    compare=lambda out, ref: allclose(out, ref, atol=1e-6, rtol=1e-5),
    crash_hints=_CRASHES,
)


def _greedy(position=-1, feed_back=True, only_new=False, eval_mode=True, sample=False):
    def fn(model, ids, n_new):
        model.train(not eval_mode)
        prompt = ids
        with torch.no_grad():
            for _ in range(n_new):
                logits = model(ids if feed_back else prompt)[0][:, position]
                nxt = torch.multinomial(logits.softmax(-1), 1)[:, 0] if sample else logits.argmax(-1)
                ids = torch.cat([ids, nxt[:, None]], dim=1)
        return ids[:, prompt.shape[1] :] if only_new else ids

    return fn


greedy_lm_ex = Exercise(
    "Exercise 8.9: greedy continuation",
    sol.greedy_continue,
    name="greedy_lm_ex",
    harness=seeded,
    fresh_args=True,
    cases=[
        ("one prompt of 5 tokens, 8 new", lambda: (tiny_lm(5), _stream(5, 5)[None], 8)),
        ("two prompts of 3 tokens, 6 new", lambda: (tiny_lm(6), _stream(6, 6).view(2, 3), 6)),
    ],
    mistakes=[
        _greedy(position=0),
        _greedy(feed_back=False),
        _greedy(only_new=True),
        _greedy(eval_mode=False),
        _greedy(sample=True),
    ],
    compare=lambda out, ref: isinstance(out, torch.Tensor) and allclose(out, ref, atol=0, rtol=0),
    crash_hints=_CRASHES,
)


_QUESTIONS = {
    "lower_perplexity": "compare the two models' final training perplexities in this run; lower is better.",
    "faster_per_epoch": "compare this run's seconds per epoch (on this machine, not the hint's GPU).",
    "comparable_size": "comparable means parameter counts within 25% of each other (ratio in (0.8, 1.25)).",
}


def _results(ppl, seconds, params):
    keys = ("perplexity", "seconds_per_epoch", "parameters")
    return ({n: dict(zip(keys, (ppl[i], seconds[i], params[i]))) for i, n in enumerate(("Transformer", "LSTM"))},)


verdict_ex = Exercise(
    "Exercise 8.9: the comparison with the LSTM",
    sol.verdict,
    name="verdict_ex",
    cases=[
        ("the Transformer wins both", lambda: _results((180.0, 240.0), (3.0, 5.0), (2_570_628, 2_561_000))),
        ("the LSTM is faster", lambda: _results((150.0, 260.0), (9.0, 4.0), (2_570_628, 2_600_000))),
        ("the LSTM wins both, at half the size", lambda: _results((300.0, 200.0), (6.0, 2.0), (2_570_628, 1_200_000))),
    ],
    compare=same_answers,
    properties=answer_hints(sol.verdict, _QUESTIONS),
)
