"""Strategies and checks shared by the property-based suite (tests/test_properties_*.py).

Every property test draws arguments that are each either good or bad, and then:
- all good: the call must return a correct result (the test checks a property of it);
- some bad: the call must raise ``ValueError`` or ``TypeError`` whose message names one of the bad
  arguments (``expect_refusal``), never return, never raise anything else.

An argument is drawn as ``Arg(value, ok)``: ``ok`` is the test's own judgement of that value.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import pytest
import torch
from hypothesis import settings
from hypothesis import strategies as st

HUGE = st.integers(10**12, 10**15)  # sizes whose tensors cannot fit any machine's memory


def heavy(test):
    """A quarter of the profile's examples (at least 5), for properties that build and run whole models."""
    return settings(max_examples=max(5, settings().max_examples // 4))(test)


@dataclass(frozen=True)
class Arg:
    value: object
    ok: bool

    def __repr__(self) -> str:  # hypothesis prints the falsifying example with this
        v = self.value
        shown = f"tensor{tuple(v.shape)}:{v.dtype}" if isinstance(v, torch.Tensor) and v.numel() > 6 else repr(v)
        return f"{'ok' if self.ok else 'BAD'}({shown})"


def good(strategy) -> st.SearchStrategy:
    return strategy.map(lambda v: Arg(v, True))


def bad(strategy) -> st.SearchStrategy:
    return strategy.map(lambda v: Arg(v, False))


# Values that are never an int, whatever the argument.
NOT_INT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),  # 2.0 included: a float is not a size
    st.booleans(),
    st.text(max_size=3),
    st.none(),
    st.complex_numbers(max_magnitude=10),
    st.sampled_from([torch.tensor(1.5), torch.tensor(True), torch.tensor([1, 2]), [1, 2], (3,)]),
)
# Values that are never a finite real number.
NOT_REAL = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, True, False, None, "1.0", 1j, [1.0], torch.tensor([1.0, 2.0])]),
)


def size(
    lo: int = 0, hi: int = 6, huge_ok: bool = False, none_ok: bool = False, huge: bool = True
) -> st.SearchStrategy:
    """A size argument: good ints in ``lo..hi``, or bad ones (below ``lo``, non-ints, huge unless ``huge_ok``).

    ``none_ok``: ``None`` is a good value (an optional size). ``huge=False``: draw no huge sizes at all.
    """
    not_int = NOT_INT.filter(lambda v: v is not None) if none_ok else NOT_INT
    choices = [good(st.integers(lo, hi)), good(st.integers(lo, hi)), bad(not_int), bad(st.integers(lo - 5, lo - 1))]
    if huge:
        choices.append(good(HUGE) if huge_ok else bad(HUGE))
    if none_ok:
        choices.append(good(st.none()))
    return st.one_of(*choices)


def names_of(message: str, names) -> bool:
    """Does ``message`` name one of ``names`` (case-insensitive; a short name must stand as a word)?"""
    text = message.lower()
    return any(re.search(rf"(?<![a-z0-9_]){re.escape(n.lower())}(?![a-z0-9_])", text) for n in names)


def expect_refusal(fn, bad_names, *args, **kwargs) -> Exception:
    """``fn(*args, **kwargs)`` must raise ValueError/TypeError whose message names one of ``bad_names``."""
    try:
        result = fn(*args, **kwargs)
    except (ValueError, TypeError) as err:
        assert names_of(str(err), bad_names), f"{type(err).__name__} does not name any of {bad_names}: {err}"
        return err
    pytest.fail(f"bad argument(s) {bad_names} accepted; returned {type(result).__name__}")


def call(fn, args: dict, aliases: dict | None = None, extra_bad: list | None = None):
    """Call ``fn(**values)``. If any ``Arg`` is bad (or ``extra_bad`` names a relation that fails),
    assert a clear refusal and return ``None``; else return the result.

    ``aliases``: other words a message may use for an argument (e.g. ``{"t_q": ["T_q"]}``).
    """
    aliases = aliases or {}
    values = {k: (a.value if isinstance(a, Arg) else a) for k, a in args.items()}
    bad_names = [k for k, a in args.items() if isinstance(a, Arg) and not a.ok] + list(extra_bad or [])
    if bad_names:
        words = [w for k in bad_names for w in (k, *aliases.get(k, []))]
        expect_refusal(fn, words, **values)
        return None
    return fn(**values)


def float_tensors(shape, dtype=torch.float32, lo=-3.0, hi=3.0) -> st.SearchStrategy:
    """Finite float tensors of ``shape`` drawn from a seed (cheap to generate, reproducible)."""

    def make(seed):
        u = torch.rand(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        return (u * (hi - lo) + lo).to(dtype)

    return st.integers(0, 2**31 - 1).map(make)


def int_tensors(shape, lo: int, hi: int, dtype=torch.long) -> st.SearchStrategy:
    """Random integer tensors of ``shape`` with values in ``lo .. hi - 1``."""
    return st.integers(0, 2**31 - 1).map(
        lambda seed: torch.randint(lo, hi, shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    )


def bool_tensors(shape, p_true: float | None = None) -> st.SearchStrategy:
    """Random bool tensors of ``shape`` (``p_true`` drawn if not given)."""
    probs = st.just(p_true) if p_true is not None else st.sampled_from([0.0, 0.3, 0.7, 1.0])
    return st.tuples(st.integers(0, 2**31 - 1), probs).map(
        lambda sp: torch.rand(shape, generator=torch.Generator().manual_seed(sp[0])) < sp[1]
    )
