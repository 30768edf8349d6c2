"""Tripwires: while a checker runs a student's answer, ready-made implementations refuse to run for it.

An exercise that asks for a from-scratch version lists the objects that would answer it ready-made
(``Exercise.ready_made``: dotted names such as ``"torch.nn.functional.scaled_dot_product_attention"`` or
``"transformer_nb.core.block.EncoderLayer.forward"``). :func:`tripwires` swaps each of them, for the duration of one
call of the student's code, for a tripwire that raises :class:`Refused` when the student's code calls it,
directly or through a thin wrapper. The package's own modules still call them freely (the package's
multi-head attention may use PyTorch's attention inside): a call counts as the student's when the first
caller outside PyTorch is not one of the package's modules, or is one of the checker's own (the student
passed the ready-made function itself). Everything is restored afterwards, always.

Python functions are swapped in place (their ``__code__``), so every reference to them trips, however it
was imported; built-in functions are replaced on their module and wherever the student's code holds them.
:data:`ALWAYS` lists what no answer may call at all: the checker's timer, tracing, and ending the process.
"""

import contextlib
import importlib
import inspect
import sys
import types
from pathlib import Path

import torch

PACKAGE = Path(__file__).resolve().parents[1]  # transformer_nb/
CHECKERS = Path(__file__).resolve().parent  # transformer_nb/exercises/ (solutions/ excepted)
TORCH = Path(torch.__file__).resolve().parent

#: What no answer may call: the checker's timer and signals, tracing, ending the process.
ALWAYS = tuple(f"{m}.{f}" for m in ("signal", "_signal") for f in ("signal", "setitimer", "alarm", "pthread_sigmask"))
ALWAYS += (
    "sys.settrace",
    "sys.setprofile",
    "os._exit",
    "os.kill",
)


class Refused(BaseException):
    """Raised inside a student's answer that calls a ready-made implementation or the checker's machinery (a
    BaseException, so that ``except Exception`` in the answer cannot swallow it)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name

    @property
    def message(self) -> str:
        if self.name in ALWAYS:
            return (
                f"your answer calls {self.name}, which belongs to the checker (its time limit) or ends the "
                "process: refused."
            )
        return (
            f"your answer calls {self.name}, a ready-made implementation of what this exercise asks you to "
            "write yourself: refused. Write it from scratch with tensor operations (matmul, softmax, "
            "view/transpose, ...)."
        )


def _resolve(dotted: str):
    """``(owner, attribute, object)`` for a dotted name (a module attribute or a class attribute)."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:-1]:
            owner = getattr(owner, attr)
        return owner, parts[-1], inspect.getattr_static(owner, parts[-1])
    raise ValueError(f"cannot resolve {dotted!r}")


def _exists(dotted: str) -> bool:
    """Whether this platform has ``dotted`` (``signal.setitimer`` is missing on Windows)."""
    module, attr = dotted.rsplit(".", 1)
    return hasattr(importlib.import_module(module), attr)


def _students_call() -> bool:
    """True if the first caller outside PyTorch and this module is the student's code, or the checker's (the
    student passed the ready-made object itself, or a class that inherits its ``forward``)."""
    frame = sys._getframe(2)
    while frame is not None:
        path = Path(frame.f_code.co_filename)
        if not (path.is_relative_to(TORCH) or path == Path(__file__).resolve()):
            inside = path.is_relative_to(PACKAGE)
            checker = path.parent == CHECKERS
            return not inside or checker
        frame = frame.f_back
    return True


_ORIGINALS: dict = {}  # dotted name -> a callable copy of the original, while its tripwire is set


def _tripped(name: str, args: tuple, kwargs: dict):
    if _students_call():
        raise Refused(name)
    return _ORIGINALS[name](*args, **kwargs)


def _trip_code(name: str, like: types.FunctionType) -> types.CodeType:
    """A code object that calls :func:`_tripped` (no free variables, so it fits any plain function)."""
    ns: dict = {}
    exec(
        f"def {like.__name__}(*args, **kwargs):\n"
        f"    return __import__({__name__!r}, fromlist=['_'])._tripped({name!r}, args, kwargs)\n",
        ns,
    )
    return ns[like.__name__].__code__


def _copy(fn: types.FunctionType) -> types.FunctionType:
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy


def _namespaces(answer) -> list:
    """The global namespaces of the student's code: of ``answer`` itself, or of a class's methods."""
    fns = [answer]
    if isinstance(answer, type):
        fns = [v for c in answer.__mro__ if c is not object for v in vars(c).values()]
    out = []
    for fn in fns:
        fn = getattr(fn, "__func__", fn)
        g = getattr(fn, "__globals__", None)
        if isinstance(g, dict) and all(g is not o for o in out):
            out.append(g)
    return out


@contextlib.contextmanager
def tripwires(names, answer=None):
    """While inside: every object in ``names`` (and :data:`ALWAYS`) refuses calls from the student's code.
    ``answer``: the student's function or class, whose module-level names are swapped too."""
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"names must be a tuple of dotted names such as ('torch.softmax',), got {names!r}")
    undo = []
    try:
        for name in (*names, *(n for n in ALWAYS if _exists(n))):
            owner, attr, obj = _resolve(name)
            fn = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
            if isinstance(fn, types.FunctionType) and not fn.__code__.co_freevars:
                _ORIGINALS[name], code = _copy(fn), fn.__code__
                fn.__code__ = _trip_code(name, fn)
                undo.append(lambda fn=fn, code=code: setattr(fn, "__code__", code))
                continue
            _ORIGINALS[name] = obj

            def wire(*args, _name=name, **kwargs):
                return _tripped(_name, args, kwargs)

            setattr(owner, attr, wire)
            undo.append(lambda owner=owner, attr=attr, obj=obj: setattr(owner, attr, obj))
            for g in _namespaces(answer) if answer is not None else ():
                for key, value in list(g.items()):
                    if value is obj:
                        g[key] = wire
                        undo.append(lambda g=g, key=key, obj=obj: g.__setitem__(key, obj))
        yield
    finally:
        for step in reversed(undo):
            step()
        _ORIGINALS.clear()


# --------------------------------------------------------------------------- what each kind of exercise refuses

#: Scaled dot-product attention, ready-made (Exercise 8.5).
ATTENTION = (
    "torch.nn.functional.scaled_dot_product_attention",
    "torch._C._nn.scaled_dot_product_attention",
    "torch.nn.functional.multi_head_attention_forward",
    "torch.nn.MultiheadAttention.forward",
    "transformer_nb.core.attention.scaled_dot_product_attention",
    "transformer_nb.core.multihead.MultiHeadAttention.forward",
)
#: Multi-head attention, ready-made (Exercise 8.6): the above, and splitting and merging heads.
MULTIHEAD = (*ATTENTION, "transformer_nb.core.multihead.split_heads", "transformer_nb.core.multihead.merge_heads")
#: A Transformer block or stack, ready-made (Exercise 8.8).
BLOCK = (
    "torch.nn.TransformerEncoderLayer.forward",
    "torch.nn.TransformerEncoder.forward",
    "torch.nn.TransformerDecoderLayer.forward",
    "torch.nn.Transformer.forward",
    "transformer_nb.core.block.EncoderLayer.forward",
    "transformer_nb.core.block.DecoderLayer.forward",
    "transformer_nb.core.stack.Encoder.forward",
)
#: Rotary positions, ready-made (Exercise 8.10).
ROPE = (
    "transformer_nb.core.rope.apply_rope",
    "transformer_nb.reference.rope_matrix",
    "transformer_nb.core.rope.RoPE.forward",
)
