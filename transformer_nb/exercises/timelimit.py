"""Run a student's function with a time limit, so that an infinite loop cannot hang a checker.

In the main thread (a notebook cell, a test) a ``SIGALRM`` timer interrupts the function where it is
and the checker says so. Elsewhere (another thread, or a platform without ``setitimer``) the function runs
in a daemon thread that is abandoned when the time is up; the checker still answers.
"""

import signal
import threading


class TimeLimitExceeded(BaseException):
    """Raised inside the student's function when its time is up (a BaseException, so that a student's
    ``except Exception`` cannot swallow it)."""


def _with_alarm(fn, args, seconds):
    def on_alarm(signum, frame):
        raise TimeLimitExceeded

    previous = signal.signal(signal.SIGALRM, on_alarm)
    outer, _ = signal.getitimer(signal.ITIMER_REAL)  # a timer someone else set: restored afterwards
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds if not outer else min(seconds, outer))
        try:
            return fn(*args)
        finally:
            left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (seconds - left), 1e-3))


def _with_thread(fn, args, seconds):
    box = {}

    def run():
        try:
            box["value"] = fn(*args)
        except BaseException as err:  # handed to the caller below
            box["error"] = err

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeLimitExceeded
    if "error" in box:
        raise box["error"]
    return box["value"]


def call_with_time_limit(fn, args: tuple, seconds: float):
    """``fn(*args)``, or :class:`TimeLimitExceeded` after ``seconds`` of wall-clock time."""
    if seconds <= 0:
        raise ValueError(f"seconds must be > 0, got {seconds}")
    main = threading.current_thread() is threading.main_thread()
    if main and hasattr(signal, "setitimer"):
        return _with_alarm(fn, args, seconds)
    return _with_thread(fn, args, seconds)
