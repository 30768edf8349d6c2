"""How an exercise checker compares a student's answer with the reference.

:func:`type_problem` looks at the *kind* of answer first (None, not a tensor, the meta device, another
device, a different dtype kind or a half-precision result, a tuple of the wrong length) and returns a
message for the first problem it finds. Only then does :func:`allclose` compare values, in float64 on the
CPU.
"""

__all__ = []  # what a notebook uses

import numbers

import torch

LOW_PRECISION = (torch.float16, torch.bfloat16)
#: Per kind of dtype: the article and what a result of another kind is told.
KINDS = {
    "bool": "a bool tensor|A mask is a bool tensor: compare (<, <=, ==) rather than multiply.",
    "integer": "an integer tensor|Token ids and counts are integers: keep them torch.long, do not divide or use "
    "floats.",
    "float": "a float tensor|Values are floats: did an integer input stay integer (use .float() or a float literal)?",
    "complex": "a complex tensor|",
}


def _kind(dtype: torch.dtype) -> str:
    if dtype == torch.bool:
        return "bool"
    return "complex" if dtype.is_complex else "float" if dtype.is_floating_point else "integer"


def is_number(x) -> bool:
    """A real number that is not a bool (``True`` is an ``int`` in Python, but never a count or a value)."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _name(x) -> str:
    return "None" if x is None else type(x).__name__


def tensor_problem(out, ref: torch.Tensor, what: str = "your result") -> str | None:
    """The first problem of ``out`` as an answer where ``ref`` is the reference tensor, else None."""
    if out is None:
        return f"{what} is None: is a `return` missing?"
    if is_number(out) and ref.numel() == 1:
        return None
    if not isinstance(out, torch.Tensor):
        return f"{what} should be a torch.Tensor, but it is a {_name(out)}."
    if out.is_complex() and not ref.is_complex():
        return f"{what} is a complex tensor: the answer is real. Which step made it complex?"
    if out.device.type != ref.device.type:
        return (
            f"{what} is on device '{out.device.type}', the inputs are on '{ref.device.type}': create new "
            "tensors with device=<input>.device."
        )
    if _kind(out.dtype) != _kind(ref.dtype):
        kind, advice = KINDS[_kind(ref.dtype)].split("|")
        return f"{what} has dtype {out.dtype}, but the answer is {kind} ({ref.dtype}). {advice}".rstrip()
    if out.dtype in LOW_PRECISION and ref.dtype not in LOW_PRECISION:
        return (
            f"{what} is {out.dtype}, the inputs are {ref.dtype}: keep the inputs' dtype (half precision "
            "loses the digits the check needs)."
        )
    return None


def type_problem(out, ref, what: str = "your result") -> str | None:
    """The first problem with the *kind* of ``out`` (structure, type, device, dtype), else None."""
    if isinstance(ref, (tuple, list)):
        kind = "list" if isinstance(ref, list) else "tuple"
        if not isinstance(out, (tuple, list)):
            return f"return a {kind} of {len(ref)} results; {what} is a {_name(out)}."
        if len(out) != len(ref):
            return f"return a {kind} of {len(ref)} results; yours has {len(out)}."
        for i, (o, r) in enumerate(zip(out, ref)):
            problem = type_problem(o, r, f"item {i} of your result")
            if problem:
                return problem
        return None
    if isinstance(ref, torch.Tensor):
        return tensor_problem(out, ref, what)
    if is_number(ref):
        if out is None:
            return f"{what} is None: is a `return` missing?"
        if isinstance(out, torch.Tensor) and out.numel() == 1 and out.device.type != "meta":
            return None
        if not is_number(out):
            return f"{what} should be one number, but it is a {_name(out)}."
        return None
    if isinstance(ref, str) and not isinstance(out, str):
        return f"{what} should be a string, but it is a {_name(out)}."
    if ref is None and out is not None:
        return f"{what} should be None, but it is a {_name(out)}."
    return None


def values_close(out, ref, atol: float, rtol: float) -> bool:
    """Equal shapes, NaN in the same places, and close values elsewhere (compared in float64 on the CPU)."""
    a, b = (torch.as_tensor(x).detach().cpu() for x in (out, ref))
    a, b = (x if x.is_complex() else x.double() for x in (a, b))
    if a.numel() == 1 and b.numel() == 1:
        a, b = a.reshape(()), b.reshape(())
    if a.shape != b.shape or not torch.equal(a.isnan(), b.isnan()):
        return False
    return torch.allclose(a.nan_to_num(), b.nan_to_num(), atol=atol, rtol=rtol)


def allclose(out, ref, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """``out`` answers like ``ref``: same structure and kinds (:func:`type_problem`), values within tolerance."""
    try:
        if type_problem(out, ref) is not None:
            return False
        if isinstance(ref, (tuple, list)):
            return all(allclose(o, r, atol, rtol) for o, r in zip(out, ref))
        if isinstance(ref, torch.Tensor) or is_number(ref):
            return values_close(out, ref, atol, rtol)
        return out == ref if isinstance(ref, str) else ref is None and out is None
    except Exception:  # a failing conversion: not a match
        return False


def equal(out, ref) -> bool:
    """Exact equality with the same checks as :func:`allclose` (masks, ids, counts)."""
    return allclose(out, ref, atol=0.0, rtol=0.0)


def shapes(x) -> list:
    """The shapes of the tensors in ``x`` (type names for anything else), for messages."""
    if isinstance(x, (tuple, list)):
        return [s for item in x for s in shapes(item)]
    return [tuple(x.shape) if isinstance(x, torch.Tensor) else _name(x)]


def has_nan(x) -> bool:
    if isinstance(x, (tuple, list)):
        return any(has_nan(item) for item in x)
    return isinstance(x, torch.Tensor) and x.is_floating_point() and not x.is_meta and bool(x.isnan().any())


def on_meta(x) -> bool:
    """Whether ``x`` holds a tensor on the meta device (shapes without values)."""
    if isinstance(x, dict):
        x = list(x.values())
    if isinstance(x, (tuple, list)):
        return any(on_meta(item) for item in x)
    return isinstance(x, torch.Tensor) and x.device.type == "meta"


def same_answers(out, ref) -> bool:
    """Answers stated in a dict against the right ones: words ignore case and surrounding spaces."""
    norm = lambda a: a.strip().lower() if isinstance(a, str) else bool(a) if isinstance(a, (bool, torch.Tensor)) else a
    return isinstance(out, dict) and all(norm(out[k]) == norm(ref[k]) for k in ref)
