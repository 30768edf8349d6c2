"""Hostile answers cannot hang or escape a checker, nor pass by faking a comparison: a loop that catches the
time-limit exception, a reset timer, a replaced signal handler and sys.exit() end in a time-limit or refusal
message and leave the timer, the handler, tracing and grad mode as they were; outside the main thread no
abandoned worker keeps running; the reference's own output dressed as a tensor subclass, a complex tensor or
a number that claims equality is refused with a message that says so, by every checker."""

import math
import signal
import sys
import threading
import time

import pytest
import torch

from transformer_nb.exercises import Exercise, all_exercises

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

EX = Exercise(
    "a tiny exercise", lambda x: x * 2, cases=[("x", lambda: (torch.ones(3),))], name="tiny_ex", time_limit=0.5
)
PLAIN = {k: ex for k, ex in all_exercises().items() if ex.harness is None}


def _kernel_state():
    return (
        signal.getitimer(signal.ITIMER_REAL),
        signal.getsignal(signal.SIGALRM),
        sys.gettrace(),
        torch.is_grad_enabled(),
    )


def _check(answer):
    before = _kernel_state()
    start = time.perf_counter()
    r = EX.check(answer, quiet=True)
    assert time.perf_counter() - start < 3, "the checker took too long"
    assert _kernel_state() == before, "the checker left the timer, the handler, tracing or grad mode changed"
    assert EX.check(lambda x: x * 2, quiet=True).passed, "the checker still works afterwards"
    return r


def catches_the_time_limit(x):
    while True:
        try:
            while True:
                pass
        except BaseException:
            continue


def sleeps_and_catches(x):
    while True:
        try:  # noqa: SIM105 (what a hostile answer writes)
            time.sleep(10)
        except BaseException:
            pass


def resets_the_timer(x):
    signal.setitimer(signal.ITIMER_REAL, 0)
    while True:
        pass


def replaces_the_handler(x):
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    while True:
        pass


def exits(x):
    sys.exit(0)


def test_a_loop_that_catches_the_time_limit_still_ends_in_a_time_limit_message():
    for answer in (catches_the_time_limit, sleeps_and_catches):
        r = _check(answer)
        assert not r.passed and "did not finish within 0.5 s" in r.message, r.message


def test_resetting_the_timer_or_its_handler_is_refused():
    r = _check(resets_the_timer)
    assert not r.passed and "signal.setitimer" in r.message and "refused" in r.message, r.message
    r = _check(replaces_the_handler)
    assert not r.passed and "signal.signal" in r.message and "refused" in r.message, r.message


def test_sys_exit_in_an_answer_is_refused_and_the_process_goes_on():
    for answer in (exits, lambda x: exit()):
        r = _check(answer)
        assert not r.passed and "sys.exit()" in r.message and "refused" in r.message, r.message


def test_outside_the_main_thread_no_abandoned_worker_keeps_running():
    before, box = set(threading.enumerate()), {}
    worker = threading.Thread(target=lambda: box.setdefault("r", EX.check(catches_the_time_limit, quiet=True)))
    worker.start()
    worker.join(10)
    assert not box["r"].passed and "did not finish" in box["r"].message
    deadline = time.monotonic() + 3
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(threading.enumerate()) - before, "a worker thread was left running"
    cpu = time.process_time()
    time.sleep(0.5)
    assert time.process_time() - cpu < 0.2, "something keeps using the CPU"


class Faker(torch.Tensor):
    """Claims to equal anything under torch.allclose and torch.equal."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


class Liar(float):
    __eq__ = lambda self, other: True
    __ne__ = lambda self, other: False
    __hash__ = float.__hash__


def _dress(out, how):
    """The reference's output with every tensor (or number) replaced by a hostile look-alike."""
    if isinstance(out, (tuple, list)):
        return type(out)(_dress(o, how) for o in out)
    if isinstance(out, dict):
        return {k: _dress(v, how) for k, v in out.items()}
    if isinstance(out, torch.Tensor):
        return {"subclass": lambda t: t.as_subclass(Faker), "complex": lambda t: t.to(torch.complex128)}.get(
            how, lambda t: t
        )(out)
    if isinstance(out, float) and not isinstance(out, bool) and how == "liar":
        return Liar(out)
    return out


def _has(out, kind):
    if isinstance(out, (tuple, list)):
        return any(_has(o, kind) for o in out)
    if isinstance(out, dict):
        return any(_has(v, kind) for v in out.values())
    return isinstance(out, kind) and not isinstance(out, bool)


@pytest.mark.parametrize("how, words", [("subclass", "subclass of torch.Tensor"), ("complex", "complex")])
@pytest.mark.parametrize("key", sorted(PLAIN))
def test_the_references_own_tensors_dressed_up_are_refused(key, how, words):
    ex = PLAIN[key]
    sample = ex.reference(*ex.cases[0][1]())
    if not _has(sample, torch.Tensor):
        pytest.skip("no tensor in this answer")
    r = ex.check(lambda *a: _dress(ex.reference(*a), how), quiet=True)
    assert not r.passed and words in r.message, r.message


@pytest.mark.parametrize("key", sorted(PLAIN))
def test_numbers_that_claim_equality_are_refused(key):
    ex = PLAIN[key]
    sample = ex.reference(*ex.cases[0][1]())
    if not _has(sample, float):
        pytest.skip("no float in this answer")
    r = ex.check(lambda *a: _dress(ex.reference(*a), "liar"), quiet=True)
    assert not r.passed and "Liar" in r.message, r.message


def test_a_complex_number_is_refused():
    ex = Exercise("a number", lambda x: math.pi, cases=[("x", lambda: (1,))], name="pi_ex")
    r = ex.check(lambda x: complex(math.pi, 0), quiet=True)
    assert not r.passed and "complex number" in r.message
