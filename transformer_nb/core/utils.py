"""What the core modules share: argument checks (``as_int``, ``as_real``, ``as_device``, ``check_memory``),
tensor checks at the public boundaries, and ``INNER``, which lets inner layers trust their callers.

The notebooks' environment (``setup``, the profile, seeding, environment variables) is in ``env.py``.
"""

import math
import numbers
import operator
import os
import threading

import torch


def available_devices() -> list[str]:
    """The device names that work here: ``cpu``, then ``cuda`` and ``cuda:N`` per GPU, then ``mps``."""
    names = ["cpu"]
    if torch.cuda.is_available():
        names += ["cuda"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        names.append("mps")
    return names


# --------------------------------------------------------------------------- argument checks (used by every module)


def as_int(name: str, value, minimum: int = 0) -> int:
    """``value`` as a Python int ``>= minimum``; else a ``TypeError`` / ``ValueError`` that names ``name``.

    Accepts ints, numpy ints and 0-d integer tensors; refuses bools, floats (even ``2.0``) and strings.
    """
    if isinstance(value, bool) or (isinstance(value, torch.Tensor) and value.dtype == torch.bool):
        raise TypeError(f"{name} must be an int, got {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}") from None
    if n < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {n}")
    return n


def as_real(name: str, value, positive: bool = False) -> float:
    """``value`` as a finite Python float (``> 0`` if ``positive``); bools, strings and NaN/inf are refused."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.dtype != torch.bool:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    x = float(value)
    if not math.isfinite(x) or (positive and x <= 0):
        raise ValueError(f"{name} must be a finite{' positive' if positive else ''} number, got {value!r}")
    return x


def check_dropout(p) -> None:
    """``p`` must be a dropout probability: a real number in ``[0, 1)``."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < 1:
        raise ValueError(f"dropout is a probability in [0, 1), got {p!r}")


def as_device(name: str, device) -> torch.device | None:
    """``None``, or a ``torch.device`` that exists here (``meta`` included); else an error naming ``name``."""
    if device is None:
        return None
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"{name} must be a device name such as 'cpu', got {type(device).__name__}")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ValueError(f"{name} must be one of {', '.join([*available_devices(), 'meta'])}, got {device!r}") from None
    if dev.type not in ("cpu", "meta") and str(dev) not in available_devices():
        raise ValueError(
            f"{name}={str(dev)!r} is not on this machine; the devices here: {', '.join(available_devices())}"
        )
    return dev


def memory_of(device=None) -> int | None:
    """Bytes of memory of ``device`` (CPU: physical RAM; CUDA: the GPU's), or None if unknown/unbounded (meta)."""
    dev = as_device("device", device) or torch.device("cpu")
    if dev.type == "cuda":
        return torch.cuda.get_device_properties(dev).total_memory
    if dev.type == "cpu" and hasattr(os, "sysconf"):
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            return None
    return None


def check_memory(what: str, n_bytes: int, device=None) -> None:
    """``ValueError`` naming ``what`` when a tensor of ``n_bytes`` cannot fit in ``device``'s memory."""
    limit = memory_of(device)
    if limit is not None and n_bytes > limit:
        raise ValueError(
            f"{what} would need {n_bytes / 2**30:.3g} GiB, more than the {limit / 2**30:.3g} GiB of memory "
            f"of {torch.device(device or 'cpu')}; use smaller sizes"
        )


# --------------------------------------------------------------------------- tensor checks (public boundaries)


def plain_tensor(name: str, x) -> None:
    """Refuse a subclass of ``torch.Tensor`` (``nn.Parameter`` aside): its ``__torch_function__`` can answer
    every comparison, ``==``, ``allclose``, ``isfinite``, ..., with whatever it likes, so a result that rests on
    comparing it proves nothing. ``x.as_subclass(torch.Tensor)`` is the plain tensor underneath."""
    if isinstance(x, torch.Tensor) and type(x) not in (torch.Tensor, torch.nn.Parameter):
        raise TypeError(
            f"{name} is a {type(x).__name__}, a subclass of torch.Tensor that may redefine comparisons; "
            f"pass a plain tensor ({name}.as_subclass(torch.Tensor))"
        )


def is_int_tensor(x) -> bool:
    """Whether ``x`` is a tensor of integers (ids, lengths, counts): bool, float and complex tensors are not."""
    return isinstance(x, torch.Tensor) and not (x.is_floating_point() or x.is_complex() or x.dtype == torch.bool)


def check_device(name: str, x: torch.Tensor, device: torch.device) -> None:
    """``x`` must be on ``device`` (a module's); a module on the meta device takes inputs from anywhere.

    Meta inputs into a real module would otherwise compute on memory that was never written, or fail
    deep inside torch."""
    if device.type != "meta" and x.device != device:
        why = "it has shapes but no values" if x.is_meta else f"move it with .to({str(device)!r})"
        raise ValueError(f"{name} is on the {x.device} device but the model is on {device}: {why}")


def check_like(name: str, x: torch.Tensor, weight: torch.Tensor) -> None:
    """``x`` must be on ``weight``'s device and, outside autocast, have its dtype (a float16 input into
    float32 weights is a ``TypeError`` here, not torch's "mat1 and mat2 must have the same dtype")."""
    check_device(name, x, weight.device)
    if x.dtype != weight.dtype and not torch.is_autocast_enabled(x.device.type):
        raise TypeError(
            f"{name} has dtype {x.dtype} but the model's weights are {weight.dtype}; convert one of them "
            f"(x.to({weight.dtype}) or model.to({x.dtype})) or run under torch.autocast"
        )


class _Inner(threading.local):
    """Inner layers trust their callers. A module's ``forward`` checks its inputs only when
    ``not INNER.depth`` (it is the outermost checking call) and runs its body ``with INNER:``, so
    the modules it calls skip the checks its own already made. One count per thread."""

    depth = 0

    def __enter__(self):
        self.depth += 1

    def __exit__(self, *exc):
        self.depth -= 1


INNER = _Inner()
