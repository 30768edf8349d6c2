"""Property-based tests of the infrastructure: ``checks`` (a check passes exactly when its condition holds,
and prints the expected value), ``utils`` (argument helpers, profiles, devices) and ``companion.serves``.
Bad arguments raise a ``ValueError``/``TypeError`` that names the argument."""

import contextlib
import io
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from property_helpers import NOT_REAL, expect_refusal, float_tensors, int_tensors

from transformer_nb import checks, companion, env
from transformer_nb.core import utils

FINITE = st.floats(-1e6, 1e6, allow_nan=False)


def printed(fn, *args, **kwargs) -> str:
    """What ``fn`` prints (capsys does not mix with hypothesis: one fixture for many examples)."""
    with contextlib.redirect_stdout(io.StringIO()) as out:
        fn(*args, **kwargs)
    return out.getvalue()


@given(expected=FINITE, delta=st.floats(-1.0, 1.0), atol=st.floats(0, 0.5), rtol=st.floats(0, 0.1))
def test_check_close_passes_exactly_within_tolerance(expected, delta, atol, rtol):
    actual = expected + delta
    err, tol = abs(actual - expected), atol + rtol * abs(expected)
    if math.isclose(err, tol, rel_tol=1e-9, abs_tol=1e-12):
        return  # on the boundary, float rounding decides
    if err <= tol:
        out = printed(checks.check_close, "x", actual, expected, atol=atol, rtol=rtol)
        assert out.startswith("✓ x ≈ ") and f"{expected:.6g}" in out
    else:
        with pytest.raises(AssertionError, match="expected"):
            checks.check_close("x", actual, expected, atol=atol, rtol=rtol)


@given(a=int_tensors((2, 3), 0, 3), b=int_tensors((2, 3), 0, 3))
def test_check_equal_passes_exactly_when_equal(a, b):
    if torch.equal(a, b):
        assert printed(checks.check_equal, "t", a, b).startswith("✓ t = ")
    else:
        with pytest.raises(AssertionError, match="expected"):
            checks.check_equal("t", a, b)


@given(
    cond=st.one_of(
        st.booleans(),
        st.integers(1, 4).flatmap(lambda n: st.lists(st.booleans(), min_size=n, max_size=n).map(torch.tensor)),
    )
)
def test_check_true_passes_exactly_when_all_true(cond):
    holds = bool(cond.all()) if isinstance(cond, torch.Tensor) else cond
    if holds:
        assert printed(checks.check_true, "c", cond) == "✓ c: True\n"
    else:
        with pytest.raises(AssertionError):
            checks.check_true("c", cond)


@given(cond=st.one_of(st.integers(), st.floats(), st.text(max_size=2), st.lists(st.booleans(), max_size=2), st.none()))
def test_check_true_refuses_non_bools(cond):
    expect_refusal(checks.check_true, ["condition"], "c", cond)


@given(
    word=st.text(alphabet="abcdefgh", min_size=1, max_size=6), exc=st.sampled_from([ValueError, TypeError, KeyError])
)
def test_check_raises_accepts_the_right_error_and_no_other(word, exc):
    def raiser():
        raise exc(f"bad {word} here")

    assert word in printed(checks.check_raises, exc, word, raiser)
    with pytest.raises(AssertionError, match="does not mention"):
        checks.check_raises(exc, word + "zz", raiser)
    other = ValueError if exc is not ValueError else TypeError
    with pytest.raises(AssertionError, match="was raised"):
        checks.check_raises(other, word, raiser)


@given(
    bad=st.one_of(NOT_REAL.filter(lambda v: v is not None), st.floats(max_value=-1e-9)),
    which=st.sampled_from(["atol", "rtol"]),
)
def test_check_close_refuses_bad_tolerances(bad, which):
    expect_refusal(checks.check_close, [which, "atol and rtol"], "x", 1.0, 1.0, **{which: bad})


@given(x=float_tensors((3,)), y=float_tensors((3,)))
def test_check_close_on_tensors_agrees_with_the_max_error(x, y):
    err = (x.double() - y.double()).abs().max().item()
    if abs(err - 0.5) < 1e-9:
        return
    if err <= 0.5:
        checks.check_close("t", x, y, atol=0.5)
    else:
        with pytest.raises(AssertionError):
            checks.check_close("t", x, y, atol=0.5)


# --------------------------------------------------------------------------- utils (as_int, as_real: their own test)


@given(
    name=st.one_of(
        st.sampled_from(["cpu", "meta", "cuda", "cuda:3", "mps", "xla", "gpu", "", "cpu:0"]), st.text(max_size=5)
    )
)
def test_as_device_accepts_exactly_what_exists(name):
    try:
        parsed = torch.device(name)
    except RuntimeError:
        parsed = None
    exists = parsed is not None and (parsed.type in ("cpu", "meta") or str(parsed) in utils.available_devices())
    if exists:
        assert utils.as_device("device", name) == parsed
    else:
        expect_refusal(utils.as_device, ["device"], "device", name)


@given(
    value=st.one_of(
        st.sampled_from(["quick", "full", " Quick ", "FULL", "", "fast", "ful"]),
        st.text(st.characters(exclude_characters="\x00", codec="utf-8", exclude_categories=["Cs"]), max_size=4),
    )
)
def test_profile_accepts_exactly_the_known_profiles(monkeypatch_session, value):
    monkeypatch_session.setenv("TNB_PROFILE", value)
    name = value.strip().lower() or "full"
    if name in env.PROFILES:
        assert env.profile() == name and env.pick(quick=1, full=2) == (1 if name == "quick" else 2)
    else:
        expect_refusal(env.profile, ["TNB_PROFILE"])


@given(text=st.text(max_size=40), tail=st.text(alphabet="abc 0123.,§", max_size=30))
def test_serves_reads_the_serves_paragraph_or_nothing(text, tail):
    nb = {"cells": [{"cell_type": "markdown", "source": f"# T\n{text}\n**Serves:** 000 {tail}\n\nmore"}]}
    got = companion.serves(nb)
    assert got.startswith("000") and "\n" not in got


@pytest.fixture(scope="module")
def monkeypatch_session():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()
