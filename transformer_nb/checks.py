"""Checks for notebook check cells.

Each check asserts, then prints a line that is identical on every device, thread
count and profile: the *expected* value (never the float torch computed), shapes,
booleans or exact integers. A failing check raises ``AssertionError`` with both values.
"""

import numpy as np
import torch

from transformer_nb.core.utils import as_real, plain_tensor


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


def _as_float64(arg: str, x) -> torch.Tensor:
    """A number, nested list or tensor as a float64 CPU tensor; a clear TypeError for anything else."""
    plain_tensor(arg, x)
    if isinstance(x, torch.Tensor):
        if x.device.type == "meta":
            raise TypeError(f"{arg} is on the meta device: it has shapes but no values to compare")
        if x.is_complex():
            raise TypeError(f"{arg} is complex ({x.dtype}); compare its .real and .imag separately")
        return x.detach().to("cpu", torch.float64)
    if isinstance(x, complex):
        raise TypeError(f"{arg} is complex; compare its .real and .imag separately")
    try:
        return torch.as_tensor(x, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"{arg} must be a number, a list of numbers or a tensor, got {type(x).__name__}") from None


def check_close(name: str, actual, expected, atol: float = 1e-6, rtol: float = 0.0) -> None:
    """Assert ``|actual - expected| <= atol + rtol*|expected|`` elementwise and print the expected value.

    ``actual``/``expected``: numbers or real tensors of the same shape; ``atol``, ``rtol``: finite, >= 0.
    """
    atol, rtol = as_real("atol", atol), as_real("rtol", rtol)
    if atol < 0 or rtol < 0:
        raise ValueError(f"atol and rtol must be >= 0, got atol={atol}, rtol={rtol}")
    a, e = _as_float64("actual", actual), _as_float64("expected", expected)
    if a.shape != e.shape:
        raise AssertionError(f"{name}: shape {tuple(a.shape)} != expected shape {tuple(e.shape)}")
    if not torch.isfinite(a).all():
        raise AssertionError(f"{name}: contains NaN or inf: {_fmt(a)}")
    if not torch.isfinite(e).all():
        raise ValueError(f"expected contains NaN or inf: {_fmt(e)}; a tolerance check needs finite values")
    err = (a - e).abs().max().item() if a.numel() else 0.0
    tol = atol + rtol * (e.abs().max().item() if e.numel() else 0.0)
    if not err <= tol:
        raise AssertionError(f"{name}: got {_fmt(a)}, expected {_fmt(e)} (max error {err:.3g} > tol {tol:.3g})")
    tol_txt = f"atol={atol:g}" + (f", rtol={rtol:g}" if rtol else "")
    print(f"✓ {name} ≈ {_fmt(expected)}  ({tol_txt})")


def check_equal(name: str, actual, expected) -> None:
    """Assert exact equality (ints, bools, shapes, strings, integer tensors) and print the value."""
    actual, expected = (tuple(x) if isinstance(x, torch.Size) else x for x in (actual, expected))
    arrays = (torch.Tensor, np.ndarray)
    if isinstance(actual, arrays) or isinstance(expected, arrays):
        for arg, x in (("actual", actual), ("expected", expected)):
            plain_tensor(arg, x)
            if isinstance(x, torch.Tensor) and x.device.type == "meta":
                raise TypeError(f"{arg} is on the meta device: it has shapes but no values to compare")
        try:
            a, e = torch.as_tensor(actual).cpu(), torch.as_tensor(expected).cpu()
            ok = (a.dtype == torch.bool) == (e.dtype == torch.bool) and torch.equal(a, e)  # True is not 1
        except (TypeError, ValueError, RuntimeError):
            ok = False
    else:
        ok = actual == expected
        if not isinstance(ok, bool):
            raise TypeError(f"comparing {type(actual).__name__} with == gave {type(ok).__name__}, not True/False")
        ok = ok and _same_bools(actual, expected)
    if not ok:
        raise AssertionError(f"{name}: got {_fmt(actual)}, expected {_fmt(expected)}")
    print(f"✓ {name} = {_fmt(expected)}")


def _same_bools(a, b) -> bool:
    """Are the bools of ``a`` and ``b`` (nested lists, tuples, dict values) in the same places? ``1 == True``
    in Python, but a check that expects ``True`` must not pass on ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return all(_same_bools(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return all(_same_bools(a[k], b[k]) for k in a if k in b)
    return True


def check_true(name: str, condition) -> None:
    """Assert that ``condition`` (a bool, or a non-empty bool tensor: all of it) holds, and print it."""
    plain_tensor("condition", condition)
    if isinstance(condition, torch.Tensor):
        if condition.dtype != torch.bool:
            raise TypeError(f"condition must be a bool tensor, got dtype {condition.dtype}; compare first")
        if condition.numel() == 0:
            raise ValueError("condition is an empty tensor: there is nothing to be true")
        condition = bool(condition.all().item())
    elif isinstance(condition, np.bool_):
        condition = bool(condition)
    if not isinstance(condition, bool):
        raise TypeError(
            f"condition must be True/False or a bool tensor, got {type(condition).__name__}; "
            f"a non-empty list is always truthy"
        )
    if not condition:
        raise AssertionError(f"{name}: expected True, got False")
    print(f"✓ {name}: True")


def check_raises(exc_type, must_contain: str, fn, *args, **kwargs) -> str:
    """Assert that ``fn(*args, **kwargs)`` raises ``exc_type`` whose message contains ``must_contain``.

    Prints the error's type and message (the message must not contain floats
    computed at run time) and returns the message. Another exception type is an
    ``AssertionError`` that names both.
    """
    if not (isinstance(exc_type, type) and issubclass(exc_type, BaseException)):
        raise TypeError(f"exc_type must be an exception class such as ValueError, got {exc_type!r}")
    if not isinstance(must_contain, str):
        raise TypeError(f"must_contain must be a str, got {type(must_contain).__name__}")
    if not callable(fn):
        raise TypeError(f"fn must be callable (it is called to raise), got {type(fn).__name__}")
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
    except Exception as err:
        raise AssertionError(f"expected {exc_type.__name__}, but {type(err).__name__} was raised: {err}") from err
    raise AssertionError(f"expected {exc_type.__name__} mentioning {must_contain!r}, but nothing was raised")
