"""Checks for notebook check cells.

Each check asserts, then prints a line that is identical on every device, thread
count and profile: the *expected* value (never the float torch computed), shapes,
booleans or exact integers. A failing check raises ``AssertionError`` with both values.
"""

import math

import torch


def _round(v):
    """Nested lists of floats -> the same with 6 significant digits (float32 noise hidden)."""
    return [_round(u) for u in v] if isinstance(v, list) else float(f"{v:.6g}")


def _fmt(x) -> str:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.numel() == 1:
            return _fmt(x.item())
        if x.numel() > 16:
            return f"tensor of shape {tuple(x.shape)}"
        return str(_round(x.tolist())) if x.is_floating_point() else str(x.tolist())
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def check_close(name: str, actual, expected, atol: float = 1e-6, rtol: float = 0.0) -> None:
    """Assert ``|actual - expected| <= atol + rtol*|expected|`` elementwise and print the expected value.

    ``actual``/``expected``: numbers or tensors of the same shape.
    """
    a = (
        torch.as_tensor(actual, dtype=torch.float64).detach().cpu()
        if not isinstance(actual, torch.Tensor)
        else actual.detach().to("cpu", torch.float64)
    )
    e = (
        torch.as_tensor(expected, dtype=torch.float64).detach().cpu()
        if not isinstance(expected, torch.Tensor)
        else expected.detach().to("cpu", torch.float64)
    )
    if a.shape != e.shape:
        raise AssertionError(f"{name}: shape {tuple(a.shape)} != expected shape {tuple(e.shape)}")
    if not torch.isfinite(a).all():
        raise AssertionError(f"{name}: contains NaN or inf: {_fmt(a)}")
    err = (a - e).abs().max().item() if a.numel() else 0.0
    tol = atol + rtol * (e.abs().max().item() if e.numel() else 0.0)
    if not err <= tol:
        raise AssertionError(f"{name}: got {_fmt(a)}, expected {_fmt(e)} (max error {err:.3g} > tol {tol:.3g})")
    tol_txt = f"atol={atol:g}" + (f", rtol={rtol:g}" if rtol else "")
    print(f"✓ {name} ≈ {_fmt(expected)}  ({tol_txt})")


def check_equal(name: str, actual, expected) -> None:
    """Assert exact equality (ints, bools, shapes, strings, integer tensors) and print the value."""
    if isinstance(actual, torch.Size):
        actual = tuple(actual)
    if isinstance(expected, torch.Size):
        expected = tuple(expected)
    if isinstance(actual, torch.Tensor) or isinstance(expected, torch.Tensor):
        ok = torch.equal(torch.as_tensor(actual).cpu(), torch.as_tensor(expected).cpu())
    else:
        ok = actual == expected
    if not ok:
        raise AssertionError(f"{name}: got {_fmt(actual)}, expected {_fmt(expected)}")
    print(f"✓ {name} = {_fmt(expected)}")


def check_true(name: str, condition) -> None:
    """Assert that ``condition`` (a bool or a 1-element bool tensor) holds, and print it."""
    if isinstance(condition, torch.Tensor):
        condition = bool(condition.all().item())
    if not condition:
        raise AssertionError(f"{name}: expected True, got False")
    print(f"✓ {name}: True")


def check_raises(exc_type, must_contain: str, fn, *args, **kwargs) -> str:
    """Assert that ``fn(*args, **kwargs)`` raises ``exc_type`` whose message contains ``must_contain``.

    Prints the error's type and message (the message must not contain floats
    computed at run time) and returns the message.
    """
    try:
        fn(*args, **kwargs)
    except exc_type as err:
        msg = str(err)
        if must_contain.lower() not in msg.lower():
            raise AssertionError(
                f"{exc_type.__name__} raised, but its message {msg!r} does not mention {must_contain!r}"
            ) from err
        print(f"✓ {exc_type.__name__}: {msg}")
        return msg
    raise AssertionError(f"expected {exc_type.__name__} mentioning {must_contain!r}, but nothing was raised")


def isclose(a: float, b: float, atol: float = 1e-6) -> bool:
    """Plain float comparison for use inside asserts."""
    return math.isclose(a, b, abs_tol=atol, rel_tol=0.0)
