"""The checker framework: a nudge that names the symptom, escalating hints, the solution only on request, a
time limit for an accidental infinite loop, the kind of an answer (None, type, device, dtype) named before its
values, and a nudge when an answer calls the ready-made function it was asked to write."""

import time

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer_nb.core.rope import apply_rope
from transformer_nb.exercises import Exercise, Mistake, Property, attention, block, rope
from transformer_nb.exercises.compare import type_problem
from transformer_nb.exercises.warmup import scores_ex, softmax_ex
from transformer_nb.reference import rope_matrix


def _ref(x):
    return torch.softmax(x, dim=-1)


EX = Exercise(
    "softmax rows",
    _ref,
    name="EX",
    cases=[("3x4", lambda: (torch.randn(3, 4),)), ("2x5", lambda: (torch.randn(2, 5),))],
    mistakes=[Mistake(lambda x: torch.softmax(x, dim=0), "columns, not rows")],
    properties=[Property(lambda args, out: bool(torch.all(out >= 0)), "weights must be non-negative")],
    hints=["nudge", "more", "most"],
    time_limit=0.5,
)


@pytest.mark.parametrize(
    "ex, answer, words",
    [
        (EX, lambda x: torch.softmax(x, dim=0), "columns, not rows"),  # a typical mistake
        (EX, lambda x: _ref(x) - 1.0, "non-negative"),  # a property
        (EX, lambda x: _ref(x).T, "shape"),
        (EX, lambda x: _ref(x) * float("nan"), "NaN"),
        (EX, lambda x: _ref(x) * 2, "EX.hint()"),
        (scores_ex, lambda q, k: None, "return` missing"),
        (softmax_ex, lambda x: torch.empty_like(x, device="meta"), "meta device"),
        (EX, lambda x: (_ref(x).to("meta"),), "meta device"),  # inside a container too
        (softmax_ex, lambda x: torch.softmax(x, dim=-1).to(torch.complex64), "complex"),
        (EX, torch.ones(3), "pass your function itself"),
        (EX, lambda x: 1 / 0, "raised ZeroDivisionError"),  # reported plainly, never raised
    ],
)
def test_a_failure_names_the_mistake_or_the_symptom(ex, answer, words):
    r = ex.check(answer, quiet=True)
    assert not r.passed and words in r.message, r.message


def test_an_infinite_loop_hits_the_time_limit_and_says_so():
    def forever(x):
        while True:
            pass

    start = time.perf_counter()
    r = EX.check(forever, quiet=True)
    assert not r.passed and "did not finish within 0.5 s" in r.message
    assert time.perf_counter() - start < 3


def test_dtype_and_device_come_before_values():
    ref = torch.ones(2, 3)
    assert "meta" in type_problem(torch.ones(2, 3, device="meta"), ref)
    assert "bool" in type_problem(torch.ones(2, 3, dtype=torch.bool), ref)
    assert "integer" in type_problem(torch.ones(2, 3), torch.ones(2, 3, dtype=torch.long))
    assert type_problem(torch.ones(2, 3, dtype=torch.float64), ref) is None  # float64 for float32: values decide
    assert "tuple of 2" in type_problem(ref, (ref, ref))


def test_extensions_are_reported_separately_and_never_fail_the_exercise():
    ex = Exercise(
        "abs",
        lambda x: x.abs(),
        name="ex",
        cases=[("positive", lambda: (torch.tensor([1.0, 2.0]),))],
        extensions=[("negative", lambda: (torch.tensor([-1.0]),), "negative inputs too")],
    )
    r = ex.check(lambda x: x, quiet=True)
    assert r.passed and r.extension and "negative inputs too" in r.message
    r = ex.check(lambda x: x.abs(), quiet=True)
    assert r.passed and r.extension is None


def test_solution_source_has_its_imports_and_the_stubs_name():
    src = softmax_ex.solution_source()
    assert src.startswith("def my_softmax(x):") and softmax_ex.defined_names() == ["my_softmax"]
    assert "import math" in EX.solution_source() or "_ref" in EX.solution_source()


def test_a_cell_ending_with_check_shows_the_message_once():
    """IPython displays a cell's last value: the Result must not repeat what check() printed."""
    from IPython.core.interactiveshell import InteractiveShell

    from transformer_nb.exercises import Result

    shell = InteractiveShell.instance()
    shell.user_ns["Result"] = Result
    from IPython.utils.capture import capture_output

    with capture_output() as out:
        shell.run_cell('print("✗ message"); Result(False, "✗ message")', store_history=False)
    assert out.stdout.count("✗ message") == 1, out.stdout


def _torch_stack(d, h, f, n, norm_first=True):
    layer = lambda: nn.TransformerEncoderLayer(d, h, f, dropout=0.1, batch_first=True, norm_first=norm_first)
    return nn.Sequential(*[layer() for _ in range(n)])


def _rope_scores_via_package(x, w_q, w_k, n_heads):
    t, d = x.shape
    q = apply_rope((x @ w_q).view(t, n_heads, d // n_heads).transpose(0, 1))
    k = apply_rope((x @ w_k).view(t, n_heads, d // n_heads).transpose(0, 1))
    return q @ k.transpose(-2, -1) / (d // n_heads) ** 0.5


@pytest.mark.parametrize(
    "ex, answer, name",
    [
        (
            attention.attention_ex,
            lambda q, k, v, mask=None: (F.scaled_dot_product_attention(q, k, v), None),
            "scaled_dot_product_attention",
        ),
        (block.encoder_stack_ex, _torch_stack, "TransformerEncoderLayer"),
        (rope.rope_scores_ex, _rope_scores_via_package, "apply_rope"),
        (rope.relative_score_ex, lambda q, k, delta: q @ rope_matrix(delta, q.shape[-1]) @ k, "rope_matrix"),
    ],
)
def test_an_answer_that_calls_the_ready_made_function_is_told_so(ex, answer, name):
    r = ex.check(answer, quiet=True)
    assert not r.passed and f"calls {name}" in r.message and "ready-made" in r.message
    assert ex.check(ex.reference, quiet=True).passed  # the reference is written from tensor operations
