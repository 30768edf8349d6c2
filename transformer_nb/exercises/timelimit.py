"""Run a student's function with a time limit, so that no answer can hang a checker.

In the main thread (a notebook cell, a test) a ``SIGALRM`` timer interrupts the function where it is and
raises :class:`TimeLimitExceeded`. An answer that catches it and carries on cannot escape: from then on the
timer fires again every ``REPEAT_S`` seconds, and a trace function raises it again at every line the
answer's frames execute, including inside its ``except`` clause, until the call has unwound. (An answer
cannot reset the timer either: ``readymade.ALWAYS`` refuses ``signal.setitimer`` and its kind while the
checker runs it.)

Elsewhere (another thread, or a platform without ``setitimer``) the function runs in a worker thread (with
tracing enabled, which slows it a little); when the time is up every frame of the worker raises the
exception at its next line, and it is also raised asynchronously, again and again, until the worker has
ended, so that no abandoned thread keeps using the CPU.
"""

import _signal
import ctypes
import signal
import sys
import threading
import time
from pathlib import Path

import torch

#: After the first interruption, how often the timer fires again while the answer has not unwound.
REPEAT_S = 0.05
#: How long a worker thread may take to end once its time is up, before the checker gives up waiting.
GRACE_S = 2.0

# The built-ins, captured at import: while a checker runs an answer, the module attributes are tripwires
# (readymade.ALWAYS).
_setitimer, _getitimer = getattr(_signal, "setitimer", None), getattr(_signal, "getitimer", None)
_set_handler, _settrace, _gettrace = _signal.signal, sys.settrace, sys.gettrace


class TimeLimitExceeded(BaseException):
    """Raised inside the student's function when its time is up (a BaseException, so that a student's
    ``except Exception`` cannot swallow it)."""


#: Code in these folders is never interrupted a second time (a context manager's ``__exit__`` must run).
LIBRARIES = (Path(torch.__file__).resolve().parent, Path(__file__).resolve().parents[1])


def _library(frame) -> bool:
    path = Path(frame.f_code.co_filename)
    return any(path.is_relative_to(lib) for lib in LIBRARIES)


def _killer(base):
    """A trace function that raises TimeLimitExceeded at every line the answer's own frames (not the
    libraries') execute below ``base``."""

    def trace(frame, event, arg):
        if frame is base or _library(frame):
            return None
        if event in ("line", "call"):
            raise TimeLimitExceeded
        return trace

    return trace


def _with_alarm(fn, args, seconds):
    base, previous_trace, state = sys._getframe(), _gettrace(), {"fired": False, "done": False}

    def on_alarm(signum, frame):
        if state["done"] or frame is base:  # the call has returned or is unwinding: nothing to interrupt
            return
        kill = _killer(base)
        f = frame
        while f is not None and f is not base:  # the frames already running: trace them from their next line
            f.f_trace, f.f_trace_lines = kill, True
            f = f.f_back
        _settrace(kill)
        first, state["fired"] = not state["fired"], True
        if first or not _library(frame):
            raise TimeLimitExceeded

    previous = _set_handler(signal.SIGALRM, on_alarm)
    outer, _ = _getitimer(signal.ITIMER_REAL)  # a timer someone else set: restored afterwards
    left = 0.0
    try:
        _setitimer(signal.ITIMER_REAL, seconds if not outer else min(seconds, outer), REPEAT_S)
        try:
            return fn(*args)
        finally:
            state["done"] = True
            left, _ = _setitimer(signal.ITIMER_REAL, 0)
            _settrace(previous_trace)
    finally:
        _set_handler(signal.SIGALRM, previous)
        if outer:
            _setitimer(signal.ITIMER_REAL, max(outer - (seconds - left), 1e-3))


def _raise_in(thread: threading.Thread) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(TimeLimitExceeded))


def _with_thread(fn, args, seconds):
    box = {}

    def run():
        _settrace(lambda frame, event, arg: None)  # tracing on in this thread, so that frames can be traced later
        try:
            box["value"] = fn(*args)
        except BaseException as err:  # handed to the caller below
            box["error"] = err
        finally:
            _settrace(None)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        end, kill = time.monotonic() + GRACE_S, _killer(None)
        while worker.is_alive() and time.monotonic() < end:  # again and again: the answer may catch it
            f = sys._current_frames().get(worker.ident)
            while f is not None:  # every frame of the worker raises at its next line
                f.f_trace, f.f_trace_lines = kill, True
                f = f.f_back
            _raise_in(worker)
            worker.join(REPEAT_S)
        raise TimeLimitExceeded
    if "error" in box:
        raise box["error"]
    return box["value"]


def call_with_time_limit(fn, args: tuple, seconds: float):
    """``fn(*args)``, or :class:`TimeLimitExceeded` after ``seconds`` of wall-clock time."""
    from transformer_nb.core.utils import as_real

    seconds = as_real("seconds", seconds, positive=True)
    if not callable(fn):
        raise TypeError(f"fn must be a function, got {type(fn).__name__}")
    if not isinstance(args, tuple):
        raise TypeError(f"args must be a tuple of fn's arguments, got {type(args).__name__}")
    main = threading.current_thread() is threading.main_thread()
    if main and _setitimer is not None:
        return _with_alarm(fn, args, seconds)
    return _with_thread(fn, args, seconds)
